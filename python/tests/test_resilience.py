"""Retries and restarts: nothing applied twice, nothing stuck, the run goes on.

A small TCP proxy between the client and a real server cuts a chosen request
at every point (before it reaches the server, half-way through its body, after
the server answered but before the client got the answer, half-way through the
answer). The client re-sends it with the same ``seq`` (or ``request_id``), and
the test checks against the server itself that the env advanced exactly once
and that the batch is the one an uncut twin session got. A second test kills
the server with SIGKILL in the middle of a run, starts a new one on the same
address, and checks that the env re-creates its session and goes on with the
games in flight marked truncated.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from typing import Iterator, Optional
from urllib.parse import urlsplit

import numpy as np
import pytest

import dgenv
from dgenv.client import Batch

from conftest import random_legal

PHASES = ["before_request", "mid_request", "after_request", "mid_answer"]
STALL = 1.5  # seconds the "stall_answer" phase holds an answer before dropping it


def _read_head(f) -> bytes:
    """The head of an HTTP message (through the blank line); b"" at EOF."""
    lines = []
    while True:
        line = f.readline(65537)
        if not line:
            return b""
        lines.append(line)
        if line in (b"\r\n", b"\n"):
            return b"".join(lines)


def _length(head: bytes) -> int:
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return int(m.group(1)) if m else 0


class CutProxy:
    """Forwards HTTP/1.1 connections to ``upstream``, cutting armed requests.

    ``arm(substring, phase)`` makes the next request whose request line
    contains ``substring`` fail at ``phase``: ``before_request`` (closed
    before a byte reaches the server), ``mid_request`` (half its body sent,
    then closed), ``after_request`` (the server's whole answer read, then
    both connections closed without passing it on) or ``mid_answer`` (half
    the answer passed on, then closed).
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.url = f"http://127.0.0.1:{self.lsock.getsockname()[1]}"
        self._lock = threading.Lock()
        self._armed: list[tuple[str, str]] = []
        self.fired: list[tuple[str, str]] = []
        self.requests: list[str] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, match: str, phase: str) -> None:
        assert phase in PHASES or phase == "stall_answer"
        with self._lock:
            self._armed.append((match, phase))

    def _take(self, line: str) -> Optional[str]:
        with self._lock:
            self.requests.append(line)
            for i, (m, ph) in enumerate(self._armed):
                if m in line:
                    del self._armed[i]
                    self.fired.append((line, ph))
                    return ph
        return None

    def _accept(self) -> None:
        while not self._closed:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c: socket.socket) -> None:
        s = socket.create_connection(self.upstream)
        cf, sf = c.makefile("rb"), s.makefile("rb")
        try:
            while True:
                head = _read_head(cf)
                if not head:
                    return
                body = cf.read(_length(head))
                phase = self._take(head.split(b"\r\n", 1)[0].decode("latin-1"))
                if phase == "before_request":
                    return
                if phase == "mid_request":
                    s.sendall(head + body[: len(body) // 2])
                    time.sleep(0.05)
                    return
                s.sendall(head + body)
                rhead = _read_head(sf)
                if not rhead:
                    return
                rbody = sf.read(_length(rhead))
                if phase == "after_request":
                    return
                if phase == "stall_answer":  # longer than the client's timeout
                    time.sleep(STALL)
                    return
                if phase == "mid_answer":
                    c.sendall(rhead + rbody[: len(rbody) // 2])
                    return
                c.sendall(rhead + rbody)
        except OSError:
            return
        finally:
            for x in (cf, sf, c, s):
                try:
                    x.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._closed = True
        self.lsock.close()


@pytest.fixture(scope="module")
def server() -> Iterator[dgenv.LocalServer]:
    """A server of this module's own (the tests count its sessions)."""
    with dgenv.serve(timeout=120) as srv:
        yield srv


@pytest.fixture
def proxy(server: dgenv.LocalServer) -> Iterator[CutProxy]:
    host, port = server.url.rsplit("//", 1)[1].rsplit(":", 1)
    p = CutProxy((host, int(port)))
    yield p
    p.close()


def session_seq(server: dgenv.LocalServer, session: str) -> int:
    """The session's seq as the server reports it (GET /v1/sessions/{id})."""
    return int(server._request("GET", f"/v1/sessions/{session}", session_route=True)["seq"])


def sessions_active(server: dgenv.LocalServer) -> float:
    text = server._request("GET", "/metrics")
    if isinstance(text, (bytes, bytearray)):
        text = text.decode()
    m = re.search(r"(?m)^dgserver_sessions_active (\S+)$", text)
    assert m, text[:500]
    return float(m.group(1))


def assert_same_batch(a: Batch, b: Batch) -> None:
    for name in ("obs", "mask", "player", "rewards", "done", "scores", "episode", "truncated"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


SETTINGS = dict(players=4, num_envs=16, seed=11, learner_seats=[0], opponent="heuristic", deals=1, obs_dtype=None)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("route", ["step", "reset"])
def test_a_request_cut_anywhere_is_applied_once(server: dgenv.LocalServer, proxy: CutProxy, route: str, phase: str) -> None:
    via = dgenv.Client(proxy.url, retry_timeout=20)
    env = via.make(**SETTINGS)
    twin = server.make(**SETTINGS)  # the same games, never cut
    try:
        rng = np.random.default_rng(5)
        b, t = env.reset(seed=3), twin.reset(seed=3)
        for _ in range(7):  # into the game: some envs finish their deal meanwhile
            a = random_legal(b.mask, rng)
            b, t = env.step(a), twin.step(a)
        assert_same_batch(b, t)
        before = session_seq(server, env.session)
        assert before == env.seq == 8

        proxy.arm(f"/{env.session}/{route}", phase)
        a = random_legal(b.mask, rng)
        if route == "step":
            got, want = env.step(a), twin.step(a)
        else:
            got, want = env.reset(), twin.reset()
        assert proxy.fired == [(f"POST /v1/sessions/{env.session}/{route} HTTP/1.1", phase)]
        sent = [r for r in proxy.requests if f"/{route}" in r]
        assert len(sent) >= 2, f"the cut {route} was not sent again: {proxy.requests}"
        assert_same_batch(got, want)
        assert session_seq(server, env.session) == before + 1 == env.seq, "the env advanced more or less than once"

        # And the run goes on in step with the twin.
        for _ in range(5):
            a = random_legal(got.mask, rng)
            got, want = env.step(a), twin.step(a)
            assert_same_batch(got, want)
        assert session_seq(server, env.session) == before + 6
    finally:
        env.close()
        twin.close()
        via.close()


def test_a_step_whose_answer_times_out_is_applied_once(server: dgenv.LocalServer, proxy: CutProxy) -> None:
    via = dgenv.Client(proxy.url, timeout=STALL / 3, retry_timeout=20)
    env = via.make(**SETTINGS)
    twin = server.make(**SETTINGS)
    try:
        rng = np.random.default_rng(8)
        b, t = env.reset(seed=4), twin.reset(seed=4)
        a = random_legal(b.mask, rng)
        proxy.arm(f"/{env.session}/step", "stall_answer")
        t0 = time.monotonic()
        got, want = env.step(a), twin.step(a)
        assert time.monotonic() - t0 < STALL * 10
        assert proxy.fired and proxy.fired[0][1] == "stall_answer"
        assert_same_batch(got, want)
        assert session_seq(server, env.session) == 2 == env.seq
    finally:
        env.close()
        twin.close()
        via.close()


@pytest.mark.parametrize("phase", PHASES)
def test_a_create_cut_anywhere_makes_one_session(server: dgenv.LocalServer, proxy: CutProxy, phase: str) -> None:
    via = dgenv.Client(proxy.url, retry_timeout=20)
    n0 = sessions_active(server)
    proxy.arm("POST /v1/sessions ", phase)
    env = via.make(**SETTINGS)
    try:
        assert [ph for _, ph in proxy.fired] == [phase]
        assert sum(r.startswith("POST /v1/sessions ") for r in proxy.requests) >= 2
        assert sessions_active(server) == n0 + 1, "a lost create answer left an orphan session"
        b = env.reset(seed=1)
        assert b.obs.shape == (16, env.obs_size) and env.seq == 1
    finally:
        env.close()
        via.close()
    assert sessions_active(server) == n0


def test_a_stale_seq_is_refused_and_changes_nothing(server: dgenv.LocalServer) -> None:
    env = server.make(**SETTINGS)
    try:
        b = env.reset(seed=2)
        env.step(np.argmax(b.mask, axis=1))
        env.seq = 0  # pretend to have lost more than one answer
        with pytest.raises(dgenv.StaleSeqError) as ei:
            env.step(np.argmax(env.last.mask, axis=1))
        assert ei.value.status == 409 and ei.value.seq == 2
        assert session_seq(server, env.session) == 2
    finally:
        env.close()


def test_without_retries_a_cut_answer_raises(server: dgenv.LocalServer, proxy: CutProxy) -> None:
    via = dgenv.Client(proxy.url, retry_timeout=0)
    env = via.make(**SETTINGS)
    try:
        b = env.reset(seed=3)
        proxy.arm(f"/{env.session}/step", "mid_answer")
        with pytest.raises(dgenv.ServerUnavailable):
            env.step(np.argmax(b.mask, axis=1))
    finally:
        env.close()
        via.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("via", ["batch", "gymnasium"])
def test_a_server_killed_and_restarted_mid_run(via: str) -> None:
    port = _free_port()
    addr = ["--addr", f"127.0.0.1:{port}"]
    first = dgenv.serve(args=addr, timeout=120)
    second: list[dgenv.LocalServer] = []
    client = dgenv.connect(first.url, retry_timeout=30)
    try:
        if via == "gymnasium":
            from dgenv.gymnasium import VectorEnv

            venv = VectorEnv(8, client, players=3, opponent="heuristic", seed=4, deals=1, obs_dtype=None)
            env = venv.env
            _, info = venv.reset(seed=4)
            mask = info["action_mask"]
        else:
            env = client.make(players=3, num_envs=8, seed=4, learner_seats=[0], opponent="heuristic", deals=1, obs_dtype=None)
            mask = env.reset(seed=4).mask
        rng = np.random.default_rng(1)
        old = env.session

        def step(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            a = random_legal(mask, rng)
            if via == "gymnasium":
                _, _, term, trunc, info = venv.step(a)
                return info["action_mask"], term, trunc
            b = env.step(a)
            return b.mask, b.done, b.truncated

        for _ in range(6):
            mask, done, trunc = step(mask)
            assert not trunc.any()
        first.process.kill()  # SIGKILL: every session is lost
        first.process.wait()

        # The step goes to the dead server from another thread (the server is
        # started from this one: its parent-death signal follows the thread
        # that started it).
        result: list = []

        def lost_step() -> None:
            try:
                result.append(step(mask))  # retried until the new server answers 404, then recovered
            except BaseException as e:
                result.append(e)

        t = threading.Thread(target=lost_step)
        t.start()
        time.sleep(0.5)  # the client meanwhile finds nothing listening, and retries
        second.append(dgenv.serve(args=addr, timeout=120))
        t.join(60)
        assert result and not isinstance(result[0], BaseException), result
        mask, done, trunc = result[0]
        assert trunc.all() and not done.any(), "the games in flight were not marked truncated"
        assert env.recoveries == 1 and env.session != old
        assert env.last.episode.sum() == 0 and env.seq == 1
        for _ in range(40):  # and the run goes on: games finish on the new server
            mask, done, trunc = step(mask)
            assert not trunc.any()
        assert env.last.episode.sum() > 0
        assert session_seq(second[0], env.session) == 41
    finally:
        client.close()
        first.stop()
        for s in second:
            s.stop()


def test_recover_false_raises_on_a_lost_session(server: dgenv.LocalServer) -> None:
    env = server.make(**SETTINGS, recover=False)
    b = env.reset(seed=1)
    server._request("DELETE", f"/v1/sessions/{env.session}", session_route=True)
    with pytest.raises(dgenv.SessionNotFound):
        env.step(np.argmax(b.mask, axis=1))
    env.close()


def test_async_batches_survive_cut_answers(server: dgenv.LocalServer, proxy: CutProxy) -> None:
    """AsyncBatchEnv (step_async/step_wait on two sessions) retries the same way."""
    via = dgenv.Client(proxy.url, retry_timeout=20)
    kw = dict(players=3, learner_seats=[0], opponent="random", deals=1, obs_dtype=None)
    pool = dgenv.AsyncBatchEnv(via, 16, 8, seed=21, **kw)
    twins = [server.make(num_envs=8, seed=21 + k, **kw) for k in range(2)]
    try:
        rng = np.random.default_rng(2)
        pool.async_reset(seed=9)
        want = {k: t.reset(seed=9 + k) for k, t in enumerate(twins)}
        phases = iter(PHASES * 2)
        for i in range(24):
            ids, b = pool.recv()
            k = int(ids[0]) // 8
            assert_same_batch(b, want[k])
            a = random_legal(b.mask, rng)
            if i % 3 == 1:
                proxy.arm(f"/{pool.envs[k].session}/step", next(phases, "mid_answer"))
            pool.send(a, ids)
            want[k] = twins[k].step(a)
        for _ in range(2):
            ids, b = pool.recv()
            assert_same_batch(b, want[int(ids[0]) // 8])
        assert len(proxy.fired) == 8
        for k in range(2):
            assert session_seq(server, pool.envs[k].session) == session_seq(server, twins[k].session) == 13
    finally:
        pool.close()
        for t in twins:
            t.close()
        via.close()


def test_an_env_goes_on_when_its_idle_connection_is_closed_for_another() -> None:
    """A full server (http.max_conns) closes idle connections for new ones
    (docs/api.md, Connections): the env's own is among them, and its next
    step reconnects and is applied once."""
    with dgenv.serve(env={"DGSERVER_HTTP_MAX_CONNS": "3", "DGSERVER_CONNS_MAX_PER_ADDR": "3"}) as srv:
        env = srv.make(num_envs=2, seed=1, opponent="random", learner_seats=[0])
        b = env.reset(seed=1)
        u = urlsplit(srv.url)
        socks = []
        try:
            for _ in range(3):  # newer connections with requests that passed auth
                s = socket.create_connection((u.hostname, u.port), timeout=10)
                socks.append(s)
                s.sendall(b"GET /v1/games HTTP/1.1\r\nHost: localhost\r\n\r\n")
                assert s.recv(65536).startswith(b"HTTP/1.1 200")  # a timeout here: the server made it wait
            seq = env.seq
            for _ in range(3):
                b = env.step(b.mask.argmax(axis=1))
            assert env.seq == seq + 3
        finally:
            for s in socks:
                s.close()
