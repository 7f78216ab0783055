"""The pyspiel game python_duel (the duel, registered through the generic
register_game), tested with OpenSpiel's own tools."""

from __future__ import annotations

import random

import numpy as np

import pyspiel  # the "test" extra installs open_spiel

import dgenv.openspiel  # noqa: F401  (registers the games)

NAME = "python_duel"


def test_the_duel_is_registered_with_explicit_chance_and_its_sizes() -> None:
    assert NAME in pyspiel.registered_names()
    g = pyspiel.load_game(NAME)
    t = g.get_type()
    assert t.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert t.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert g.num_players() == 2 and g.num_distinct_actions() == 117 and g.max_chance_outcomes() == 64
    assert g.observation_tensor_shape() == [461] and g.information_state_tensor_shape() == [461 + 2 * 31 + 5]
    assert (g.min_utility(), g.max_utility()) == (-1.0, 1.0)
    s = g.new_initial_state()
    # the set-up's first obstacle: any of the 32 squares of ranks 3..6
    assert s.is_chance_node() and [a for a, _ in s.chance_outcomes()] == list(range(16, 48))


def test_openspiels_random_simulation_test_passes() -> None:
    # OpenSpiel's own checks: clone, serialize/deserialize, legal actions,
    # tensors and strings for both players, rewards adding up to returns,
    # chance outcomes adding up to 1; whole games and games drawn at the limit.
    pyspiel.random_sim_test(pyspiel.load_game(NAME), num_sims=2, serialize=True, verbose=False)
    pyspiel.random_sim_test(pyspiel.load_game(f"{NAME}(max_rounds=4)"), num_sims=3, serialize=True, verbose=False)
    pyspiel.random_sim_test(pyspiel.load_game(f"{NAME}(terminal_rewards=True)"), num_sims=1, serialize=True, verbose=False)


def random_states(game, n: int, seed: int):
    """States met along random games, chance nodes included."""
    rng = random.Random(seed)
    out = []
    s = game.new_initial_state()
    while len(out) < n:
        if s.is_terminal():
            s = game.new_initial_state()
        if rng.random() < 0.03:
            out.append(s.clone())
        s.apply_action(rng.choice(s.legal_actions()))
    return out


def test_resample_from_infostate_keeps_what_the_player_knows_and_deals_the_rest_anew() -> None:
    g = pyspiel.load_game(NAME)
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    changed = 0
    for s in random_states(g, 10, seed=2):
        if s.is_terminal():
            continue
        for p in range(2):
            r = s.resample_from_infostate(p, sampler)
            assert r.information_state_string(p) == s.information_state_string(p)
            assert r.observation_string(p) == s.observation_string(p)
            assert r.information_state_tensor(p) == s.information_state_tensor(p)
            assert r.observation_tensor(p) == s.observation_tensor(p)
            assert r.current_player() == s.current_player() and r.legal_actions(p) == s.legal_actions(p)
            assert len(r.history()) == len(s.history())
            again = g.new_initial_state()  # its history is the resampled world's
            for a in r.history():
                again.apply_action(a)
            assert str(again) == str(r)
            changed += str(r) != str(s)
    assert changed > 0


def test_mcts_and_ismcts_bots_play_whole_duels_with_evaluate_bots() -> None:
    from open_spiel.python.algorithms import evaluate_bots, ismcts, mcts

    class ISMCTSBot(ismcts.ISMCTSBot):
        # OpenSpiel's Python ISMCTSBot lacks the restart_at evaluate_bots calls;
        # its search starts afresh at every step anyway.
        def restart_at(self, state) -> None:
            self.reset()

    game = pyspiel.load_game(f"{NAME}(max_rounds=6,terminal_rewards=True)")  # short duels: CI has 2 cores
    rng = np.random.RandomState(0)
    mcts_bot = mcts.MCTSBot(game, uct_c=2.0, max_simulations=8,
                            evaluator=mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=rng), random_state=rng)
    ismcts_bot = ISMCTSBot(game, dgenv.openspiel.RolloutEvaluator(n_rollouts=2, random_state=rng), uct_c=2.0,
                           max_simulations=16, random_state=rng)
    for bots in ([mcts_bot, ismcts_bot], [ismcts_bot, mcts_bot]):  # both roles
        returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, rng)
        assert len(returns) == 2 and sum(returns) == 0 and returns[0] in (-1, 0, 1)
