"""Whole games through the client, checked against the server's game records."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_legal


@pytest.mark.parametrize("players", [3, 4, 6])
def test_self_play_games_match_their_records(make, players: int) -> None:
    n = 3
    env = make(players=players, num_envs=n, seed=100 + players)
    rng = np.random.default_rng(players)
    b = env.reset()
    plays: list[list[list[int]]] = [[] for _ in range(n)]  # per env: [seat, card] in play order
    hands_seen: list[dict[int, set[int]]] = [{} for _ in range(n)]  # seat -> hand at its first turn
    returns = np.zeros((n, players))
    finished = np.zeros(n, dtype=bool)
    steps = 0
    while not finished.all():
        act = random_legal(b.mask, rng)
        hand = env.section(b.obs, "hand")
        deal0 = env.section(b.obs, "deal_index")[:, 0] == 0
        for i in np.flatnonzero(~finished):  # bookkeeping of the test itself, not the client
            p = int(b.player[i])
            assert b.mask[i, act[i]] and hand[i, act[i]] == 1, "chose a legal card from the hand"
            if deal0[i] and p not in hands_seen[i]:
                hands_seen[i][p] = set(np.flatnonzero(hand[i]).tolist())
            plays[i].append([p, int(act[i])])
        b = env.step(act)
        returns[~finished] += b.rewards[~finished]
        newly = b.done & ~finished
        for i in np.flatnonzero(newly):
            rec = env.record(int(i))["finished"]
            assert rec is not None
            flat = [list(x) for d in rec["deals"] for x in d["plays"]]
            assert flat == plays[i], f"env {i}: record's plays differ from the client's"
            assert len(rec["deals"]) == players  # deals default to the player count
            first = rec["deals"][0]
            for seat, cards in hands_seen[i].items():
                assert set(first["hands"][seat]) == cards, f"env {i} seat {seat}: dealt hand differs"
            for d in rec["deals"]:
                assert sorted(c for h in d["hands"] for c in h) == sorted(c for _, c in d["plays"])
            totals = np.array(rec["totals"])
            np.testing.assert_array_equal(totals, np.sum([d["scores"] for d in rec["deals"]], axis=0))
            np.testing.assert_array_equal(b.scores[i], totals)
            np.testing.assert_allclose(returns[i], totals)  # points mode: rewards add up to totals
            assert b.episode[i] == 1
        finished |= b.done
        steps += 1
        assert steps <= 15 * players * players, "a game lasted longer than deals * tricks * players"
    assert steps == 15 * players * players  # every game has the same length
    # After the same-step auto-reset each env is at the start of a new game.
    assert (env.section(b.obs, "hand").sum(axis=1) == 15).all()
    rec = env.record(0)
    assert rec["finished"] is not None and rec["current"]["deals"][0]["plays"] == []


def test_zero_sum_rewards_sum_to_zero(make) -> None:
    env = make(players=5, num_envs=8, seed=3, reward="zero_sum")
    rng = np.random.default_rng(0)
    b = env.reset()
    got = 0
    for _ in range(80):
        b = env.step(random_legal(b.mask, rng))
        np.testing.assert_allclose(b.rewards.sum(axis=1), 0, atol=1e-3)
        got += int(np.count_nonzero(b.rewards))
    assert got > 0, "a deal ended, so some rewards were paid"
