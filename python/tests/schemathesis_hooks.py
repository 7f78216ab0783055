"""schemathesis hooks for the dgenv API (loaded through SCHEMATHESIS_HOOKS).

The document offers msgpack beside JSON for every body; these teach
schemathesis to send msgpack requests and to check msgpack answers against
the same schemas. A tensor's ``data`` is a bin value in msgpack and base64 in
JSON, so a bin value is compared as the base64 string the schema describes.
"""

from __future__ import annotations

import base64
from typing import Any

import msgpack
import schemathesis

MSGPACK = "application/msgpack"


def _as_msgpack(v: Any, key: str = "") -> Any:
    """A JSON value as the msgpack a client would send: a tensor's base64
    ``data`` as bin; an integer msgpack cannot hold (beyond 64 bits) as a
    float, which the server refuses just the same."""
    if isinstance(v, dict):
        return {k: _as_msgpack(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [_as_msgpack(x) for x in v]
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and not -(1 << 63) <= v < (1 << 64):
        return float(v)
    if key == "data" and isinstance(v, str):
        try:
            return base64.b64decode(v, validate=True)
        except ValueError:
            return v
    return v


@schemathesis.serializer(MSGPACK)
def to_msgpack(ctx: Any, value: Any) -> bytes:
    return msgpack.packb(_as_msgpack(value), use_bin_type=True)


def _as_json(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, dict):
        return {k: _as_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_as_json(x) for x in v]
    return v


@schemathesis.deserializer(MSGPACK)
def from_msgpack(ctx: Any, response: Any) -> Any:
    return _as_json(msgpack.unpackb(response.content, raw=False))
