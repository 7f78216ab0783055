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

__all__ = ["encode_tensor", "decode_tensor", "is_tensor", "pack", "unpack", "unpack_views", "MSGPACK"]

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


_STRUCT = {}


def _fmt(code: str):
    import struct

    st = _STRUCT.get(code)
    if st is None:
        st = _STRUCT[code] = struct.Struct(code)
    return st


def unpack_views(buf: memoryview) -> Any:
    """Parse a msgpack body whose ``bin`` values stay zero-copy views into ``buf``.

    Used for reset/step answers: their few dozen tokens are walked in Python
    while every tensor blob (megabytes at large N) is left where it was read,
    so ``np.frombuffer`` on it copies nothing. Anything it does not expect
    (ext types) raises ValueError; the caller then falls back to :func:`unpack`.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    value, end = _parse(mv, 0)
    if end != len(mv):
        raise ValueError(f"msgpack: {len(mv) - end} trailing bytes")
    return value


def _parse(mv: memoryview, i: int) -> tuple[Any, int]:
    c = mv[i]
    i += 1
    if c <= 0x7F:
        return c, i
    if 0x80 <= c <= 0x8F:
        return _map(mv, i, c & 0x0F)
    if 0x90 <= c <= 0x9F:
        return _array(mv, i, c & 0x0F)
    if 0xA0 <= c <= 0xBF:
        n = c & 0x1F
        return str(mv[i : i + n], "utf-8"), i + n
    if c >= 0xE0:
        return c - 0x100, i
    if c == 0xC0:
        return None, i
    if c == 0xC2:
        return False, i
    if c == 0xC3:
        return True, i
    if c in (0xC4, 0xC5, 0xC6):  # bin 8/16/32: a view, no copy
        w = 1 << (c - 0xC4)
        n = int.from_bytes(mv[i : i + w], "big")
        i += w
        return mv[i : i + n], i + n
    if c in (0xD9, 0xDA, 0xDB):  # str 8/16/32
        w = 1 << (c - 0xD9)
        n = int.from_bytes(mv[i : i + w], "big")
        i += w
        return str(mv[i : i + n], "utf-8"), i + n
    if c in (0xCC, 0xCD, 0xCE, 0xCF):  # uint 8..64
        w = 1 << (c - 0xCC)
        return int.from_bytes(mv[i : i + w], "big"), i + w
    if c in (0xD0, 0xD1, 0xD2, 0xD3):  # int 8..64
        w = 1 << (c - 0xD0)
        return int.from_bytes(mv[i : i + w], "big", signed=True), i + w
    if c == 0xCA:
        return _fmt(">f").unpack_from(mv, i)[0], i + 4
    if c == 0xCB:
        return _fmt(">d").unpack_from(mv, i)[0], i + 8
    if c in (0xDC, 0xDD):
        w = 2 if c == 0xDC else 4
        return _array(mv, i + w, int.from_bytes(mv[i : i + w], "big"))
    if c in (0xDE, 0xDF):
        w = 2 if c == 0xDE else 4
        return _map(mv, i + w, int.from_bytes(mv[i : i + w], "big"))
    raise ValueError(f"msgpack: unsupported type byte 0x{c:02x}")


def _map(mv: memoryview, i: int, n: int) -> tuple[dict, int]:
    d = {}
    for _ in range(n):
        k, i = _parse(mv, i)
        v, i = _parse(mv, i)
        d[k] = v
    return d, i


def _array(mv: memoryview, i: int, n: int) -> tuple[list, int]:
    out = []
    for _ in range(n):
        v, i = _parse(mv, i)
        out.append(v)
    return out, i
