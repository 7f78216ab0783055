"""Every adapter ends the game in flight as truncated when its session is lost and re-created.

The session is deleted behind the adapter's back (what a server restart or
the session TTL does); the client re-creates it on the next step
(``Batch.truncated``), and the adapter must report the lost game as
truncated instead of carrying on in the new one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dgenv

SETTINGS: dict[str, Any] = {"players": 3, "deals": 1, "seed": 4}


def lose(server: dgenv.LocalServer, env: dgenv.BatchEnv) -> str:
    """Delete the env's session on the server, as a restart or an expiry would; returns its id."""
    old = env.session
    server._request("DELETE", f"/v1/sessions/{old}", session_route=True)
    return old


def recreated(env: dgenv.BatchEnv, old: str) -> None:
    assert env.recoveries == 1 and env.session != old, "the session was not re-created"


def test_gymnasium_env(server: dgenv.LocalServer) -> None:
    from dgenv.gymnasium import Env

    env = Env(server, opponent="random", **SETTINGS)
    try:
        obs, info = env.reset(seed=1)
        old = lose(server, env.env)
        obs2, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        recreated(env.env, old)
        assert truncated and not terminated and reward == 0.0 and info["session_lost"]
        np.testing.assert_array_equal(obs2, obs)  # the lost game's last observation
        with pytest.raises(RuntimeError, match="reset"):
            env.step(0)
        _, info = env.reset()
        env.step(int(np.flatnonzero(info["action_mask"])[0]))  # a new game plays on
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_gymnasium_vector_env(server: dgenv.LocalServer, mode: str) -> None:
    from dgenv.gymnasium import VectorEnv

    venv = VectorEnv(3, server, opponent="random", autoreset_mode=mode, **SETTINGS)
    try:
        _, info = venv.reset(seed=1)
        old = lose(server, venv.env)
        # one illegal action too: its env is truncated, nothing is played out in the new game
        a = np.argmax(info["action_mask"], axis=1)
        a[0] = int(np.flatnonzero(~info["action_mask"][0])[0])
        _, rewards, terms, truncs, info = venv.step(a)
        recreated(venv.env, old)
        assert truncs.all() and not terms[1:].any()
        assert venv.env.last.episode.sum() == 0, "the new games were played out"
        if mode == "next_step":  # the next step is the reset into the new games
            obs, rewards, terms, truncs, info = venv.step(np.zeros(3, dtype=np.int64))
            assert not truncs.any() and not terms.any() and (rewards == 0).all()
        assert info["action_mask"].any(axis=1).all()
        venv.step(np.argmax(info["action_mask"], axis=1))
    finally:
        venv.close()


def _play_aec(env: Any, server: dgenv.LocalServer) -> None:
    env.reset(seed=1)
    obs, *_ = env.last()
    old = lose(server, env.unwrapped.env)
    env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    recreated(env.unwrapped.env, old)
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert all(i.get("session_lost") for i in env.infos.values())
    assert all(r == 0 for r in env.rewards.values())
    for agent in env.agent_iter():  # every agent sees its end, then leaves
        _, _, term, trunc, _ = env.last()
        assert trunc and not term
        env.step(None)
    assert env.agents == []


def test_pettingzoo_aec_env(server: dgenv.LocalServer) -> None:
    from dgenv.pettingzoo import AECEnv, env as wrapped

    for e in (AECEnv(server, **SETTINGS), wrapped(server, **SETTINGS)):
        try:
            _play_aec(e, server)
        finally:
            e.close()


def test_pettingzoo_parallel_env(server: dgenv.LocalServer) -> None:
    from dgenv.pettingzoo import parallel_env

    env = parallel_env(server, **SETTINGS)
    try:
        obs, infos = env.reset(seed=1)
        old = lose(server, env.aec.env)
        actions = {a: int(np.flatnonzero(o["action_mask"])[0]) for a, o in obs.items()}
        obs, rewards, terms, truncs, infos = env.step(actions)
        recreated(env.aec.env, old)
        assert all(truncs.values()) and not any(terms.values()) and not any(rewards.values())
        assert env.agents == []
    finally:
        env.close()


def test_sb3_vec_env(server: dgenv.LocalServer) -> None:
    from dgenv.sb3 import VecEnv

    venv = VecEnv(2, server, opponent="random", **SETTINGS)
    try:
        obs = venv.reset()
        old = lose(server, venv.env)
        venv.step_async(np.argmax(venv.action_masks(), axis=1))
        obs2, rewards, dones, infos = venv.step_wait()
        recreated(venv.env, old)
        assert dones.all() and (rewards == 0).all()
        for i, info in enumerate(infos):
            assert info["TimeLimit.truncated"] and info["session_lost"]
            np.testing.assert_array_equal(info["terminal_observation"], obs[i])
    finally:
        venv.close()


def test_rllib_multi_agent_env(server: dgenv.LocalServer) -> None:
    from dgenv.rllib import MultiAgentEnv

    env = MultiAgentEnv({"client": server, **SETTINGS})
    try:
        obs, _ = env.reset(seed=1)
        (agent, o), = obs.items()
        old = lose(server, env.env)
        obs, rewards, terms, truncs, infos = env.step({agent: int(np.flatnonzero(o["action_mask"])[0])})
        recreated(env.env, old)
        assert truncs["__all__"] and not terms["__all__"]
        assert set(obs) == set(env.agents) and all(r == 0 for r in rewards.values())
        assert all(i["session_lost"] for i in infos.values())
        with pytest.raises(RuntimeError, match="reset"):
            env.step({agent: 0})
    finally:
        env.close()


def test_openspiel_style_environment(server: dgenv.LocalServer) -> None:
    from dgenv.openspiel import Environment

    env = Environment(server, **SETTINGS)
    try:
        ts = env.reset()
        old = lose(server, env.env)
        p = ts.observations["current_player"]
        ts = env.step([ts.observations["legal_actions"][p][0]])
        recreated(env.env, old)
        assert ts.last() and env.truncated
        assert ts.rewards == [0.0] * 3 and ts.discounts == [1.0] * 3  # dm_env's truncation: not a terminal
        ts = env.step([0])  # after LAST: a new game
        assert ts.first() and not env.truncated
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_gymnasium_vector_env_session_lost_while_playing_out_an_illegal_game(server: dgenv.LocalServer, mode: str) -> None:
    # An illegal action's game is played out on the server within the step;
    # when the session is lost during that, every env's game was lost: all
    # are truncated, and the new games are not played out.
    from dgenv.gymnasium import VectorEnv

    venv = VectorEnv(2, server, opponent="random", autoreset_mode=mode, **SETTINGS)
    try:
        _, info = venv.reset(seed=1)
        step, calls = venv.env.step, []

        def losing_step(a):  # the second call is the first play-out step
            calls.append(1)
            if len(calls) == 2:
                lose(server, venv.env)
            return step(a)

        venv.env.step = losing_step  # type: ignore[method-assign]
        a = np.argmax(info["action_mask"], axis=1)
        a[0] = int(np.flatnonzero(~info["action_mask"][0])[0])
        obs, _, terms, truncs, info = venv.step(a)
        assert len(calls) == 2 and terms[0] and truncs.all()
        assert venv.env.recoveries == 1 and venv.env.last.episode.sum() == 0, "the new game was played out"
        if mode == "same_step":  # both envs' observations are the new games' first
            np.testing.assert_array_equal(obs, venv.env.last.obs)
            assert info["action_mask"].any(axis=1).all()
        else:
            obs, _, terms, truncs, info = venv.step(np.zeros(2, dtype=np.int64))  # the reset step
            assert not terms.any() and not truncs.any()
            np.testing.assert_array_equal(obs, venv.env.last.obs)
    finally:
        venv.close()
