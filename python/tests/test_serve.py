"""dgenv.serve(): start, readiness, configuration, and nothing left behind."""

from __future__ import annotations

import os
import socket
import stat
from urllib.parse import urlsplit

import numpy as np
import pytest

import dgenv
from dgenv._transport import unix_path as _unix_path
from dgenv.server import _parse_addr, find_server


def _refused(url: str) -> bool:
    u = urlsplit(url)
    try:
        socket.create_connection((u.hostname, u.port), timeout=2).close()
        return False
    except OSError:
        return True


def test_served_server_is_gone_after_the_with_block() -> None:
    with dgenv.serve() as srv:
        pid, url = srv.pid, srv.url
        assert srv.running and srv.ready()
        env = srv.make(num_envs=2, seed=1)
        env.reset()
    assert not srv.running
    assert srv.process.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped, not a zombie
    assert _refused(url)


def test_unix_socket_transport_plays_and_cleans_up() -> None:
    with dgenv.serve(transport="unix") as srv:
        assert srv.url.startswith("unix:/")
        path = srv.url[len("unix:"):]
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        env = srv.make(num_envs=3, seed=5)
        b = env.reset()
        again = dgenv.connect(srv.url)  # a second client on the same socket
        env2 = again.make(num_envs=3, seed=5)
        b2 = env2.reset()
        np.testing.assert_array_equal(b.obs, b2.obs)
        acts = np.argmax(b.mask, axis=1)
        s1, s2 = env.step(acts), env2.step(acts)
        np.testing.assert_array_equal(s1.obs, s2.obs)
        env.close(), env2.close(), again.close()
    assert not os.path.exists(os.path.dirname(path)), "the socket's directory is removed"
    with pytest.raises(dgenv.ServerUnavailable):
        dgenv.connect(srv.url, timeout=2)


def test_unix_urls_are_parsed() -> None:
    assert _unix_path("unix:/tmp/a.sock") == "/tmp/a.sock"
    assert _unix_path("unix:///tmp/a.sock") == "/tmp/a.sock"
    assert _unix_path("unix:rel/a.sock") == "rel/a.sock"
    assert _unix_path("http://127.0.0.1:80") is None
    with pytest.raises(ValueError):
        _unix_path("unix:")
    with pytest.raises(ValueError):
        dgenv.serve(transport="carrier-pigeon")
    assert _parse_addr("listening on unix:/tmp/dgenv-x/s.sock\n") == "unix:/tmp/dgenv-x/s.sock"


def test_stop_is_idempotent() -> None:
    srv = dgenv.serve()
    srv.stop()
    srv.stop()
    assert not srv.running


def test_token_is_required_and_sent() -> None:
    with dgenv.serve(token="s3cret") as srv:
        env = srv.make(num_envs=1)  # the client sends the token
        env.reset()
        env.close()
        anon = dgenv.connect(srv.url)  # health needs no token
        with pytest.raises(dgenv.Unauthorized) as ei:
            anon.make(num_envs=1)
        assert ei.value.status == 401
        anon.close()


def test_session_limit_is_a_limit_error_with_retry_after() -> None:
    with dgenv.serve(env={"DGSERVER_LIMITS_MAX_SESSIONS": "1"}) as srv:
        keep = srv.make(num_envs=1)
        with pytest.raises(dgenv.LimitError) as ei:
            srv.make(num_envs=1)
        assert ei.value.status == 429 and ei.value.retry_after is not None and ei.value.retry_after > 0
        keep.close()
        srv.make(num_envs=1).close()  # the slot is free again


def test_bad_configuration_is_a_start_error() -> None:
    with pytest.raises(dgenv.ServerStartError):
        dgenv.serve(env={"DGSERVER_LIMITS_MAX_SESSIONS": "-5"}, timeout=30)


def test_missing_binary_is_a_start_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DGENV_SERVER", "/nonexistent/dgserver")
    with pytest.raises(dgenv.ServerStartError):
        find_server()


def test_address_line_is_parsed() -> None:
    assert _parse_addr("listening on http://127.0.0.1:41234\n") == "http://127.0.0.1:41234"
    assert _parse_addr("listening on 127.0.0.1:5") == "http://127.0.0.1:5"
    assert _parse_addr('time=... level=INFO msg="starting"') is None


def test_one_binary_finder_serves_dgserver_and_dgeval(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dgenv.errors import ServerStartError
    from dgenv.evaluate import find_dgeval
    from dgenv.server import find_binary, find_repo

    repo = find_repo()
    assert repo is not None
    monkeypatch.delenv("DGENV_SERVER", raising=False)
    monkeypatch.delenv("DGENV_DGEVAL", raising=False)
    assert find_binary("dgeval", build=False, path=False) == repo / "bin" / "dgeval" == find_dgeval(build=False)
    assert find_server(build=False, path=False) == find_binary("dgserver", build=False, path=False)
    fake = tmp_path / "dgeval"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("DGENV_DGEVAL", str(fake))
    assert find_dgeval() == fake == find_binary("dgeval")
    monkeypatch.setenv("DGENV_DGEVAL", str(tmp_path / "missing"))
    with pytest.raises(ServerStartError, match="DGENV_DGEVAL"):
        find_binary("dgeval")
    assert find_dgeval() is None
    with pytest.raises(ServerStartError, match="does not exist"):
        find_binary("dgeval", tmp_path / "nope")
