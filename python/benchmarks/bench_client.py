#!/usr/bin/env python3
"""Random legal play through the Python client, and the same in OpenSpiel.

    python benchmarks/bench_client.py                       # starts a server with dgenv.serve()
    python benchmarks/bench_client.py --url http://127.0.0.1:8080 --seconds 10

For each N it creates a session of N 4-player games (self-play: every seat is
played by the client), then steps it for ``--seconds``: each step draws one
uniformly random legal card per env from the mask, vectorised (random byte
scores, masked, max per row), sends the [N] actions and decodes the whole answer (obs as
the wire's uint8, mask, player, rewards, done, scores, episode). It reports
env-steps/s (one env-step = one card played in one game).

With --pipelined, the same N games are also run as dgenv.AsyncBatchEnv's two
batches of N/2 (EnvPool's async pattern: the client picks actions for one
batch while the server steps the other). --packing bits has obs and mask
sent bit-packed and unpacked by the client.

The OpenSpiel baseline plays oh_hell (4 players) through pyspiel the way a
user would: chance nodes sampled, and at each decision the acting player's
information_state_tensor and legal_actions read, then a random legal action
applied. One env-step = one player decision (bids and cards).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from typing import Optional

import numpy as np

import dgenv


class RandomLegal:
    """Uniformly random legal actions for a [N, 90] bool mask, vectorised.

    Each legal card gets a random byte as its score (illegal ones 0) and the
    highest score wins: the key ``score << 8 | card`` makes that one ``max``
    over each row, with ties (1 in 256) going to the higher card id.
    """

    def __init__(self, n: int, num_actions: int = 90, seed: int = 0) -> None:
        self.bits = np.random.SFC64(seed)
        self.n, self.a = n, num_actions
        self.words = (n * num_actions + 7) // 8
        self.keys = np.empty((n, num_actions), dtype=np.uint16)
        self.ids = np.arange(num_actions, dtype=np.uint16)

    def __call__(self, mask: np.ndarray) -> np.ndarray:
        noise = self.bits.random_raw(self.words).view(np.uint8)[: self.n * self.a].reshape(self.n, self.a)
        k = self.keys
        np.left_shift(noise, 8, out=k, dtype=np.uint16)
        k |= self.ids
        k *= mask.view(np.uint8)
        return k.max(axis=1) & 0xFF


def _proc_cpu(pid: Optional[int]) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (Linux), or 0."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


SERVER_PID: Optional[int] = None  # set when this script started the server


def bench_sync(client: dgenv.Client, n: int, players: int, seconds: float, seed: int,
               packing: str | None = None, obs_dtype=None) -> dict:
    env = client.make(players=players, num_envs=n, seed=seed, obs_dtype=obs_dtype, packing=packing)
    pick = RandomLegal(n, seed=seed)
    try:
        b = env.reset()
        for _ in range(3):  # warm-up
            b = env.step(pick(b.mask))
        steps = 0
        games = 0
        s0, c0 = _proc_cpu(SERVER_PID), time.process_time()
        t0 = time.perf_counter()
        while True:
            b = env.step(pick(b.mask))
            steps += 1
            games += int(b.done.sum())
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        scpu, ccpu = _proc_cpu(SERVER_PID) - s0, time.process_time() - c0
        return {"mode": "sync", "num_envs": n, "requests": steps, "seconds": dt,
                "req_per_s": steps / dt, "env_steps_per_s": steps * n / dt, "games": games,
                "server_cpu_us_per_env_step": 1e6 * scpu / (steps * n) if SERVER_PID else None,
                "client_cpu_us_per_env_step": 1e6 * ccpu / (steps * n)}
    finally:
        env.close()


def bench_pipelined(client: dgenv.Client, n: int, players: int, seconds: float, seed: int,
                    packing: str | None = None, obs_dtype=None) -> dict:
    """N games as dgenv.AsyncBatchEnv's two batches of N/2: pick for one while the server steps the other."""
    h = n // 2
    pool = dgenv.AsyncBatchEnv(client, num_envs=2 * h, batch_size=h, seed=seed, players=players,
                               obs_dtype=obs_dtype, packing=packing)
    picks = [RandomLegal(h, seed=seed), RandomLegal(h, seed=seed + 1)]
    try:
        pool.async_reset()
        rounds = 0
        t0 = time.perf_counter()
        while True:
            env_id, b = pool.recv()
            pool.send(picks[int(env_id[0]) // h](b.mask), env_id)
            rounds += 1
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        return {"mode": "pipelined", "num_envs": 2 * h, "requests": rounds, "seconds": dt,
                "req_per_s": rounds / dt, "env_steps_per_s": rounds * h / dt}
    finally:
        pool.close()


def bench_openspiel(seconds: float, seed: int) -> Optional[dict]:
    try:
        import pyspiel
    except ImportError:
        print("open_spiel is not installed (pip install open_spiel): skipping its baseline", file=sys.stderr)
        return None
    game = pyspiel.load_game("oh_hell", {"players": 4})
    rng = random.Random(seed)
    state = game.new_initial_state()
    steps = games = 0
    t0 = time.perf_counter()
    while True:
        for _ in range(1000):
            if state.is_terminal():
                games += 1
                state = game.new_initial_state()
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes())
                state.apply_action(rng.choices(outcomes, probs)[0])
                continue
            p = state.current_player()
            state.information_state_tensor(p)  # what an agent observes
            state.apply_action(rng.choice(state.legal_actions(p)))
            steps += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            break
    return {"mode": "openspiel oh_hell", "num_envs": 1, "seconds": dt, "env_steps_per_s": steps / dt,
            "games": games, "obs_size": game.information_state_tensor_shape()[0]}


def bench_engine(n: int, players: int, seconds: float) -> Optional[dict]:
    """The Go engine's own rate (cmd/dgbench, in-process random play): the ceiling for the client."""
    import shutil
    import subprocess

    from dgenv.server import find_repo

    repo = find_repo()
    exe = None
    if repo is not None and (repo / "bin" / "dgbench").is_file():
        exe = str(repo / "bin" / "dgbench")
    exe = exe or shutil.which("dgbench")
    if exe is None:
        return None
    out = subprocess.run([exe, "-players", str(players), "-envs", str(n), "-seconds", str(seconds)],
                         capture_output=True, text=True).stdout
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    if "steps_per_sec" not in fields:
        return None
    return {"mode": "go engine in-process (dgbench)", "num_envs": n, "env_steps_per_s": float(fields["steps_per_sec"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="use this running server instead of starting one")
    ap.add_argument("--transport", choices=("tcp", "unix"), default="tcp",
                    help="how the started server listens (dgenv.serve's transport)")
    ap.add_argument("--packing", choices=("none", "bits"), default="none",
                    help="wire form of obs and mask (Client.make's packing); bits are unpacked by the client")
    ap.add_argument("--float32", action="store_true",
                    help="have the client return float32 observations (Client.make's default) instead of the wire's uint8")
    ap.add_argument("--sizes", default="1,64,1024,4096", help="comma-separated N")
    ap.add_argument("--players", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5.0, help="measuring time per point")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pipelined", action="store_true",
                    help="also run N as dgenv.AsyncBatchEnv's two overlapping batches of N/2 (EnvPool-style recv/send)")
    ap.add_argument("--no-openspiel", action="store_true")
    ap.add_argument("--no-engine", action="store_true", help="skip the in-process Go engine reference (bin/dgbench)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]

    global SERVER_PID
    srv = None
    client = dgenv.connect(args.url) if args.url else (srv := dgenv.serve(transport=args.transport))
    SERVER_PID = srv.pid if srv is not None else None
    results = []
    try:
        for n in sizes:
            r = bench_sync(client, n, args.players, args.seconds, args.seed,
                           packing=None if args.packing == "none" else args.packing,
                           obs_dtype=np.float32 if args.float32 else None)
            results.append(r)
            cpu = ""
            if r["server_cpu_us_per_env_step"] is not None:
                cpu = (f"  cpu per env-step: server {r['server_cpu_us_per_env_step']:.2f} us,"
                       f" client {r['client_cpu_us_per_env_step']:.2f} us")
            print(f"client  N={n:5d}  {r['env_steps_per_s']:>12,.0f} env-steps/s  ({r['req_per_s']:,.0f} steps/s){cpu}",
                  flush=True)
            if args.pipelined and n >= 64:
                r = bench_pipelined(client, n, args.players, args.seconds, args.seed,
                                    packing=None if args.packing == "none" else args.packing,
                                    obs_dtype=np.float32 if args.float32 else None)
                results.append(r)
                print(f"client  N={n:5d}  {r['env_steps_per_s']:>12,.0f} env-steps/s  pipelined (2 x N/2)", flush=True)
    finally:
        if srv is not None:
            srv.stop()
        else:
            client.close()
    eng = None if args.no_engine else bench_engine(max(sizes), args.players, args.seconds)
    if eng:
        results.append(eng)
        print(f"go engine in-process N={max(sizes)} (bin/dgbench, no HTTP, no Python)  {eng['env_steps_per_s']:>12,.0f} env-steps/s", flush=True)
    os_r = None if args.no_openspiel else bench_openspiel(args.seconds, args.seed)
    if os_r:
        results.append(os_r)
        print(f"openspiel oh_hell (pyspiel, 1 game)  {os_r['env_steps_per_s']:>12,.0f} env-steps/s", flush=True)
        best = max(r["env_steps_per_s"] for r in results
                   if r.get("num_envs") == max(sizes) and r["mode"] in ("sync", "pipelined"))
        print(f"client at N={max(sizes)} / openspiel: {best / os_r['env_steps_per_s']:.0f}x")
    meta = {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "load_avg": os.getloadavg()}
    print("machine:", json.dumps(meta))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
