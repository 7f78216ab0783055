"""Tensor encoding and error mapping, without a server."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from dgenv import _wire
from dgenv.errors import (
    BadRequest,
    BusyError,
    IllegalActionError,
    LimitError,
    NotFound,
    ServerError,
    SessionNotFound,
    TooLarge,
    Unauthorized,
    Unavailable,
    error_from_response,
)


@pytest.mark.parametrize("dtype", ["<u1", "<i1", "<i2", "<i4", "<i8", "<f4", ">i4"])
def test_tensor_round_trips_through_msgpack(dtype: str) -> None:
    a = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    t = _wire.unpack(_wire.pack({"x": _wire.encode_tensor(a)}))["x"]
    assert t["dtype"].startswith("<")
    b = _wire.decode_tensor(t)
    assert b.shape == a.shape
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("dtype, want", [(np.uint8, "<u1"), (np.int8, "<i1"), (np.bool_, "<b1"), (np.int16, "<i2"), (">f4", "<f4")])
def test_encoded_dtype_is_spelled_little_endian(dtype, want: str) -> None:
    t = _wire.encode_tensor(np.zeros(3, dtype=dtype))
    assert t["dtype"] == want
    assert _wire.decode_tensor(t).dtype == np.dtype(want)


def test_decode_accepts_json_base64() -> None:
    a = np.array([[1, 2], [3, 4]], dtype="<i4")
    t = {"dtype": "<i4", "shape": [2, 2], "data": base64.b64encode(a.tobytes()).decode()}
    np.testing.assert_array_equal(_wire.decode_tensor(t), a)


def test_decode_is_zero_copy() -> None:
    data = np.arange(6, dtype="<f4").tobytes()
    b = _wire.decode_tensor({"dtype": "<f4", "shape": [6], "data": data})
    assert not b.flags.writeable  # a view of the answer's bytes


def test_decode_rejects_wrong_size() -> None:
    with pytest.raises(ValueError, match="shape"):
        _wire.decode_tensor({"dtype": "<i4", "shape": [3], "data": b"\0" * 8})


@pytest.mark.parametrize(
    "status, code, cls",
    [
        (400, "bad_request", BadRequest),
        (401, "unauthorized", Unauthorized),
        (404, "not_found", NotFound),
        (409, "busy", BusyError),
        (413, "too_large", TooLarge),
        (422, "illegal_action", IllegalActionError),
        (429, "limit", LimitError),
        (503, "unavailable", Unavailable),
        (418, "teapot", ServerError),
    ],
)
def test_error_codes_map_to_exceptions(status: int, code: str, cls: type) -> None:
    e = error_from_response(status, {"error": {"code": code, "message": "m", "x": 1}})
    assert type(e) is cls
    assert (e.status, e.code, e.message, e.details) == (status, code, "m", {"x": 1})


def test_illegal_action_error_carries_env_action_legal() -> None:
    body = {"error": {"code": "illegal_action", "message": "m", "env": 3, "action": 89, "legal": [1, 2]}}
    e = error_from_response(422, body)
    assert isinstance(e, IllegalActionError)
    assert (e.env, e.action, e.legal) == (3, 89, [1, 2])


def test_limit_error_reads_retry_after() -> None:
    e = error_from_response(429, {"error": {"code": "limit", "message": "m"}}, retry_after="2")
    assert isinstance(e, LimitError) and e.retry_after == 2.0


def test_not_found_on_session_route_is_session_not_found() -> None:
    e = error_from_response(404, {"error": {"code": "not_found", "message": "m"}}, session_route=True)
    assert isinstance(e, SessionNotFound) and isinstance(e, NotFound)


def test_non_api_error_body_still_maps_by_status() -> None:
    e = error_from_response(413, "request entity too large")
    assert isinstance(e, TooLarge)


def test_zero_copy_parser_agrees_with_msgpack() -> None:
    obj = {
        "obs": _wire.encode_tensor(np.arange(70000, dtype=np.uint8)),
        "n": [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32, -1, -32, -33, -129, -40000, -(2**40)],
        "f": [1.5, -0.25],
        "s": ["", "x" * 31, "y" * 32, "z" * 300, "ü"],
        "m": {"a": None, "b": True, "c": False, "d": list(range(20))},
        "big": {str(i): i for i in range(20)},
    }
    data = _wire.pack(obj)
    got = _wire.unpack_views(memoryview(data))
    want = _wire.unpack(data)
    assert isinstance(got["obs"]["data"], memoryview)  # a view, not a copy
    got["obs"]["data"] = bytes(got["obs"]["data"])
    assert got == want


def test_zero_copy_parser_rejects_trailing_bytes() -> None:
    with pytest.raises(ValueError):
        _wire.unpack_views(memoryview(_wire.pack({"a": 1}) + b"\x00"))


def _answer(n: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return _wire.pack({
        "obs": _wire.encode_tensor(rng.integers(0, 3, (n, 7)).astype("<u1")),
        "rewards": _wire.encode_tensor(rng.random((n, 4)).astype("<f4")),
        "episode": _wire.encode_tensor(np.arange(n, dtype="<i8")),
    })


def test_batch_layout_slices_every_later_answer() -> None:
    first = np.frombuffer(_answer(5, 0), np.uint8).copy()
    layout = _wire.BatchLayout.learn(first)
    for seed in (1, 2):
        data = _answer(5, seed)
        got = layout.decode(np.frombuffer(data, np.uint8).copy())
        want = _wire.unpack(data)
        assert got is not None and list(got) == list(want)
        for k, t in want.items():
            np.testing.assert_array_equal(got[k], _wire.decode_tensor(t))


def test_batch_layout_refuses_a_different_frame() -> None:
    layout = _wire.BatchLayout.learn(np.frombuffer(_answer(5), np.uint8).copy())
    assert layout.decode(np.frombuffer(_answer(6), np.uint8).copy()) is None  # other size
    other = _wire.pack({"obs": _wire.encode_tensor(np.zeros((5, 7), "<u1")),
                        "rewardz": _wire.encode_tensor(np.zeros((5, 4), "<f4")),  # same length, other key
                        "episode": _wire.encode_tensor(np.zeros(5, "<i8"))})
    assert len(other) == layout.length
    assert layout.decode(np.frombuffer(other, np.uint8).copy()) is None
    with pytest.raises(ValueError):
        _wire.BatchLayout.learn(np.frombuffer(_wire.pack({"a": 1}), np.uint8).copy())
