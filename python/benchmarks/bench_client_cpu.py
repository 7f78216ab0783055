#!/usr/bin/env python3
"""The client's own CPU time per step (``time.process_time``), at N = 1.

    python benchmarks/bench_client_cpu.py --url http://127.0.0.1:8080 [--steps 3000]

Wall-clock rates (bench_client.py) swing with the machine's load; the CPU
time the client process spends per request does much less, so this compares
two versions of the client's per-request path (run each against the same
server, alternating).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dgenv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--steps", type=int, default=3000)
    a = ap.parse_args()
    c = dgenv.connect(a.url)
    env = c.make(num_envs=1, seed=1, obs_dtype=None)
    b = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):  # warm up
        b = env.step(np.argmax(rng.random(b.mask.shape) * b.mask, axis=1))
    t = time.process_time()
    for _ in range(a.steps):
        b = env.step(np.argmax(rng.random(b.mask.shape) * b.mask, axis=1))
    print(f"{(time.process_time() - t) / a.steps * 1e6:.1f} us of client CPU per step (N=1, {dgenv.__file__})")
    env.close()


if __name__ == "__main__":
    main()
