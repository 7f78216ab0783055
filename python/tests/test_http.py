"""The HTTP/1.1 exchange (hand-framed, and http.client's), against canned answers from a local socket.

The real server answers with Content-Length; these cover the framings it may
also use (chunked bodies, a body that runs to the connection's end, a closed
keep-alive connection), which the real-server tests cannot force.
"""

from __future__ import annotations

import socket
import threading
from typing import Iterator

import numpy as np
import pytest

from dgenv import _wire
from dgenv._transport import FastHTTP as _FastHTTP
from dgenv._transport import StdlibHTTP
from dgenv.errors import BadRequest, ServerUnavailable


def _serve(answers: list[bytes]) -> tuple[str, threading.Thread]:
    """A one-connection-at-a-time server that reads a request, sends the next canned answer.

    An answer of b"" closes the connection without answering.
    """
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    port = ls.getsockname()[1]

    def run() -> None:
        todo = list(answers)
        while todo:
            c, _ = ls.accept()
            f = c.makefile("rb")
            while todo:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    ch = f.read(1)
                    if not ch:
                        break
                    head += ch
                if not head:
                    break
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                f.read(n)
                a = todo.pop(0)
                if not a:
                    break
                c.sendall(a)
                if b"Connection: close" in a:
                    break
            f.close()
            c.close()
        ls.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return f"http://127.0.0.1:{port}", t


def _msgpack_answer(obj, status: str = "200 OK", extra: str = "") -> bytes:
    body = _wire.pack(obj)
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/msgpack\r\nContent-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def _chunked(obj) -> bytes:
    body = _wire.pack(obj)
    parts = [body[i : i + 7] for i in range(0, len(body), 7)]
    out = b"HTTP/1.1 200 OK\r\nContent-Type: application/msgpack\r\nTransfer-Encoding: chunked\r\n\r\n"
    for p in parts:
        out += f"{len(p):x}\r\n".encode() + p + b"\r\n"
    return out + b"0\r\n\r\n"


@pytest.fixture(params=[_FastHTTP, StdlibHTTP], ids=["fast", "stdlib"])
def canned(request) -> Iterator:
    """Both framings (the default, and DGENV_HTTP=stdlib's) share one connection and retry layer."""
    threads = []

    def make(answers):
        url, t = _serve(answers)
        threads.append(t)
        return request.param(url, None, 5)

    yield make
    for t in threads:
        t.join(5)


def test_content_length_chunked_and_until_close(canned) -> None:
    obj = {"a": list(range(40)), "s": "x" * 50}
    until_close = b"HTTP/1.1 200 OK\r\nContent-Type: application/msgpack\r\nConnection: close\r\n\r\n" + _wire.pack(obj)
    h = canned([_msgpack_answer(obj), _chunked(obj), until_close])
    assert h.request("GET", "/x") == obj
    assert h.request("GET", "/x") == obj  # same keep-alive connection
    assert h.request("GET", "/x") == obj
    assert h._conn is None  # closed after a body that ran to the end of the connection
    h.close()


def test_raw_answer_is_a_fresh_buffer(canned) -> None:
    t = {"obs": _wire.encode_tensor(np.arange(12, dtype=np.uint8).reshape(3, 4))}
    h = canned([_msgpack_answer(t), _msgpack_answer(t)])
    b1 = h.request("POST", "/step", {"actions": [1]}, raw=True)
    b2 = h.request("POST", "/step", {"actions": [1]}, raw=True)
    assert isinstance(b1, np.ndarray) and b1.dtype == np.uint8
    assert not np.shares_memory(b1, b2)
    assert _wire.unpack(b1.tobytes()) == _wire.unpack(_wire.pack(t))
    h.close()


def test_error_answers_raise_with_retry_after(canned) -> None:
    err = {"error": {"code": "bad_request", "message": "nope", "field": "x"}}
    h = canned([_msgpack_answer(err, "400 Bad Request")])
    with pytest.raises(BadRequest) as ei:
        h.request("POST", "/v1/sessions", {})
    assert ei.value.details == {"field": "x"}
    h.close()


def test_a_closed_idle_connection_is_reopened_once(canned) -> None:
    obj = {"ok": True}
    # First connection: answers once, then closes without answering the second request.
    h = canned([_msgpack_answer(obj), b"", _msgpack_answer(obj)])
    assert h.request("GET", "/x") == obj
    assert h.request("GET", "/x") == obj  # resent on a new connection
    h.close()


def test_nothing_listening_is_server_unavailable() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    h = _FastHTTP(f"http://127.0.0.1:{port}", None, 2)
    with pytest.raises(ServerUnavailable):
        h.request("GET", "/v1/healthz")


def test_stdlib_framing_plays_the_same_batches(server, monkeypatch: pytest.MonkeyPatch) -> None:
    import dgenv

    a = server.make(num_envs=4, seed=2, obs_dtype=None)
    monkeypatch.setenv("DGENV_HTTP", "stdlib")
    b = server.make(num_envs=4, seed=2, obs_dtype=None)
    try:
        assert isinstance(b._http, StdlibHTTP) and isinstance(a._http, _FastHTTP)
        x, y = a.reset(seed=2), b.reset(seed=2)
        rng = np.random.default_rng(0)
        for _ in range(30):
            for f in x._fields:
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
            act = np.argmax(rng.random(x.mask.shape) * x.mask, axis=1)
            x, y = a.step(act), b.step(act)
        with pytest.raises(dgenv.BadRequest, match="out of range"):
            b.step(np.full(4, 95))  # an error answer read through http.client's framing
        illegal = np.argmin(y.mask, axis=1)
        with pytest.raises(dgenv.IllegalActionError):
            b.step(illegal)
        b.step(np.argmax(y.mask, axis=1))  # nothing was stepped: the env goes on
    finally:
        a.close()
        b.close()
