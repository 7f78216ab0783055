"""The pyspiel bridge is game-neutral: the test game gets a pyspiel game from the same code.

``nim`` is registered only in a test build of libdgenv (``go build -tags
testgame``): nothing in python/ knows it. Its explicit-chance states (the
first seat is a chance node; env/testgame/chance.go) become the pyspiel game
``python_nim`` through :func:`dgenv.openspiel.register_game`, sized from the
engine, and pass OpenSpiel's own checks; a game the engine does not serve
with explicit chance states is refused by name (every shipped game has
them now; cmd/libdgenv's TestStateCallsTakeAGameSpec refuses one without). Each check runs in a child process,
which loads that library (one Go runtime per process).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pyspiel  # noqa: F401  (the "test" extra installs open_spiel)

from dgenv.server import find_repo


@pytest.fixture(scope="module")
def nim_library() -> Path:
    """A libdgenv built with the test game (``-tags testgame``)."""
    repo = find_repo(Path(__file__).resolve().parent)
    assert repo is not None
    go = shutil.which("go")
    assert go is not None, "go is needed to build the test game's library"
    out = repo / "bin" / "libdgenv-testgame.so"
    r = subprocess.run([go, "build", "-tags", "testgame", "-buildmode=c-shared", "-o", str(out), "./cmd/libdgenv"],
                       cwd=repo, capture_output=True, text=True, timeout=600)
    out.with_suffix(".h").unlink(missing_ok=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def run_with(lib: Path, code: str) -> str:
    env = {**os.environ, "DGENV_LIB": str(lib)}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    return r.stdout


def test_the_test_game_is_a_pyspiel_game_from_the_same_code(nim_library: Path) -> None:
    out = run_with(nim_library, """
        import numpy as np
        import pyspiel
        import dgenv.openspiel as o

        o.register_game("nim")
        g = pyspiel.load_game("python_nim(players=3,heap=12)")
        print("sizes", g.num_players(), g.num_distinct_actions(), g.max_chance_outcomes(), g.max_game_length(),
              g.min_utility(), g.max_utility(), g.observation_tensor_shape(), g.information_state_tensor_shape())
        s = g.new_initial_state()
        print("first", s.is_chance_node(), s.chance_outcomes(), s.action_to_string(-1, 2))
        s.apply_action(2)
        print("then", s.current_player(), s.legal_actions(), s.action_to_string(2, 1))
        pyspiel.random_sim_test(g, num_sims=20, serialize=True, verbose=False)
        pyspiel.random_sim_test(pyspiel.load_game("python_nim(terminal_rewards=true)"), num_sims=5, serialize=True, verbose=False)
        d = g.deserialize_state(s.serialize())
        print("round trip", str(d) == str(s), d.history() == s.history())
        from open_spiel.python.algorithms import evaluate_bots, mcts
        rng = np.random.RandomState(0)
        two = pyspiel.load_game("python_nim(terminal_rewards=true)")
        bots = [mcts.MCTSBot(two, 2.0, 20, o.RolloutEvaluator(2, rng), random_state=rng)] * 2
        print("mcts", sum(evaluate_bots.evaluate_bots(two.new_initial_state(), bots, rng)))
    """)
    assert "sizes 3 3 3 12 0.0 1.0 [5] [44]" in out, out  # obs 2+3; + 3 first seats + 12 moves x 3
    assert "first True [(0, 0.3333333333333333), (1, 0.3333333333333333), (2, 0.3333333333333333)] seat 2 moves first" in out, out
    assert "then 2 [0, 1, 2] take 2" in out, out
    assert "round trip True True" in out and "mcts 1.0" in out, out


def test_a_game_the_engine_cannot_bridge_is_refused_by_name(nim_library: Path) -> None:
    out = run_with(nim_library, """
        import dgenv
        import dgenv.openspiel as o

        try:
            o.register_game("chess")
        except dgenv.DgenvError as e:
            print("refused:", e)
        print("duel registered once:", o.register_game("duel") is o.DuelGame)
    """)
    assert "refused:" in out and "chess" in out, out
    assert "duel registered once: True" in out, out
