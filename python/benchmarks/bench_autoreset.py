"""What Gymnasium's NEXT_STEP auto-reset costs against SAME_STEP (dgenv.gymnasium.VectorEnv).

Random legal play of one learner seat against the heuristic bots, N envs,
the two modes alternated ROUNDS times for SECONDS each. Prints env-steps/s
(VectorEnv.step calls x N) and learner moves/s (env-steps that played a card:
NEXT_STEP spends one step per finished game on its reset).

    python benchmarks/bench_autoreset.py [N] [SECONDS] [ROUNDS]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import dgenv
from dgenv.gymnasium import VectorEnv


def run(venv: VectorEnv, seconds: float) -> tuple[float, float]:
    obs, info = venv.reset(seed=1)
    rng = np.random.default_rng(0)
    n = venv.num_envs
    steps = moves = 0
    resetting = np.zeros(n, dtype=bool)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        mask = info["action_mask"]
        actions = np.argmax(rng.random(mask.shape) * mask, axis=1)
        obs, rew, term, trunc, info = venv.step(actions)
        steps += n
        moves += n - int(resetting.sum())
        resetting = term if venv.autoreset_mode.name == "NEXT_STEP" else resetting
    dt = time.perf_counter() - t0
    return steps / dt, moves / dt


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with dgenv.serve() as srv:
        envs = {m: VectorEnv(n, srv, opponent="heuristic", autoreset_mode=m) for m in ("same_step", "next_step")}
        res: dict[str, list[tuple[float, float]]] = {m: [] for m in envs}
        for _ in range(rounds):
            for m, venv in envs.items():
                res[m].append(run(venv, seconds))
        for m, r in res.items():
            s = ", ".join(f"{a:,.0f} ({b:,.0f})" for a, b in r)
            print(f"{m:9s} N={n}: env-steps/s (learner moves/s) per round: {s}")
        for venv in envs.values():
            venv.close()


if __name__ == "__main__":
    main()
