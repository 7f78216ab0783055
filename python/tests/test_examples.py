"""The scripts of python/examples/ run as a user runs them (python FILE ...),
briefly: each finishes and reports what its docstring promises."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SRC = Path(__file__).resolve().parent.parent / "src"


def _run(script: str, *args: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *args], env=env, capture_output=True, text=True,
                       timeout=600, cwd=EXAMPLES)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    last = [x for x in r.stdout.splitlines() if x.startswith("{")][-1]
    return json.loads(last)


def _points(d: dict) -> float:
    m = d["points"]["mean"]
    assert math.isfinite(m) and math.isfinite(d["points"]["ci95"]), d
    return m


def test_cleanrl_masked_ppo_trains_and_evaluates_before_and_after() -> None:
    out = _run("cleanrl_ppo_masked.py", "--total-steps", "2048", "--num-envs", "16", "--num-steps", "32",
               "--eval-games", "20", "--eval-every", "2")  # 4 updates: one evaluation on the way
    assert out["steps"] == 2048 and out["before"]["games"] == 20
    assert [c["steps"] for c in out["curve"]] == [1024] and _points(out["curve"][0]) > 0
    assert _points(out["before"]) > 0 and _points(out["after"]) > 0


def test_sb3_maskable_ppo_trains_and_evaluates_before_and_after() -> None:
    out = _run("sb3_maskable_ppo.py", "--total-steps", "2048", "--num-envs", "16", "--n-steps", "64",
               "--batch-size", "256", "--epochs", "1", "--eval-games", "20", "--eval-every", "1")
    assert out["steps"] >= 2048
    assert [c["steps"] for c in out["curve"]] == [1024, 2048] and all(_points(c) > 0 for c in out["curve"])
    assert _points(out["before"]) > 0 and _points(out["after"]) > 0


def test_torchrl_ppo_over_the_vector_env_reports_finished_games_points() -> None:
    # 16 envs x 64 steps: every env finishes a game (a game is 60 learner moves at 4 players).
    out = _run("torchrl_ppo_vector.py", "--frames", "1024", "--num-envs", "16", "--frames-per-batch", "1024",
               "--minibatch", "256", "--epochs", "1", "--eval-games", "20")
    assert out["frames"] == 1024 and out["games"] >= 16
    # The done rows' scores come from the VectorEnv's info["final_info"] (TorchRL reads the finished game there).
    assert out["points"] is not None and out["points"] > 0, out
    assert _points(out["before"]) > 0 and _points(out["after"]) > 0


def test_torchrl_over_the_aec_env_plays_only_legal_cards() -> None:
    out = _run("torchrl_aec_selfplay.py", "--games", "2", "--games-per-iteration", "2")
    assert out["games"] == 2 and out["legal"] == 1.0


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_every_example_has_a_test_here(script: str) -> None:
    assert f'"{script}"' in Path(__file__).read_text(), f"examples/{script} has no test in {Path(__file__).name}"
