"""AsyncBatchEnv: EnvPool-style recv/send over overlapping batches."""

from __future__ import annotations

import numpy as np
import pytest

import dgenv
from dgenv import AsyncBatchEnv

from conftest import random_legal


@pytest.mark.parametrize("packing", [None, "bits"])
def test_async_batches_equal_their_sessions_stepped_in_turn(client: dgenv.Client, packing) -> None:
    bs = 6
    pool = AsyncBatchEnv(client, num_envs=3 * bs, batch_size=bs, seed=40, players=3, deals=1,
                         learner_seats=[0], opponent="heuristic", obs_dtype=None, packing=packing)
    refs = [client.make(num_envs=bs, seed=40 + k, players=3, deals=1, learner_seats=[0],
                        opponent="heuristic", obs_dtype=None) for k in range(3)]
    assert pool.num_batches == 3 and pool.spec.num_envs == bs
    rng = np.random.default_rng(2)
    pool.async_reset(seed=40)
    want = [r.reset(seed=40 + k) for k, r in enumerate(refs)]
    order = []
    for _ in range(3 * 60):  # past the end of one-deal games
        env_id, b = pool.recv()
        k = int(env_id[0]) // bs
        order.append(k)
        np.testing.assert_array_equal(env_id, np.arange(k * bs, (k + 1) * bs))
        for name, x, y in zip(b._fields, b, want[k]):
            np.testing.assert_array_equal(x, y, err_msg=name)
        act = random_legal(b.mask, rng)
        pool.send(act, env_id)
        want[k] = refs[k].step(act)
    assert order[:6] == [0, 1, 2, 0, 1, 2], "batches come back in the order they were sent"
    assert sum(int(w.episode.sum()) for w in want) > 0
    pool.close()
    for r in refs:
        r.close()


def test_misuse_is_refused_and_changes_nothing(client: dgenv.Client) -> None:
    with pytest.raises(ValueError):
        AsyncBatchEnv(client, num_envs=10, batch_size=4)
    with AsyncBatchEnv(client, num_envs=8, seed=3) as pool:
        assert pool.batch_size == 4
        with pytest.raises(dgenv.DgenvError):
            pool.recv()  # nothing in flight
        pool.async_reset()
        with pytest.raises(dgenv.DgenvError):
            pool.async_reset()  # still in flight
        env_id, b = pool.recv()
        with pytest.raises(ValueError):
            pool.send(np.argmax(b.mask, axis=1), env_id + 1)  # not a batch's ids
        with pytest.raises(ValueError):
            pool.send(np.argmax(b.mask, axis=1), np.arange(4, 8))  # batch 1 is not received yet
        with pytest.raises(ValueError):
            pool.send(np.zeros(3, dtype=int), env_id)  # wrong shape: nothing sent
        # An illegal action: raised by recv, and the batch is ready again, unchanged.
        bad = np.argmax(b.mask, axis=1)
        bad[2] = int(np.flatnonzero(~b.mask[2])[0])
        pool.send(bad, env_id)
        other_id, _ = pool.recv()  # batch 1's reset
        with pytest.raises(dgenv.IllegalActionError) as ei:
            pool.recv()
        assert ei.value.env == 2
        np.testing.assert_array_equal(pool.last(env_id).obs, b.obs)
        pool.send(np.argmax(b.mask, axis=1), env_id)
        pool.send(np.argmax(pool.last(other_id).mask, axis=1), other_id)
        got_id, nb = pool.recv()
        np.testing.assert_array_equal(got_id, env_id)
        assert not np.array_equal(nb.obs, b.obs)
    with pytest.raises(dgenv.DgenvError):
        pool.recv()  # closed (with a step still in flight, dropped)
