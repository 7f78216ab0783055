"""Gymnasium adapters, checked with gymnasium's own env checker."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gymnasium
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import dgenv
from dgenv.gymnasium import Env, VectorEnv

from conftest import random_legal


def test_single_env_passes_gymnasium_check_env(client: dgenv.Client) -> None:
    env = Env(client)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        check_env(env, skip_render_check=True)
    env.close()


def test_single_env_plays_whole_games_with_masked_actions(client: dgenv.Client) -> None:
    env = Env(client, players=3, learner_seat=1, opponent="random")
    rng = np.random.default_rng(0)
    for episode in range(2):
        obs, info = env.reset(seed=episode)
        total, steps, done = 0.0, 0, False
        while not done:
            assert env.observation_space.contains(obs)
            mask = info["action_mask"]
            np.testing.assert_array_equal(mask, env.action_masks())
            a = int(rng.choice(np.flatnonzero(mask)))
            obs, r, done, trunc, info = env.step(a)
            assert not trunc
            total += r
            steps += 1
        assert steps == 15 * 3  # the learner plays one card per trick, 3 deals of 15
        assert total == info["scores"][1]  # points: the rewards add up to the learner's total
    env.close()


def test_single_env_illegal_action_gets_the_penalty_and_ends(client: dgenv.Client) -> None:
    env = Env(client, illegal_action_reward=-5.0)
    _, info = env.reset(seed=1)
    illegal = int(np.flatnonzero(~info["action_mask"])[0])
    obs, r, term, trunc, info = env.step(illegal)
    assert (r, term, trunc, info["illegal_action"]) == (-5.0, True, False, True)
    with pytest.raises(RuntimeError):
        env.step(0)
    env.reset()
    env.close()


def test_vector_env_declares_same_step_autoreset_and_plays(client: dgenv.Client) -> None:
    n = 16
    venv = VectorEnv(n, client, players=3, opponent="random", seed=7)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert venv.num_envs == n
    obs, info = venv.reset(seed=3)
    assert obs.shape == (n, venv.single_observation_space.shape[0])
    assert venv.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    ends = 0
    returns = np.zeros(n)
    for t in range(46):  # 3 deals x 15 tricks: every game ends at the 45th learner step
        mask = info["action_mask"]
        np.testing.assert_array_equal(mask, venv.action_masks())
        assert mask.shape == (n, 90) and mask.any(axis=1).all()
        obs, rew, term, trunc, info = venv.step(random_legal(mask, rng))
        assert rew.shape == (n,) and term.dtype == np.bool_ and not trunc.any()
        returns += rew
        if term.any():
            ends += int(term.sum())
            np.testing.assert_array_equal(info["_final_obs"], term)
            np.testing.assert_allclose(returns[term], info["scores"][term][:, 0])
            returns[term] = 0
            # SAME_STEP: the observation is already the next game's first one.
            hand = venv.env.section(obs[term], "hand")
            assert (hand.sum(axis=1) == 15).all()
    assert ends == n
    assert venv.observation_space.contains(obs)
    venv.close()


@pytest.mark.parametrize("packing", [None, "bits"])
def test_vector_env_is_deterministic_under_a_seed(client: dgenv.Client, packing) -> None:
    a, b = VectorEnv(4, client), VectorEnv(4, client, packing=packing)  # packed or not, the same
    oa, ia = a.reset(seed=5)
    ob, ib = b.reset(seed=5)
    np.testing.assert_array_equal(oa, ob)
    rng = np.random.default_rng(0)
    for _ in range(20):
        act = random_legal(ia["action_mask"], rng)
        oa, ra, *_, ia = a.step(act)
        ob, rb, *_, ib = b.step(act)
        np.testing.assert_array_equal(oa, ob)
        np.testing.assert_array_equal(ra, rb)
    a.close()
    b.close()


def test_adapters_without_a_client_use_dgenv_url(server: dgenv.LocalServer, monkeypatch) -> None:
    from dgenv import _common

    monkeypatch.setenv("DGENV_URL", server.url)
    monkeypatch.setattr(_common, "_default", None)
    env = Env()  # no client: $DGENV_URL
    assert env.client.url == server.url
    env.reset(seed=1)
    env.close()
    assert _common.default_server() is env.client  # shared by every adapter in the process


def test_registered_for_make_and_make_vec(client: dgenv.Client) -> None:
    from dgenv.gymnasium import ENV_ID

    env = gymnasium.make(ENV_ID, client=client, players=3)
    obs, info = env.reset(seed=2)
    assert env.observation_space.contains(obs) and info["action_mask"].any()
    env.close()
    venv = gymnasium.make_vec(ENV_ID, num_envs=8, vectorization_mode="vector_entry_point", client=client)
    obs, info = venv.reset(seed=2)
    assert obs.shape[0] == 8 and info["action_mask"].shape == (8, 90)
    venv.close()
