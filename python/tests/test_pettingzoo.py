"""PettingZoo adapters, checked with pettingzoo.test's api, seed and parallel tests."""

from __future__ import annotations

import numpy as np
import pytest

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test
from pettingzoo.utils import wrappers

import dgenv
from dgenv.pettingzoo import NOOP, AECEnv, env, parallel_env, raw_env


@pytest.mark.parametrize("players", [3, 4])
def test_aec_env_passes_api_test(client: dgenv.Client, players: int) -> None:
    env = AECEnv(client, players=players)
    api_test(env, num_cycles=300)
    env.close()


def test_aec_env_passes_seed_test(client: dgenv.Client) -> None:
    seed_test(lambda: AECEnv(client), num_cycles=300)  # closes both envs


def test_parallel_env_passes_parallel_api_test(client: dgenv.Client) -> None:
    penv = parallel_env(client, players=3)
    parallel_api_test(penv, num_cycles=300)
    penv.close()


def test_env_is_wrapped_as_the_classic_games_are(client: dgenv.Client) -> None:
    e = env(client, players=3)
    try:
        assert isinstance(e, wrappers.OrderEnforcingWrapper) and isinstance(e.unwrapped, AECEnv)
        assert type(raw_env(client, players=3)) is AECEnv
        with pytest.raises(AttributeError):  # the classic games' order check: reset first
            e.agent_selection
        api_test(e, num_cycles=100)
    finally:
        e.close()
    # aec_to_parallel needs every agent to act once per cycle in seat order: not this game
    assert AECEnv.metadata["is_parallelizable"] is False  # the parallel form is ParallelEnv


@pytest.mark.parametrize("mode", ["ansi", "human"])
def test_render_test_passes(client: dgenv.Client, mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    made = []

    def make(render_mode=None):
        made.append(env(client, players=3, render_mode=render_mode))
        return made[-1]

    render_test(make)
    for e in made:
        e.close()
    e = raw_env(client, players=3, render_mode=mode)
    e.reset(seed=1)
    out = e.render()
    e.close()
    if mode == "ansi":
        assert isinstance(out, str) and "legal" in out
    else:
        assert out is None and "legal" in capsys.readouterr().out


def test_parallel_agents_not_to_act_have_the_noop_mask(client: dgenv.Client) -> None:
    # Wrappers that sample an action for every agent (TorchRL's) need a legal one for each.
    penv = parallel_env(client, players=3, deals=1)
    obs, infos = penv.reset(seed=2)
    rng = np.random.default_rng(0)
    steps = 0
    while penv.agents:
        (actor,) = [a for a in penv.agents if infos[a]["to_act"]]
        for a in penv.agents:
            m = obs[a]["action_mask"]
            assert m.dtype == np.int8 and m.any(), f"{a}: no legal action"
            if a != actor:
                assert np.flatnonzero(m).tolist() == [NOOP]
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in penv.agents}
        obs, rewards, terms, truncs, infos = penv.step(actions)
        steps += 1
    assert steps == 3 * 15 and all(terms.values())
    penv.close()


def test_parallel_env_passes_parallel_seed_test(client: dgenv.Client) -> None:
    # parallel_seed_test samples unmasked actions: the default "terminate" convention applies.
    parallel_seed_test(lambda: parallel_env(client), num_cycles=50)


def test_aec_env_passes_seed_test_wrapped(client: dgenv.Client) -> None:
    seed_test(lambda: env(client), num_cycles=100)


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


def test_torchrl_pettingzoo_wrapper_runs_the_parallel_env(client: dgenv.Client) -> None:
    # TorchRL samples an action for every agent from its mask at every step.
    import warnings

    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchRL warns about any PettingZoo other than the one it tests
        tenv = PettingZooWrapper(parallel_env(client, players=3, deals=1, seed=1), categorical_actions=True,
                                 return_state=False)
    try:
        check_env_specs(tenv)
        td = tenv.rollout(60, break_when_any_done=False)  # past the game's end (45 moves): a reset too
        info = td["next", "player", "info"]
        assert not info["illegal_action"].any(), "TorchRL drew an illegal action"
        assert info["to_act"].sum() == 60  # one agent acts per step
        assert td["next", "done"].sum() == 1
    finally:
        tenv.close()
