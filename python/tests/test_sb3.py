"""Stable-Baselines3: MaskablePPO trains on the VecEnv out of the box (CPU)."""

from __future__ import annotations

import numpy as np
import pytest

import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from stable_baselines3.common.vec_env import VecMonitor

import dgenv
from dgenv.gymnasium import Env
from dgenv.sb3 import VecEnv


@pytest.mark.parametrize("packing", [None, "bits"])
def test_vec_env_exposes_action_masks_the_sb3_way(client: dgenv.Client, packing) -> None:
    venv = VecEnv(6, client, players=3, opponent="random", packing=packing)
    obs = venv.reset()
    assert obs.shape == (6, venv.observation_space.shape[0])
    assert is_masking_supported(venv)
    masks = get_action_masks(venv)
    assert masks.shape == (6, 90) and masks.dtype == np.bool_
    np.testing.assert_array_equal(masks, venv.action_masks())
    ends = 0
    for _ in range(46):
        acts = np.argmax(get_action_masks(venv), axis=1)
        obs, rew, dones, infos = venv.step(acts)
        assert len(infos) == 6 and rew.dtype == np.float32
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"].shape == obs[i].shape
            ends += 1
    assert ends == 6
    venv.close()


def test_single_env_passes_sb3_check_env(client: dgenv.Client) -> None:
    env = Env(client)
    sb3_check_env(env, warn=True)
    env.close()


def test_maskable_ppo_learns_for_a_few_thousand_steps_on_cpu(client: dgenv.Client) -> None:
    torch.set_num_threads(1)  # small MLPs: OpenMP hand-offs cost 200x the work on 2 cores
    venv = VecMonitor(VecEnv(16, client, players=3, opponent="random", reward_scale=0.01, seed=1))
    model = MaskablePPO(
        "MlpPolicy",
        venv,
        n_steps=128,
        batch_size=256,
        n_epochs=2,
        policy_kwargs={"net_arch": [64, 64]},
        device="cpu",
        seed=0,
        verbose=0,
    )
    model.learn(total_timesteps=4096)
    assert model.num_timesteps >= 4096
    assert len(model.ep_info_buffer) > 0, "games finished during training and were counted"
    obs = venv.reset()
    action, _ = model.predict(obs, action_masks=get_action_masks(venv), deterministic=True)
    assert get_action_masks(venv)[np.arange(16), action].all(), "the trained policy picks legal cards"
    venv.close()
