"""Wire format: tensors as ``{"dtype", "shape", "data"}`` maps inside msgpack bodies.

A tensor travels as one binary blob in C order with a little-endian numpy dtype
string (API.md, "Transport"). Decoding is ``np.frombuffer`` on that blob: no
per-element parsing. Nothing here does I/O.
"""

from __future__ import annotations

import base64
from typing import Any, Mapping

import msgpack
import numpy as np

__all__ = ["encode_tensor", "decode_tensor", "is_tensor", "pack", "unpack", "MSGPACK"]

MSGPACK = "application/msgpack"
JSON = "application/json"

# The dtype strings the wire uses for each numpy kind; numpy accepts all of them.
_TENSOR_KEYS = frozenset(("dtype", "shape", "data"))


def encode_tensor(a: np.ndarray) -> dict[str, Any]:
    """Return the wire map for array ``a`` (made little-endian and C-contiguous)."""
    a = np.asarray(a)
    dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    a = np.ascontiguousarray(a, dtype=dt)
    return {"dtype": dt.str, "shape": list(a.shape), "data": a.tobytes()}


def is_tensor(v: Any) -> bool:
    """True when ``v`` looks like a wire tensor map."""
    return isinstance(v, Mapping) and len(v) == 3 and _TENSOR_KEYS.issuperset(v.keys())


def decode_tensor(v: Mapping[str, Any]) -> np.ndarray:
    """Turn a wire tensor map into a (read-only, zero-copy) numpy array.

    ``data`` may be bytes (msgpack) or a base64 string (JSON).
    """
    data = v["data"]
    if isinstance(data, str):
        data = base64.b64decode(data)
    dt = np.dtype(v["dtype"])
    shape = tuple(int(d) for d in v["shape"])
    a = np.frombuffer(data, dtype=dt)
    expected = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if a.size != expected:
        raise ValueError(f"tensor: {a.size} elements of {dt.str} for shape {list(shape)}")
    return a.reshape(shape)


def pack(obj: Any) -> bytes:
    """Serialise ``obj`` as msgpack (bytes stay binary)."""
    return msgpack.packb(obj, use_bin_type=True)


def unpack(data: bytes | bytearray | memoryview) -> Any:
    """Parse a msgpack body. Maps with non-string keys are allowed."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False)
