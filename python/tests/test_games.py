"""The game registry through the Python client, and the proof that a game plugs in.

The test games are registered only in the test build (``-tags testgame``:
env/games registers them; ``make build`` makes ``bin/dgserver-testgame``,
``bin/dgeval-testgame`` and ``bin/libdgenv-testgame.so``): nothing in
python/src knows them. ``nim`` is listed, created, stepped (plain and
bit-packed), recorded and evaluated through the client, and played through
the Gymnasium and PettingZoo adapters, which size their spaces from its
spec. And every game the test build lists, named by nothing here, runs
through the in-process library (step for step equal to the server),
Gymnasium's and PettingZoo's own checkers and dgeval (every_game.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import dgenv
from dgenv import EnvOptions
from dgenv.server import find_repo

HEAP, TAKE = 10, 3


def _build_test(*args: str) -> Path:
    """Build a binary of the test build (``-tags testgame``) into the repository's bin/; returns its path."""
    repo = find_repo(Path(__file__).resolve().parent)
    assert repo is not None
    go = shutil.which("go")
    assert go is not None, "go is needed to build the test build"
    out = repo / "bin" / args[-2]
    # go build is incremental: a second build of unchanged sources takes a second or two.
    r = subprocess.run([go, "build", "-tags", "testgame", *args[:-2], "-o", str(out), args[-1]], cwd=repo,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


@pytest.fixture(scope="module")
def testgame_server() -> Iterator[dgenv.LocalServer]:
    """The dgserver of the test build, on a free loopback port."""
    with dgenv.serve(binary=_build_test("dgserver-testgame", "./cmd/dgserver"), timeout=120) as srv:
        yield srv


@pytest.fixture(scope="module")
def nim_server(testgame_server: dgenv.LocalServer) -> dgenv.LocalServer:
    """The test build's server, for the tests of the test game nim by name."""
    return testgame_server


def test_games_lists_the_card_game_first_with_its_parameters(server: dgenv.LocalServer) -> None:
    games = {g.name: g for g in server.games()}
    dg = games["david_goliath"]
    assert dg.players == [3, 4, 5, 6] and dg.num_actions == 90 and dg.obs.size == 874
    assert (dg.param("players").default, dg.param("players").min, dg.param("players").max) == (4, 3, 6)
    assert server.game().name == "david_goliath"
    assert "nim" not in games  # only the test build serves it
    with pytest.raises(KeyError):
        server.game("nim")


def test_make_takes_a_game_by_name_or_with_its_params(server: dgenv.LocalServer) -> None:
    a = server.make(game="david_goliath", players=3, num_envs=2, seed=4)
    b = server.make(game={"name": "david_goliath", "players": 3}, num_envs=2, seed=4)
    c = server.make(players=3, num_envs=2, seed=4)
    try:
        assert a.spec.game == b.spec.game == c.spec.game == "david_goliath"
        assert a.spec.params == {"players": 3, "deals": 3, "first_dealer": 0}
        ba, bb, bc = a.reset(seed=4), b.reset(seed=4), c.reset(seed=4)
        np.testing.assert_array_equal(ba.obs, bb.obs)
        np.testing.assert_array_equal(ba.obs, bc.obs)
    finally:
        for e in (a, b, c):
            e.close()
    with pytest.raises(dgenv.BadRequest) as ei:
        server.make(game="no_such_game")
    assert ei.value.details.get("field") == "game.name"
    with pytest.raises(dgenv.BadRequest) as ei:
        server.make(game={"name": "david_goliath", "colours": 4})
    assert ei.value.details.get("field") == "game.colours"


def _optimal(heap: np.ndarray) -> np.ndarray:
    """Nim's winning move: leave a multiple of TAKE + 1 (take 1 when that is impossible); action k takes k + 1."""
    r = heap % (TAKE + 1)
    return np.where(r == 0, 0, r - 1)


def test_nim_is_listed_created_stepped_recorded_and_evaluated(nim_server: dgenv.LocalServer) -> None:
    nim = nim_server.game("nim")
    assert nim.players == [2, 3] and nim.num_actions == TAKE
    assert {p.name: p.default for p in nim.params} == {"players": 2, "heap": HEAP, "take": TAKE}
    assert "greedy" in nim.raw["bots"]

    n = 64
    env = nim_server.make(game="nim", num_envs=n, seed=1, learner_seats=[0], opponent="greedy", obs_dtype=None)
    try:
        assert env.spec.game == "nim" and env.num_actions == TAKE and env.players == 2
        heap_sec = env.spec.obs.section("heap")
        assert heap_sec.max == HEAP
        b = env.reset(seed=1)
        assert b.mask.shape == (n, TAKE)
        first = env.section(b.obs, "heap")[:, 0].astype(int)  # HEAP where the learner moves first
        assert set(first) <= {HEAP, HEAP - HEAP % (TAKE + 1)}
        won = np.full(n, -1)
        for _ in range(HEAP):
            heap = env.section(b.obs, "heap")[:, 0].astype(int)
            a = _optimal(heap)
            assert b.mask[np.arange(n), a].all()
            b = env.step(a)
            new = b.done & (won < 0)
            won[new] = b.scores[new, 0]
            if (won >= 0).all():
                break
        assert (won >= 0).all()
        # Evaluated: the first mover of a heap that is not a multiple of
        # TAKE + 1 wins against any play; the greedy bot plays optimally.
        np.testing.assert_array_equal(won, (first == HEAP).astype(int))
        rate = won.mean()
        assert 0 < rate < 1  # the seed decides who moves first: both happen in 64 games

        rec = env.record(0)["finished"]
        assert rec["game"] == {"name": "nim", "players": 2, "heap": HEAP, "take": TAKE}
        assert sum(x + 1 for x in rec["actions"]) == HEAP  # every stone taken, one action per move
        assert rec["returns"] == [float(won[0]), float(1 - won[0])]
        assert isinstance(rec["seed"], int)
    finally:
        env.close()


def test_nim_packed_batches_equal_plain_ones(nim_server: dgenv.LocalServer) -> None:
    plain = nim_server.make(game={"name": "nim", "players": 3, "heap": 20, "take": 5}, num_envs=16, seed=9)
    packed = nim_server.make(game={"name": "nim", "players": 3, "heap": 20, "take": 5}, num_envs=16, seed=9,
                             packing="bits")
    try:
        assert packed.spec.obs.packed is not None and plain.num_actions == 5 and plain.players == 3
        rng = np.random.default_rng(0)
        p, q = plain.reset(seed=9), packed.reset(seed=9)
        for _ in range(30):
            np.testing.assert_array_equal(p.obs, q.obs)
            np.testing.assert_array_equal(p.mask, q.mask)
            a = np.argmax(rng.random(p.mask.shape) * p.mask, axis=1)
            p, q = plain.step(a), packed.step(a)
            np.testing.assert_array_equal(p.rewards, q.rewards)
            np.testing.assert_array_equal(p.done, q.done)
    finally:
        plain.close()
        packed.close()


def test_nim_through_gymnasium_and_pettingzoo(nim_server: dgenv.LocalServer) -> None:
    from gymnasium import spaces
    from pettingzoo.test import api_test

    from dgenv.gymnasium import VectorEnv
    from dgenv.pettingzoo import AECEnv

    venv = VectorEnv(8, options=EnvOptions(game="nim", opponent="greedy", seed=2, client=nim_server))
    try:
        assert venv.single_action_space == spaces.Discrete(TAKE)
        assert venv.single_observation_space.shape == (4,)
        assert venv.single_observation_space.high[0] == HEAP
        obs, info = venv.reset(seed=2)
        ends = 0
        for _ in range(40):
            a = venv.action_space.sample(mask=info["action_mask"])
            obs, rew, term, trunc, info = venv.step(a)
            assert venv.single_observation_space.contains(obs[0])
            ends += int(term.sum())
        assert ends > 0
    finally:
        venv.close()

    aec = AECEnv(nim_server, game={"name": "nim", "players": 3}, render_mode="ansi")
    try:
        assert aec.max_num_agents == 3 and aec.action_space("player_0") == spaces.Discrete(TAKE)
        aec.reset(seed=1)
        assert aec.render().startswith(f"{aec.agent_selection} heap [{HEAP}] to_act [0]")
        api_test(aec, num_cycles=50)
    finally:
        aec.close()


def test_another_game_in_process_matches_http(server: dgenv.LocalServer) -> None:
    # The duel is a registered game of every build: dgenv.local() plays it as the server does.
    local = dgenv.local()
    a = server.make(game="duel", num_envs=8, seed=3, obs_dtype=None)
    b = local.make(game="duel", num_envs=8, seed=3, obs_dtype=None)
    try:
        assert a.spec.obs == b.spec.obs and a.num_actions == b.num_actions and b.spec.game == "duel"
        assert a.num_actions != 90  # nothing is sized by the card game
        rng = np.random.default_rng(0)
        x, y = a.reset(seed=3), b.reset(seed=3)
        for _ in range(60):
            for f in ("obs", "mask", "player", "rewards", "done", "scores"):
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
            act = np.argmax(rng.random(x.mask.shape) * x.mask, axis=1)
            x, y = a.step(act), b.step(act)
    finally:
        a.close()
        b.close()
    with pytest.raises(dgenv.BadRequest) as ei:
        local.make(game="nim")  # registered only in the test build of dgserver
    assert ei.value.details.get("field") == "game.name"


def test_every_game_of_the_test_build_runs_in_process_in_gymnasium_pettingzoo_and_dgeval(
    testgame_server: dgenv.LocalServer, tmp_path: Path
) -> None:
    # A fresh process loads the test build's library ($DGENV_LIB): a process holds one Go runtime,
    # and this one may have loaded the plain build's.
    lib = _build_test("-buildmode=c-shared", "libdgenv-testgame.so", "./cmd/libdgenv")
    dgeval = _build_test("dgeval-testgame", "./cmd/dgeval")
    out = tmp_path / "every_game.json"
    env = dict(os.environ, DGENV_LIB=str(lib))
    r = subprocess.run([sys.executable, str(Path(__file__).with_name("every_game.py")), testgame_server.url,
                        str(dgeval), str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(out.read_text())
    listed = [g.name for g in testgame_server.games()]
    plain = [g.name for g in dgenv.local().games()]
    assert report["games"] == listed and set(report["checked"]) == set(listed)
    assert len(listed) > len(plain) and listed[: len(plain)] == plain  # the test games come after the shipped ones
    for name, c in report["checked"].items():
        assert c["inproc_equals_http"] and c["gymnasium"] and c["pettingzoo"] and c["dgeval_games"] == 12, (name, c)
