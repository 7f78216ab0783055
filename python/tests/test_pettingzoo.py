"""PettingZoo adapters, checked with pettingzoo.test's api, seed and parallel tests."""

from __future__ import annotations

import numpy as np
import pytest

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import dgenv
from dgenv.pettingzoo import AECEnv, parallel_env


@pytest.mark.parametrize("players", [3, 4])
def test_aec_env_passes_api_test(client: dgenv.Client, players: int) -> None:
    env = AECEnv(client, players=players)
    api_test(env, num_cycles=300)
    env.close()


def test_aec_env_passes_seed_test(client: dgenv.Client) -> None:
    seed_test(lambda: AECEnv(client), num_cycles=300)  # closes both envs


def test_parallel_env_passes_parallel_api_test(client: dgenv.Client) -> None:
    env = parallel_env(client, players=3)
    parallel_api_test(env, num_cycles=300)
    env.unwrapped.close()


def test_parallel_env_passes_parallel_seed_test(client: dgenv.Client) -> None:
    # parallel_seed_test samples unmasked actions: the default "terminate" convention applies.
    parallel_seed_test(lambda: parallel_env(client), num_cycles=50)


def test_aec_game_rewards_add_up_to_the_final_scores(client: dgenv.Client) -> None:
    env = AECEnv(client, players=4, render_mode="ansi")
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    returns = {a: 0.0 for a in env.possible_agents}
    moves = 0
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        returns[agent] += rew
        assert obs["action_mask"].dtype == np.int8
        if term or trunc:
            env.step(None)
            continue
        assert isinstance(env.render(), str)
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        moves += 1
    assert moves == 4 * 15 * 4
    scores = info["scores"]
    assert [returns[a] for a in env.possible_agents] == [float(s) for s in scores]
    env.close()


def test_aec_illegal_action_raises_or_terminates(client: dgenv.Client) -> None:
    env = AECEnv(client, illegal_action="raise")
    env.reset(seed=1)
    obs, *_ = env.last()
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(dgenv.IllegalActionError):
        env.step(illegal)
    env.step(int(np.flatnonzero(obs["action_mask"])[0]))  # still usable
    env.close()

    env = AECEnv(client, illegal_action_reward=-3.0)  # the default: "terminate"
    env.reset(seed=1)
    offender = env.agent_selection
    env.step(illegal)
    assert all(env.terminations.values())
    assert env.rewards[offender] == -3.0
    assert all(r == 0 for a, r in env.rewards.items() if a != offender)
    assert env.infos[offender]["illegal_action"]
    env.close()
