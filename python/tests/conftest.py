"""Fixtures: one real server for the whole run, started with dgenv.serve().

The server binary is the repository's bin/dgserver (the Makefile builds it;
serve() rebuilds it when missing or stale), or $DGENV_SERVER.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest

import dgenv


@pytest.fixture(scope="session")
def server() -> Iterator[dgenv.LocalServer]:
    """A server on a free loopback port, stopped after the last test."""
    with dgenv.serve(timeout=120) as srv:
        yield srv


@pytest.fixture
def client(server: dgenv.LocalServer) -> dgenv.Client:
    """A client of the shared server."""
    return server


@pytest.fixture
def make(server: dgenv.LocalServer):
    """``make(**kw)`` like Client.make; every env made is closed after the test."""
    made: list[dgenv.BatchEnv] = []

    def _make(**kw) -> dgenv.BatchEnv:
        e = server.make(**kw)
        made.append(e)
        return e

    yield _make
    for e in made:
        e.close()


def random_legal(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``mask`` ([N, 90] bool), vectorised."""
    return np.argmax(rng.random(mask.shape) * mask, axis=1)


def random_positions(players: int, n: int, steps: int, seed: int, rng_seed: int):
    """``(spec, obs, mask)``: the positions of ``n`` card games of ``players`` seats, ``steps``
    random legal moves each (float32 ``[n * steps, D]`` and bool ``[n * steps, 90]``), in process."""
    with dgenv.local() as c:
        env = c.make(players=players, num_envs=n, seed=seed)
        spec = env.spec
        b = env.reset()
        rng = np.random.default_rng(rng_seed)
        obs, mask = [], []
        for _ in range(steps):
            obs.append(np.array(b.obs, np.float32))
            mask.append(np.array(b.mask, bool))
            b = env.step(random_legal(b.mask, rng))
        env.close()
    return spec, np.concatenate(obs), np.concatenate(mask)


def served_act(pdir, name: str, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(logits [n, 90], actions [n])`` of the policy ``name`` of the directory ``pdir``, as a
    server started on it answers ``POST /v1/policies/<name>/act`` for card-game positions."""
    from dgenv import _wire

    with dgenv.serve(args=["--policies", str(pdir)]) as srv:
        ans = srv._request("POST", f"/v1/policies/{name}/act",
                           {"obs": _wire.encode_tensor(np.ascontiguousarray(obs.astype(np.uint8))),
                            "mask": _wire.encode_tensor(np.ascontiguousarray(mask.view(np.uint8))), "logits": True})
    logits = _wire.decode_tensor(ans["logits"]).astype(np.float32).reshape(len(obs), 90)
    return logits, np.asarray(_wire.decode_tensor(ans["actions"])).reshape(-1)
