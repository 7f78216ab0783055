"""The pyspiel game python_david_goliath, tested with OpenSpiel's own tools."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

import pyspiel  # the "test" extra installs open_spiel

import dgenv.openspiel  # noqa: F401  (registers the game)

NAME = dgenv.openspiel.GAME_NAME


def load(players: int = 4, deals: int = 1, **kw):
    params = ",".join(f"{k}={v}" for k, v in dict(players=players, deals=deals, **kw).items())
    return pyspiel.load_game(f"{NAME}({params})")


def test_the_game_is_registered_with_its_parameters_and_sizes() -> None:
    assert NAME in pyspiel.registered_names()
    g = pyspiel.load_game(f"{NAME}(players=4)")
    t = g.get_type()
    assert t.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert t.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert g.num_players() == 4 and g.num_distinct_actions() == 90 and g.max_chance_outcomes() == 90
    assert g.max_game_length() == 4 * 15 * 4  # deals default to the player count
    obs_size = dgenv.local().make(players=4).obs_size
    assert g.observation_tensor_shape() == [obs_size]
    assert g.information_state_tensor_shape() == [obs_size + 90 * (15 + 4)]
    with pytest.raises(Exception):
        pyspiel.load_game(f"{NAME}(players=7)")


@pytest.mark.parametrize("players", [3, 4, 5, 6])
def test_openspiels_random_simulation_test_passes(players: int) -> None:
    # OpenSpiel's own checks: clone, serialize/deserialize, legal-action
    # masks, observation and information-state tensors and strings for every
    # player, rewards summing to returns, chance outcomes summing to 1.
    pyspiel.random_sim_test(load(players, deals=2), num_sims=2, serialize=True, verbose=False)
    pyspiel.random_sim_test(load(players, deals=2, terminal_rewards=True), num_sims=1, serialize=True, verbose=False)


def test_random_simulation_of_a_full_length_game() -> None:
    pyspiel.random_sim_test(pyspiel.load_game(f"{NAME}(players=4,first_dealer=2)"), num_sims=1, serialize=True, verbose=False)


def random_states(game, n: int, seed: int):
    """States met along random games."""
    rng = random.Random(seed)
    out = []
    s = game.new_initial_state()
    while len(out) < n:
        if s.is_terminal():
            s = game.new_initial_state()
        if rng.random() < 0.05:
            out.append(s.clone())
        s.apply_action(rng.choice(s.legal_actions()))
    return out


@pytest.mark.parametrize("players", [3, 6])
def test_resample_from_infostate_keeps_what_the_player_knows_and_nothing_more(players: int) -> None:
    g = load(players, deals=2)
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    changed = 0
    for s in random_states(g, 12, seed=players):
        if s.is_terminal():
            continue
        for p in range(players):
            r = s.resample_from_infostate(p, sampler)
            assert r.information_state_string(p) == s.information_state_string(p)
            assert r.observation_string(p) == s.observation_string(p)
            assert r.information_state_tensor(p) == s.information_state_tensor(p)
            assert r.observation_tensor(p) == s.observation_tensor(p)
            assert r.current_player() == s.current_player() and r.legal_actions(p) == s.legal_actions(p)
            assert len(r.history()) == len(s.history()) and r.move_number() == s.move_number()
            # its history is the resampled world's: replaying it gives the same state
            again = g.new_initial_state()
            for a in r.history():
                again.apply_action(a)
            assert str(again) == str(r)
            changed += str(r) != str(s)
    assert changed > 0


def test_observations_of_other_players_do_not_show_hidden_cards() -> None:
    g = load(4)
    s = random_states(g, 3, seed=1)[-1]
    while s.is_chance_node():
        s.apply_action(s.legal_actions()[0])
    me = s.current_player()
    other = (me + 1) % 4
    hand = dgenv.local().make(players=4).spec.obs.section("hand")
    mine = np.array(s.observation_tensor(me))[hand.offset : hand.offset + 90]
    theirs = np.array(s.observation_tensor(other))[hand.offset : hand.offset + 90]
    assert np.array_equal(np.flatnonzero(mine), s.legal_actions() if len(s.legal_actions()) == mine.sum() else np.flatnonzero(mine))
    assert not (mine.astype(bool) & theirs.astype(bool)).any()  # each sees only its own hand
    for q in range(4):
        for p in range(4):
            if p != q:
                assert f"hand: " in s.observation_string(q)


def test_clone_serialize_and_pickle_round_trip() -> None:
    g = load(5, deals=2)
    for s in random_states(g, 5, seed=3):
        c = s.clone()
        assert str(c) == str(s) and c.history() == s.history()
        d = g.deserialize_state(s.serialize())
        assert str(d) == str(s) and d.history() == s.history() and d.returns() == s.returns()
        u = pickle.loads(pickle.dumps(s))
        assert str(u) == str(s) and u.history() == s.history() and u.legal_actions() == s.legal_actions()
        if not s.is_terminal():
            a = s.legal_actions()[0]
            c.apply_action(a)
            assert c.history() != s.history()  # independent of its original


def test_rl_environment_with_dqn_and_nfsp_agents() -> None:
    import torch
    from open_spiel.python import rl_environment
    from open_spiel.python.pytorch import dqn, nfsp

    torch.manual_seed(0)
    game = load(3)
    env = rl_environment.Environment(game, seed=1)
    size = env.observation_spec()["info_state"][0]
    assert size == game.information_state_tensor_shape()[0]
    n = env.action_spec()["num_actions"]
    agents = [
        dqn.DQN(0, size, n, hidden_layers_sizes=[32], batch_size=16, min_buffer_size_to_learn=32,
                learn_every=4, replay_buffer_capacity=500, epsilon_decay_duration=200),
        nfsp.NFSP(1, size, n, hidden_layers_sizes=[32], reservoir_buffer_capacity=500, anticipatory_param=0.1,
                  batch_size=16, min_buffer_size_to_learn=32, learn_every=4, replay_buffer_capacity=500),
        dqn.DQN(2, size, n, hidden_layers_sizes=[32], batch_size=16, min_buffer_size_to_learn=32,
                learn_every=4, replay_buffer_capacity=500, epsilon_decay_duration=200),
    ]
    totals = np.zeros(3)
    for _ in range(3):
        ts = env.reset()
        while not ts.last():
            p = ts.observations["current_player"]
            out = agents[p].step(ts)
            assert out.action in ts.observations["legal_actions"][p]
            ts = env.step([out.action])
        for a in agents:
            a.step(ts)
        totals += ts.rewards
    assert agents[0].step_counter > 0 and (totals >= 0).all()


def test_mcts_and_ismcts_bots_play_whole_games_with_evaluate_bots() -> None:
    from open_spiel.python.algorithms import evaluate_bots, ismcts, mcts
    from open_spiel.python.bots import uniform_random

    class ISMCTSBot(ismcts.ISMCTSBot):
        # OpenSpiel's Python ISMCTSBot lacks the restart_at evaluate_bots calls;
        # its search starts afresh at every step anyway.
        def restart_at(self, state) -> None:
            self.reset()

    game = load(3, terminal_rewards=True)  # MCTSBot wants terminal rewards
    rng = np.random.RandomState(0)
    ev = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=rng)
    go_ev = dgenv.openspiel.RolloutEvaluator(n_rollouts=2, random_state=rng)
    bots = [
        mcts.MCTSBot(game, uct_c=2.0, max_simulations=8, evaluator=ev, random_state=rng),
        ISMCTSBot(game, go_ev, uct_c=2.0, max_simulations=30, random_state=rng),
        uniform_random.UniformRandomBot(2, rng),
    ]
    for _ in range(2):
        returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, rng)
        assert len(returns) == 3 and sum(returns) > 0


def test_ismcts_plays_a_whole_game_of_the_rewards_model() -> None:
    from open_spiel.python.algorithms import ismcts, mcts

    game = load(4, deals=2)
    rng = np.random.RandomState(1)
    bot = ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, rng), uct_c=2.0, max_simulations=10, random_state=rng)
    s = game.new_initial_state()
    while not s.is_terminal():
        if s.is_chance_node():
            s.apply_action(rng.choice(s.legal_actions()))
        elif s.current_player() == 0:
            a = bot.step(s)
            assert a in s.legal_actions()
            s.apply_action(a)
        else:
            s.apply_action(rng.choice(s.legal_actions()))
    assert len(s.history()) == 2 * 4 * 15 * 2  # every card dealt, then played


def test_rollout_evaluator_plays_to_the_end_and_leaves_the_state_alone() -> None:
    game = load(4, deals=2)
    s = random_states(game, 2, seed=5)[-1]
    before = (str(s), s.history())
    ev = dgenv.openspiel.RolloutEvaluator(n_rollouts=4, random_state=np.random.RandomState(0))
    v = ev.evaluate(s)
    assert v.shape == (4,) and (v >= np.array(s.returns())).all() and v.sum() > sum(s.returns())
    assert (str(s), s.history()) == before
    prior = ev.prior(s)
    assert abs(sum(p for _, p in prior) - 1) < 1e-9 and [a for a, _ in prior] == s.legal_actions()


def test_openspiels_vector_env_steps_the_game() -> None:
    from open_spiel.python import rl_agent, rl_environment, vector_env

    game = load(3)
    envs = vector_env.SyncVectorEnv([rl_environment.Environment(game, seed=i) for i in range(3)])
    ts = envs.reset()
    rng = random.Random(0)
    ended = 0
    for _ in range(200):  # past the end of every game (3 x 15 decisions)
        outs = []
        for t in ts:
            p = t.observations["current_player"]
            outs.append(rl_agent.StepOutput(action=rng.choice(t.observations["legal_actions"][p]), probs=None))
        ts, rewards, done, _ = envs.step(outs, reset_if_done=True)
        ended += sum(done)
    assert ended >= 3


def _evil_state_text(marker) -> str:
    """OpenSpiel's Python-game serialization with a pickled __dict__ that would create ``marker``."""
    import base64
    import os

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    attrs = base64.b64encode(pickle.dumps({"_x": Evil()})).decode()
    return f"history=\nmove_number=0\n__dict__={attrs}"


def test_deserialize_state_refuses_a_pickled_dict_and_runs_none_of_it(tmp_path) -> None:
    marker = tmp_path / "ran"
    g = load(3)
    with pytest.raises(pyspiel.SpielError, match="pickle"):
        g.deserialize_state(_evil_state_text(marker))
    assert not marker.exists(), "the state text ran code"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "david-goliath-spiel v1\nparams 4 1 0\nactions\n",  # another game's parameters
        "david-goliath-spiel v1\nparams 3 1 0\nactions 90\n",  # not a card
        "david-goliath-spiel v1\nparams 3 1 0\nactions 1 1\n",  # the same card dealt twice
        "david-goliath-spiel v1\nparams 3 1 0\nactions x\n",
        "david-goliath-spiel v1\nparams 3 1 0\n",
    ],
)
def test_deserialize_state_refuses_what_the_engine_did_not_write(text: str) -> None:
    with pytest.raises(pyspiel.SpielError):
        load(3).deserialize_state(text)


def test_serialize_is_the_engines_text_and_round_trips_mid_deal() -> None:
    g = load(3)
    s = g.new_initial_state()
    for a in s.legal_actions()[:7]:  # a deal in progress: 7 cards dealt
        s.apply_action(a)
    text = s.serialize()
    assert text.startswith("david-goliath-spiel v1\n") and "__dict__" not in text
    d = g.deserialize_state(text)
    assert str(d) == str(s) and d.history() == s.history() and d.legal_actions() == s.legal_actions()


def test_cpp_ismcts_bot_raises_instead_of_killing_the_interpreter() -> None:
    # pyspiel.ISMCTSBot.step releases the GIL and then calls the game's Python
    # observer without it: a segfault. Run it in a child, which must get a
    # Python exception and exit normally.
    import subprocess
    import sys

    code = """
import pyspiel
import dgenv.openspiel
game = pyspiel.load_game("python_david_goliath(players=3,deals=1,terminal_rewards=true)")
bot = pyspiel.ISMCTSBot(1, pyspiel.RandomRolloutEvaluator(1, 0), 2.0, 10, -1,
                        pyspiel.ISMCTSFinalPolicyType.NORMALIZED_VISIT_COUNT, False, False)
s = game.new_initial_state()
while s.is_chance_node():
    s.apply_action(s.legal_actions()[0])
calls = [lambda: bot.step(s), lambda: bot.step_with_policy(s), lambda: bot.get_policy(s),
         lambda: pyspiel.evaluate_bots(game.new_initial_state(), [bot] * 3, 1)]
for call in calls:
    try:
        call()
    except pyspiel.SpielError as e:
        assert "open_spiel.python.algorithms.ismcts" in str(e), e
    else:
        raise SystemExit("no error")
kuhn = pyspiel.load_game("kuhn_poker").new_initial_state()
kuhn.apply_action(0)
kuhn.apply_action(1)
bot.step(kuhn)  # other games still reach the C++ bot
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", f"exit {r.returncode}\n{r.stdout}\n{r.stderr[-2000:]}"
