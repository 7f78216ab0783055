"""Wire format: tensors as ``{"dtype", "shape", "data"}`` maps inside msgpack bodies.

A tensor travels as one binary blob in C order with a little-endian numpy dtype
string (API.md, "Transport"). Decoding is ``np.frombuffer`` on that blob: no
per-element parsing. Nothing here does I/O.
"""

from __future__ import annotations

import base64
import math
from typing import Any, Mapping, Optional

import msgpack
import numpy as np

__all__ = [
    "encode_tensor",
    "decode_tensor",
    "is_tensor",
    "pack",
    "unpack",
    "unpack_views",
    "BatchLayout",
    "MSGPACK",
]

MSGPACK = "application/msgpack"
JSON = "application/json"

# The dtype strings the wire uses for each numpy kind; numpy accepts all of them.
_TENSOR_KEYS = frozenset(("dtype", "shape", "data"))


def encode_tensor(a: np.ndarray) -> dict[str, Any]:
    """Return the wire map for array ``a`` (made little-endian and C-contiguous)."""
    a = np.asarray(a)
    dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    a = np.ascontiguousarray(a, dtype=dt)
    # numpy spells one-byte types "|u1"; the wire contract spells every dtype
    # little-endian ("<u1"), as the server expects.
    code = "<" + dt.str[1:] if dt.str[0] == "|" and dt.kind in "biuf" else dt.str
    return {"dtype": code, "shape": list(a.shape), "data": a.tobytes()}


def is_tensor(v: Any) -> bool:
    """True when ``v`` looks like a wire tensor map."""
    return isinstance(v, Mapping) and len(v) == 3 and _TENSOR_KEYS.issuperset(v.keys())


_DTYPES: dict[str, np.dtype] = {}


def _dtype(s: str) -> np.dtype:
    dt = _DTYPES.get(s)
    if dt is None:
        dt = _DTYPES[s] = np.dtype(s)
    return dt


def decode_tensor(v: Mapping[str, Any]) -> np.ndarray:
    """Turn a wire tensor map into a zero-copy numpy array over its data.

    ``data`` may be bytes (msgpack), a memoryview, or a base64 string (JSON).
    """
    data = v["data"]
    if isinstance(data, str):
        data = base64.b64decode(data)
    dt = _dtype(v["dtype"])
    shape = tuple(int(d) for d in v["shape"])
    a = np.frombuffer(data, dtype=dt)
    expected = math.prod(shape)
    if a.size != expected:
        raise ValueError(f"tensor: {a.size} elements of {dt.str} for shape {list(shape)}")
    return a.reshape(shape)


def pack(obj: Any) -> bytes:
    """Serialise ``obj`` as msgpack (bytes stay binary)."""
    return msgpack.packb(obj, use_bin_type=True)


def unpack(data: bytes | bytearray | memoryview) -> Any:
    """Parse a msgpack body. Maps with non-string keys are allowed."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


_STRUCT: dict[Any, Any] = {}


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


class _Blob:
    """Where a bin value lies in the message (BatchLayout's learning pass)."""

    __slots__ = ("start", "end")

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


class _Int(_Blob):
    """Where an integer value of the top map lies (BatchLayout's learning pass)."""

    __slots__ = ()


class BatchLayout:
    """The byte layout of one session's reset/step answers, learned once.

    A session's answers always have the same keys, dtypes and shapes, so the
    msgpack bytes around the tensor blobs never change. ``learn`` parses one
    answer; ``decode`` then checks those framing bytes on each next answer and
    slices the blobs straight out of its buffer (no parse, no copy). Integer
    values of the top map (``seq``) are read where they lie. An answer whose
    framing differs gets None, and the caller learns again.
    """

    def __init__(
        self,
        length: int,
        frame: list[tuple[int, int, bytes]],
        tensors: list[tuple[str, np.dtype, tuple[int, ...], int, int]],
        ints: Optional[list[tuple[str, int, int]]] = None,
    ):
        self.length = length
        self.frame = frame
        self.tensors = tensors
        self.ints = ints or []

    @classmethod
    def learn(cls, buf: Any) -> "BatchLayout":
        """Parse one answer (bytes-like) into a layout; ValueError if it is not a map of tensors."""
        mv = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
        blobs: list[_Blob] = []
        value, end = _parse(mv, 0, blobs)
        if end != len(mv) or not isinstance(value, dict):
            raise ValueError("not a batch answer")
        tensors = []
        ints = []
        for key, t in value.items():
            if isinstance(t, _Int):
                ints.append((str(key), t.start, t.end))
                continue
            if not (isinstance(t, dict) and isinstance(t.get("data"), _Blob)):
                raise ValueError(f"batch answer: {key!r} is not a tensor")
            dt = _dtype(t["dtype"])
            shape = tuple(int(x) for x in t["shape"])
            b = t["data"]
            if (b.end - b.start) != math.prod(shape) * dt.itemsize:
                raise ValueError(f"tensor {key!r}: {b.end - b.start} bytes for {list(shape)} of {dt.str}")
            tensors.append((str(key), dt, shape, b.start, b.end))
        frame = []
        pos = 0
        for b in sorted(blobs, key=lambda b: b.start):
            frame.append((pos, b.start, bytes(mv[pos : b.start])))
            pos = b.end
        frame.append((pos, len(mv), bytes(mv[pos:])))
        return cls(len(mv), frame, tensors, ints)

    def decode(self, buf: np.ndarray) -> Optional[dict[str, Any]]:
        """The tensors of answer ``buf`` (a uint8 array) as views, and its
        integers (``seq``) as ints, or None if its framing differs."""
        if buf.size != self.length:
            return None
        mv = buf.data
        for s, e, want in self.frame:
            if mv[s:e] != want:
                return None
        out: dict[str, Any] = {}
        for k, s, e in self.ints:
            v, end = _parse(mv, s)
            if end != e or not isinstance(v, int):
                return None
            out[k] = v
        for k, dt, shape, s, e in self.tensors:
            a = np.frombuffer(buf, dtype=dt, count=(e - s) // dt.itemsize, offset=s).reshape(shape)
            # msgpack does not align blobs: the few multi-byte tensors (rewards,
            # scores, episode: N*P values at most) get an aligned copy.
            out[k] = a if a.flags.aligned else a.copy()
        return out


def _parse(mv: memoryview, i: int, blobs: Optional[list] = None) -> tuple[Any, int]:
    c = mv[i]
    i += 1
    if c <= 0x7F:
        return c, i
    if 0x80 <= c <= 0x8F:
        return _map(mv, i, c & 0x0F, blobs)
    if 0x90 <= c <= 0x9F:
        return _array(mv, i, c & 0x0F, blobs)
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
        if blobs is not None:
            b = _Blob(i, i + n)
            blobs.append(b)
            return b, i + n
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
        return _array(mv, i + w, int.from_bytes(mv[i : i + w], "big"), blobs)
    if c in (0xDE, 0xDF):
        w = 2 if c == 0xDE else 4
        return _map(mv, i + w, int.from_bytes(mv[i : i + w], "big"), blobs)
    raise ValueError(f"msgpack: unsupported type byte 0x{c:02x}")


def _map(mv: memoryview, i: int, n: int, blobs: Optional[list] = None) -> tuple[dict, int]:
    d = {}
    for _ in range(n):
        k, i = _parse(mv, i, blobs)
        start = i
        v, i = _parse(mv, i, blobs)
        if blobs is not None and k == "seq" and type(v) is int:
            # A batch's seq changes from answer to answer: it is read where
            # it lies, not framed.
            b = _Int(start, i)
            blobs.append(b)
            v = b
        d[k] = v
    return d, i


def _array(mv: memoryview, i: int, n: int, blobs: Optional[list] = None) -> tuple[list, int]:
    out = []
    for _ in range(n):
        v, i = _parse(mv, i, blobs)
        out.append(v)
    return out, i
