"""sb3-contrib MaskablePPO training speed on dgenv.sb3.VecEnv (env-steps/s, learning included).

4 players, one learner seat against the heuristic bots, torch on the CPU with
one thread, the default MlpPolicy (64x64).

    python benchmarks/bench_sb3.py [NUM_ENVS] [STEPS]
"""

from __future__ import annotations

import sys
import time

import torch
from sb3_contrib import MaskablePPO

import dgenv
from dgenv.sb3 import VecEnv


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 65_536
    torch.set_num_threads(1)
    with dgenv.serve() as srv:
        venv = VecEnv(n, srv, players=4, opponent="heuristic", reward_scale=0.01, seed=1)
        model = MaskablePPO("MlpPolicy", venv, n_steps=128, batch_size=1024, device="cpu", seed=1)
        model.learn(n * 128)  # warm-up: one rollout and update
        t0 = time.perf_counter()
        model.learn(steps, reset_num_timesteps=False)
        dt = time.perf_counter() - t0
        print(f"MaskablePPO, {n} envs, n_steps=128: {steps} env-steps in {dt:.1f}s = {steps / dt:,.0f} env-steps/s")
        venv.close()


if __name__ == "__main__":
    main()
