"""A table of different bots: make(..., opponents=[...]) over HTTP and in process."""

from __future__ import annotations

import numpy as np
import pytest

import dgenv
from dgenv.errors import BadRequest

from conftest import random_legal

TABLE = [None, "heuristic", "random", None, "heuristic"]


def test_opponents_name_each_seat_over_http_and_in_process(make) -> None:
    local = dgenv.local()
    a = make(players=5, deals=1, num_envs=3, seed=4, opponents=TABLE)
    b = local.make(players=5, deals=1, num_envs=3, seed=4, opponents=TABLE)
    try:
        for e in (a, b):
            assert e.spec.learner_seats == (0, 3)
            assert e.spec.raw["opponents"] == TABLE
        rng = np.random.default_rng(1)
        ba, bb = a.reset(seed=4), b.reset(seed=4)
        ended = 0
        for _ in range(80):
            assert set(ba.player.tolist()) <= {0, 3}
            np.testing.assert_array_equal(ba.obs, bb.obs)
            act = random_legal(ba.mask, rng)
            ba, bb = a.step(act), b.step(act)
            np.testing.assert_array_equal(ba.rewards, bb.rewards)
            ended += int(ba.done.sum())
        assert ended > 0
    finally:
        b.close()


@pytest.mark.parametrize(
    "kw",
    [
        {"opponents": [None, "random", "random"]},
        {"opponents": [None, "random", "grandmaster", "random"]},
        {"opponents": [None, "random", "random", "random"], "opponent": "random"},
        {"opponents": [None, "random", "random", "random"], "learner_seats": [0, 1]},
    ],
)
def test_a_wrong_opponents_list_is_refused(make, kw) -> None:
    for mk in (make, dgenv.local().make):
        with pytest.raises(BadRequest, match="opponents"):
            mk(players=4, **kw)
