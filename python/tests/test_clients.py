"""One interface, two transports: the abstract client and batch env, and the one module that chooses a client."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dgenv
from dgenv import _clients, inproc
from dgenv.base import BatchEnv, EnvClient


def test_the_transports_are_siblings_under_the_abstract_classes() -> None:
    assert issubclass(dgenv.Client, EnvClient) and issubclass(dgenv.LocalClient, EnvClient)
    assert issubclass(dgenv.HttpBatchEnv, BatchEnv) and issubclass(dgenv.LocalBatchEnv, BatchEnv)
    # Neither transport is the other's subclass: nothing is inherited and then skipped.
    assert not issubclass(dgenv.LocalBatchEnv, dgenv.HttpBatchEnv) and not issubclass(dgenv.HttpBatchEnv, dgenv.LocalBatchEnv)
    assert not issubclass(dgenv.LocalClient, dgenv.Client)
    assert dgenv.BatchEnv is BatchEnv and dgenv.EnvClient is EnvClient
    for abstract in (EnvClient, BatchEnv):
        with pytest.raises(TypeError, match="abstract"):
            abstract()  # type: ignore[abstract]


def test_each_abstract_method_is_implemented_with_the_same_parameters() -> None:
    for base, impls in ((BatchEnv, (dgenv.HttpBatchEnv, dgenv.LocalBatchEnv)), (EnvClient, (dgenv.Client, dgenv.LocalClient))):
        for name in sorted(base.__abstractmethods__):
            want = list(inspect.signature(getattr(base, name)).parameters)
            for cls in impls:
                got = list(inspect.signature(getattr(cls, name)).parameters)
                # a transport may add keywords at the end (LocalClient.make's workers, Client.make's recover)
                assert got[: len(want)] == want, f"{cls.__name__}.{name}{got}, want {want} first"


@pytest.mark.parametrize("transport", ["inproc", "http"])
def test_make_gives_a_batch_env_of_either_transport_with_the_same_batches(transport: str, server: dgenv.LocalServer) -> None:
    kw = dict(players=4, num_envs=6, seed=5, obs_dtype=None)
    env = _clients.make(transport=transport, client=server if transport == "http" else None, **kw)
    ref = dgenv.local().make(**kw)
    try:
        assert isinstance(env, dgenv.BatchEnv)
        assert isinstance(env, dgenv.LocalBatchEnv if transport == "inproc" else dgenv.HttpBatchEnv)
        a, b = env.reset(), ref.reset()
        np.testing.assert_array_equal(a.obs, b.obs)
        acts = np.argmax(b.mask, axis=1)
        a, b = env.step(acts), ref.step(acts)
        np.testing.assert_array_equal(a.obs, b.obs)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        assert env.section(a.obs, "hand").shape == (6, 90)
    finally:
        env.close()
        ref.close()
    assert env.closed


def test_dgenv_make_and_inproc_make_are_the_one_chooser() -> None:
    assert dgenv.make is inproc.make is _clients.make
    with pytest.raises(ValueError, match="transport 'pigeon'"):
        dgenv.make(transport="pigeon", num_envs=1)


def test_resolve_client_follows_its_table(server: dgenv.LocalServer, monkeypatch) -> None:
    local = dgenv.local()
    assert _clients.resolve_client(local) is local
    assert _clients.resolve_client(server) is server
    assert isinstance(_clients.resolve_client("inproc"), dgenv.LocalClient)
    c, owned = _clients.own_client(server.url)
    try:
        assert isinstance(c, dgenv.Client) and c.url == server.url and owned
    finally:
        c.close()
    monkeypatch.setattr(_clients, "_default", server)
    assert _clients.resolve_client(None) is server
    assert _clients.own_client(None) == (server, False)
    with pytest.raises(TypeError, match="want a dgenv client"):
        _clients.resolve_client(42)  # type: ignore[arg-type]
    assert _clients.is_inproc("inproc") and _clients.is_inproc(local)
    assert not _clients.is_inproc(server) and not _clients.is_inproc(None) and not _clients.is_inproc(server.url)


def test_a_client_game_lookup_is_shared(server: dgenv.LocalServer) -> None:
    for c in (server, dgenv.local()):
        assert c.game("duel").name == "duel"
        with pytest.raises(KeyError, match="no game 'nope'"):
            c.game("nope")


@pytest.mark.parametrize("client", ["inproc", "server"])
def test_the_gymnasium_vector_env_refuses_float_actions_on_either_transport(client: str, server: dgenv.LocalServer) -> None:
    """The adapter checks actions with the shared helper, not a transport's private method."""
    from dgenv.gymnasium import VectorEnv

    venv = VectorEnv(4, client="inproc" if client == "inproc" else server, opponent="random", seed=1)
    try:
        venv.reset(seed=1)
        with pytest.raises(ValueError, match="want integers"):
            venv.step(np.zeros(4, dtype=np.float64))
    finally:
        venv.close()
