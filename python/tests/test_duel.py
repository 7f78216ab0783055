"""The duel (docs/duel.md) through the server and the Python client.

Sessions are made with ``Client.make(game={"name": "duel", ...})`` and
driven by the ordinary :class:`dgenv.BatchEnv`: nothing in the client is
duel-specific; the spaces come from the spec.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pytest

import dgenv

from conftest import random_legal

NUM_ACTIONS = 117
OBS_SIZE = 461


def make_duel(
    client: dgenv.Client,
    num_envs: int,
    seed: int,
    learner_seats: Optional[Sequence[int]] = None,
    opponent: Optional[str] = None,
    **game: int,
) -> dgenv.BatchEnv:
    return client.make(
        game={"name": "duel", **game}, num_envs=num_envs, seed=seed, learner_seats=learner_seats, opponent=opponent
    )


def test_games_lists_the_duel(client: dgenv.Client) -> None:
    info = client.game("duel")
    assert info.num_actions == NUM_ACTIONS and info.obs.size == OBS_SIZE
    by = {g.name: g.raw for g in client.games()}
    assert list(by) == ["david_goliath", "duel"]
    d = by["duel"]
    assert d["players"] == [2]
    assert d["num_actions"] == NUM_ACTIONS
    assert list(d["obs"]["shape"]) == [OBS_SIZE]
    assert sorted(d["bots"]) == ["heuristic", "random", "search"]
    assert [p["name"] for p in d["params"]] == ["max_rounds"]


@pytest.mark.parametrize(
    "learner_seats,opponent",
    [(None, None), ([0], "heuristic"), ([1], "heuristic"), ([1], "random")],
    ids=["self-play", "goliath-vs-heuristic", "david-vs-heuristic", "david-vs-random"],
)
def test_duel_plays_to_the_end(client: dgenv.Client, learner_seats: Optional[list[int]], opponent: Optional[str]) -> None:
    n, per_env = 4, 2
    seats = set(learner_seats if learner_seats is not None else [0, 1])
    rng = np.random.default_rng(5)
    with make_duel(client, n, seed=31, learner_seats=learner_seats, opponent=opponent) as env:
        assert env.players == 2
        assert env.num_actions == NUM_ACTIONS
        assert env.obs_size == OBS_SIZE
        assert env.spec.obs.size == OBS_SIZE
        b = env.reset(seed=31)
        sums = np.zeros((n, 2))
        sent: list[list[int]] = [[] for _ in range(n)]
        finished = np.zeros(n, dtype=int)
        results = []
        for step in range(20000):
            if finished.min() >= per_env:
                break
            assert b.obs.shape == (n, OBS_SIZE)
            assert b.mask.shape == (n, NUM_ACTIONS) and b.mask.dtype == np.bool_
            assert b.mask.any(axis=1).all(), "every env has a legal action"
            assert set(b.player.tolist()) <= seats, "only learner seats act"
            acts = random_legal(b.mask, rng)
            assert b.mask[np.arange(n), acts].all()
            for i in range(n):
                sent[i].append(int(acts[i]))
            b = env.step(acts)
            assert b.rewards.shape == (n, 2)
            sums += b.rewards
            for i in np.flatnonzero(~b.done):
                assert (b.rewards[i] == 0).all(), "a reward only at the end"
            for i in np.flatnonzero(b.done):
                finished[i] += 1
                assert b.episode[i] == finished[i]
                res = tuple(int(x) for x in b.scores[i])
                assert res in {(1, -1), (-1, 1), (0, 0)}, res
                assert tuple(sums[i]) == res, "the rewards over a game are its result"
                results.append(res)
                rec = env.record(int(i))
                fin = rec["finished"]
                assert fin["game"]["name"] == "duel"
                assert fin["game"]["max_rounds"] == 100
                assert list(fin["returns"]) == list(res)
                assert fin.get("deals") is None
                assert isinstance(fin["seed"], int)
                if learner_seats is None:
                    assert list(fin["actions"]) == sent[i], "self-play: the record is the actions sent"
                else:
                    # the bots' actions are in the record too: ours are a subsequence of it
                    it = iter(fin["actions"])
                    assert all(a in it for a in sent[i])
                    assert len(fin["actions"]) > len(sent[i])
                assert rec["current"] is not None
                sent[i] = []
                sums[i] = 0
        else:
            pytest.fail("games never end")
        assert len(results) >= n * per_env


def test_duel_heuristic_beats_random_learner(client: dgenv.Client) -> None:
    """A learner playing uniformly at random loses most games to the heuristic, in either role."""
    rng = np.random.default_rng(9)
    for seat in (0, 1):
        with make_duel(client, 16, seed=3, learner_seats=[seat], opponent="heuristic") as env:
            b = env.reset(seed=3)
            wins = losses = games = 0
            while games < 64:
                b = env.step(random_legal(b.mask, rng))
                for i in np.flatnonzero(b.done):
                    games += 1
                    wins += b.scores[i, seat] > 0
                    losses += b.scores[i, seat] < 0
            assert losses > 0.7 * games and wins < 0.1 * games, (seat, wins, losses, games)


def test_duel_errors(client: dgenv.Client) -> None:
    with pytest.raises(dgenv.BadRequest, match="max_rounds"):
        make_duel(client, 1, seed=1, max_rounds=0)
    with pytest.raises(dgenv.BadRequest, match="players"):
        make_duel(client, 1, seed=1, players=3)
    with make_duel(client, 2, seed=1) as env:
        b = env.reset(seed=1)
        bad = int(np.flatnonzero(~b.mask[0])[0])
        with pytest.raises(dgenv.IllegalActionError):
            env.step(np.array([bad, int(np.flatnonzero(b.mask[1])[0])]))
        with pytest.raises(dgenv.BadRequest):
            env.step(np.array([NUM_ACTIONS, 0]))
        # nothing was stepped: the same legal step still works
        b2 = env.step(np.array([int(np.flatnonzero(b.mask[i])[0]) for i in range(2)]))
        assert b2.obs.shape == (2, OBS_SIZE)


@pytest.mark.parametrize("role", [0, 1], ids=["goliath", "david"])
def test_duel_through_the_gymnasium_vector_env(server: dgenv.LocalServer, role: int) -> None:
    # The adapters size everything from the spec: the duel's 117 actions and
    # its observation, with the heuristic playing the other role.
    from gymnasium import spaces
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    from dgenv.gymnasium import VectorEnv

    venv = RecordEpisodeStatistics(
        VectorEnv(4, options=dgenv.EnvOptions(game="duel", opponent="heuristic", learner_seats=[role], seed=3, client=server))
    )
    try:
        assert venv.single_action_space == spaces.Discrete(NUM_ACTIONS)
        assert venv.single_observation_space.shape == (OBS_SIZE,)
        obs, info = venv.reset(seed=3)
        ends, returns = 0, []
        for _ in range(3000):
            a = venv.action_space.sample(mask=info["action_mask"])
            obs, rew, term, trunc, info = venv.step(a)
            assert obs.shape == (4, OBS_SIZE)
            assert set(np.unique(rew)) <= {-1.0, 0.0, 1.0}
            if "episode" in info:
                returns += [float(r) for r in info["episode"]["r"][info["_episode"]]]
            ends += int(term.sum())
            if ends >= 4:
                break
        assert ends >= 4, "random play against the heuristic ends games"
        assert set(returns) <= {-1.0, 0.0, 1.0} and returns
    finally:
        venv.close()


def test_duel_passes_pettingzoo_api_test(server: dgenv.LocalServer) -> None:
    from pettingzoo.test import api_test

    from dgenv.pettingzoo import AECEnv

    aec = AECEnv(server, game="duel")
    try:
        assert aec.max_num_agents == 2 and aec.action_space(aec.possible_agents[0]).n == NUM_ACTIONS
        api_test(aec, num_cycles=200)
    finally:
        aec.close()


def test_duel_packed_batches_equal_unpacked(client: dgenv.Client) -> None:
    """``packing="bits"`` carries the duel's 117-action mask and 461-element observation."""
    kw = dict(game="duel", num_envs=6, seed=3, learner_seats=[1], opponent="heuristic")
    packed, plain = client.make(packing="bits", **kw), client.make(**kw)
    try:
        b, u = packed.reset(seed=3), plain.reset(seed=3)
        rng = np.random.default_rng(3)
        for _ in range(60):
            assert b.mask.shape == (6, 117) and b.obs.shape == (6, 461)
            np.testing.assert_array_equal(b.mask, u.mask)
            np.testing.assert_array_equal(b.obs, u.obs)
            np.testing.assert_array_equal(b.rewards, u.rewards)
            a = np.array([rng.choice(np.flatnonzero(m)) for m in b.mask])
            b, u = packed.step(a), plain.step(a)
    finally:
        packed.close()
        plain.close()
