"""OpenSpiel's own random-simulation test, timed: oh_hell against python_david_goliath.

    python benchmarks/random_sim.py --seconds 6

``pyspiel.random_sim_test`` plays random games and, at every state, checks
the legal actions, the strings and tensors of every player, clones and
returns (what OpenSpiel's C++ tests run on every game). It prints games/s and
actions/s (a game of the card game is about 8 times as many actions as one
of oh_hell, so actions/s is the rate to compare).
"""

from __future__ import annotations

import argparse
import os
import random
import time

import pyspiel

import dgenv.openspiel  # noqa: F401  (registers python_david_goliath)


def actions_per_game(game: pyspiel.Game, games: int = 20, seed: int = 1) -> float:
    rng = random.Random(seed)
    total = 0
    for _ in range(games):
        s = game.new_initial_state()
        while not s.is_terminal():
            if s.is_chance_node():
                outcomes, probs = zip(*s.chance_outcomes())
                s.apply_action(rng.choices(outcomes, probs)[0])
            else:
                s.apply_action(rng.choice(s.legal_actions()))
        total += len(s.history())
    return total / games


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--players", type=int, default=4)
    a = p.parse_args()
    rates = {}
    for name in (f"oh_hell(players={a.players})", f"python_david_goliath(players={a.players})"):
        g = pyspiel.load_game(name)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < a.seconds:
            pyspiel.random_sim_test(g, num_sims=2, serialize=False, verbose=False)
            n += 2
        gps = n / (time.perf_counter() - t0)
        apg = actions_per_game(g)
        rates[name] = gps * apg
        print(f"{name:<36} {gps:10.1f} games/s  {apg:6.1f} actions/game  {gps * apg:10.0f} actions/s")
    ours, ref = rates[f"python_david_goliath(players={a.players})"], rates[f"oh_hell(players={a.players})"]
    print(f"python_david_goliath / oh_hell, actions/s: {ours / ref:.3f}  (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
