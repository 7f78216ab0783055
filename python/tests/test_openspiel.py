"""The OpenSpiel-style rl_environment: an OpenSpiel agent loop runs on it."""

from __future__ import annotations

import numpy as np
import pytest

import dgenv
from dgenv.openspiel import Environment, StepType, TimeStep


class RandomAgent:
    """OpenSpiel's random_agent.RandomAgent, reduced to what the loop uses."""

    def __init__(self, player_id: int, num_actions: int, seed: int) -> None:
        self.player_id = player_id
        self.num_actions = num_actions
        self.rng = np.random.default_rng(seed)
        self.seen_last = 0

    def step(self, time_step: TimeStep) -> int | None:
        if time_step.last():
            self.seen_last += 1
            return None
        cur = time_step.observations["current_player"]
        assert cur == self.player_id
        legal = time_step.observations["legal_actions"][self.player_id]
        assert legal, "the player to act has legal actions"
        info = time_step.observations["info_state"][self.player_id]
        assert len(info) > 0
        return int(self.rng.choice(legal))


def test_openspiel_agent_loop_plays_games(client: dgenv.Client) -> None:
    env = Environment(client, players=4, seed=3)
    n = env.num_players
    assert env.is_turn_based and env.action_spec()["num_actions"] == 90
    assert env.observation_spec()["info_state"] == (env.env.obs_size,)
    agents = [RandomAgent(p, env.action_spec()["num_actions"], seed=p) for p in range(n)]
    for episode in range(2):
        ts = env.reset()
        assert ts.first() and ts.step_type == StepType.FIRST and ts.rewards is None
        returns = np.zeros(n)
        steps = 0
        while not ts.last():
            p = ts.observations["current_player"]
            assert 0 <= p < n and ts.current_player() == p and not ts.is_simultaneous_move()
            others = [q for q in range(n) if q != p]
            assert all(ts.observations["legal_actions"][q] == [] for q in others)
            ts = env.step([agents[p].step(ts)])
            returns += ts.rewards
            steps += 1
            if not ts.last():
                assert ts.mid() and ts.discounts == [1.0] * n
        for a in agents:
            a.step(ts)  # OpenSpiel agents see the final TimeStep too
        assert steps == 4 * 15 * 4
        assert ts.current_player() == -4 and ts.discounts == [0.0] * n
        assert returns.tolist() == [float(s) for s in env.last_scores]
    assert all(a.seen_last == 2 for a in agents)
    # After LAST the next step starts a new game, as in OpenSpiel.
    assert env.step([0]).first()
    env.close()


def test_openspiel_illegal_action_raises_and_keeps_the_game(client: dgenv.Client) -> None:
    env = Environment(client, seed=1)
    ts = env.reset()
    p = ts.current_player()
    legal = set(ts.observations["legal_actions"][p])
    illegal = next(a for a in range(90) if a not in legal)
    with pytest.raises(dgenv.IllegalActionError):
        env.step([illegal])
    ts2 = env.step([min(legal)])
    assert ts2.mid()
    env.close()
