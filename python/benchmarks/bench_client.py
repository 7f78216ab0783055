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

In process (the engine loaded into Python as bin/libdgenv.so, no server):

    python benchmarks/bench_client.py --inproc --sizes 1,4096     # dgenv.local() batches, and dgbench -mode inproc
    python benchmarks/bench_client.py --single                    # one game at a time, in process
    python benchmarks/bench_client.py --single --ismcts 1000      # ... and one ISMCTS move of 1,000 simulations

--inproc runs the batch points through dgenv.local() instead of a server, the
random legal actions drawn by the engine (LocalBatchEnv.random_actions) as
dgbench draws them.
--single measures one game at a time in process: LocalBatchEnv at N = 1 (the
float32 observation, as the adapters return it), the PettingZoo AEC adapter
(turns/s, observation read every turn), and the pyspiel game
python_david_goliath played like oh_hell (with and without reading the
information-state tensor), next to oh_hell itself in the same run.
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
    if isinstance(env, dgenv.inproc.LocalBatchEnv):
        # In process the engine draws the random legal actions (as dgbench does).
        buf = np.empty(n, dtype=np.int32)
        pick = lambda mask: env.random_actions(buf)  # noqa: E731
    else:
        pick = RandomLegal(n, seed=seed)
    try:
        b = env.reset()
        for _ in range(3):  # warm-up
            b = env.step(pick(b.mask))
        steps = 0
        games = 0
        in_step = 0.0  # wall time inside env.step (the transport and the engine, not the picking)
        s0, c0 = _proc_cpu(SERVER_PID), time.process_time()
        t0 = time.perf_counter()
        while True:
            a = pick(b.mask)
            t1 = time.perf_counter()
            b = env.step(a)
            in_step += time.perf_counter() - t1
            steps += 1
            games += int(b.done.sum())
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        scpu, ccpu = _proc_cpu(SERVER_PID) - s0, time.process_time() - c0
        return {"mode": "sync", "num_envs": n, "requests": steps, "seconds": dt,
                "req_per_s": steps / dt, "env_steps_per_s": steps * n / dt, "games": games,
                "env_steps_per_s_in_step": steps * n / in_step,
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


def _spiel_loop(game, seconds: float, seed: int, tensor: bool) -> tuple[float, int]:
    """Random play of a pyspiel game: decisions/s (chance sampled, the actor's infostate tensor read if ``tensor``)."""
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
            if tensor:
                state.information_state_tensor(p)
            state.apply_action(rng.choice(state.legal_actions(p)))
            steps += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return steps / dt, games


def bench_single(players: int, seconds: float, seed: int) -> list[dict]:
    """One game at a time in process: N = 1 steps, the PettingZoo AEC adapter, the pyspiel game vs oh_hell."""
    out: list[dict] = []
    # One game at a time, a random legal action picked as in the OpenSpiel
    # loop (Python's random over the legal list, here from the mask).
    rng = random.Random(seed)
    env = dgenv.local().make(players=players, num_envs=1, seed=seed)  # float32 obs, as the adapters return it
    act = np.zeros(1, np.int16)
    b = env.reset()
    steps = 0
    t0 = time.perf_counter()
    while True:
        for _ in range(1000):
            act[0] = rng.choice(np.flatnonzero(b.mask[0]).tolist())
            b = env.step(act)
        steps += 1000
        dt = time.perf_counter() - t0
        if dt >= seconds:
            break
    env.close()
    out.append({"mode": "inproc N=1 (float32 obs)", "num_envs": 1, "env_steps_per_s": steps / dt})
    try:
        from dgenv import pettingzoo as dg_pz
    except ImportError:
        dg_pz = None
    if dg_pz is not None:
        aec = dg_pz.raw_env("inproc", players=players)
        aec.reset(seed=seed)
        turns = 0
        t0 = time.perf_counter()
        while True:
            for _ in range(1000):
                obs, _r, term, trunc, _i = aec.last()
                if term or trunc:
                    aec.reset()
                    continue
                aec.step(rng.choice(np.flatnonzero(obs["action_mask"]).tolist()))
                turns += 1
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        aec.close()
        out.append({"mode": "pettingzoo AEC inproc (turns/s)", "num_envs": 1, "env_steps_per_s": turns / dt})
    try:
        import pyspiel

        from dgenv import openspiel as _registers_the_game  # noqa: F401
    except ImportError:
        print("open_spiel is not installed: skipping the pyspiel game", file=sys.stderr)
        return out
    dg = pyspiel.load_game(f"python_david_goliath(players={players})")
    oh = pyspiel.load_game("oh_hell", {"players": 4})
    for tensor in (True, False):
        what = "with infostate tensor" if tensor else "no tensor"
        for name, game in (("openspiel oh_hell", oh), ("pyspiel python_david_goliath", dg)):
            rate, games = _spiel_loop(game, seconds, seed, tensor)
            out.append({"mode": f"{name} ({what})", "num_envs": 1, "env_steps_per_s": rate, "games": games,
                        "infostate_size": game.information_state_tensor_shape()[0]})
    return out


def bench_ismcts(players: int, sims: int, seed: int) -> list[dict]:
    """Seconds per move of OpenSpiel's Python ISMCTSBot with ``sims`` simulations on the pyspiel game.

    With dgenv.openspiel.RolloutEvaluator (random rollouts played by the engine
    in one call; median of 3 moves) and with OpenSpiel's RandomRolloutEvaluator
    (rollouts through pyspiel from Python; one move). The moves are taken in the
    first deal of a 4-deal game, after 8 tricks' worth of cards.
    """
    try:
        import pyspiel
        from open_spiel.python.algorithms import ismcts, mcts

        from dgenv import openspiel as dg_os
    except ImportError:
        return []
    game = pyspiel.load_game(f"python_david_goliath(players={players})")
    rs = np.random.RandomState(seed)
    out = []
    for name, ev, moves in (("dgenv.openspiel.RolloutEvaluator", dg_os.RolloutEvaluator(1, rs), 3),
                            ("open_spiel RandomRolloutEvaluator", mcts.RandomRolloutEvaluator(1, rs), 1)):
        bot = ismcts.ISMCTSBot(game, ev, uct_c=2.0, max_simulations=sims, random_state=rs)
        times = []
        for _ in range(moves):
            s = game.new_initial_state()
            while s.is_chance_node() or len(s.history()) < 15 * players + 8 * players:
                legal = s.legal_actions()
                s.apply_action(legal[rs.randint(len(legal))])
            t0 = time.perf_counter()
            bot.step(s)
            times.append(time.perf_counter() - t0)
        out.append({"mode": f"ISMCTS one move, {sims} simulations, {name}", "num_envs": 1,
                    "seconds_per_move": float(np.median(times)), "moves": moves})
    return out


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
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([exe, "-players", str(players), "-envs", str(n), "-seconds", str(seconds)],
                         capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    if "steps_per_sec" not in fields:
        return None
    rate = float(fields["steps_per_sec"])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    steps = rate * float(fields.get("seconds", seconds))
    return {"mode": "go engine in-process (dgbench)", "num_envs": n, "env_steps_per_s": rate,
            "cpu_us_per_env_step": 1e6 * cpu / steps if steps else None}


def bench_ratio(n: int, players: int, seconds: float, seed: int, rounds: int) -> Optional[dict]:
    """dgenv.local() at N against dgbench -mode inproc, alternated ``rounds`` times.

    A busy machine's load shifts between runs, so pairs taken back to back are
    compared and their median reported, by wall-clock rate and by CPU time per
    env-step (all threads of each process: what the work costs, whoever else
    runs on the machine).
    """
    client = dgenv.local()
    pairs = []
    for _ in range(rounds):
        mine = bench_sync(client, n, players, seconds, seed)
        eng = bench_engine(n, players, seconds)
        if eng is None:
            return None
        pairs.append((mine["env_steps_per_s"], eng["env_steps_per_s"],
                      mine["client_cpu_us_per_env_step"], eng["cpu_us_per_env_step"], mine["env_steps_per_s_in_step"]))
    rates = sorted(p[0] / p[1] for p in pairs)
    cpus = sorted(p[3] / p[2] for p in pairs)
    steps_only = sorted(p[4] / p[1] for p in pairs)
    return {"mode": f"inproc / dgbench at N={n}, {rounds} alternating rounds", "num_envs": n,
            "pairs": pairs, "median_ratio": rates[len(rates) // 2], "median_cpu_ratio": cpus[len(cpus) // 2],
            "median_step_only_ratio": steps_only[len(steps_only) // 2]}


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
    ap.add_argument("--inproc", action="store_true",
                    help="run the batch points in this process (dgenv.local(), bin/libdgenv.so) instead of over HTTP")
    ap.add_argument("--single", action="store_true",
                    help="measure one game at a time in process: N=1, PettingZoo AEC, the pyspiel game vs oh_hell")
    ap.add_argument("--ismcts", type=int, default=0, metavar="SIMS",
                    help="also time one move of OpenSpiel's ISMCTSBot with SIMS simulations on the pyspiel game")
    ap.add_argument("--vs-engine", type=int, default=0, metavar="ROUNDS",
                    help="compare dgenv.local() at the largest N with dgbench -mode inproc, alternating ROUNDS times")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x and x != "0"]

    global SERVER_PID
    srv = None
    if args.inproc:
        client = dgenv.local()
    else:
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
            where = "inproc" if args.inproc else "client"
            print(f"{where}  N={n:5d}  {r['env_steps_per_s']:>12,.0f} env-steps/s  ({r['req_per_s']:,.0f} steps/s){cpu}",
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
    if args.vs_engine and sizes:
        r = bench_ratio(max(sizes), args.players, args.seconds, args.seed, args.vs_engine)
        if r:
            results.append(r)
            for m, e, mc, ec, ms in r["pairs"]:
                print(f"inproc N={max(sizes)} {m:>12,.0f}/s {mc:.3f} us cpu (in step() {ms:>12,.0f}/s)"
                      f"  dgbench {e:>12,.0f}/s {ec:.3f} us cpu  ratio {m / e:.2f} (cpu {ec / mc:.2f},"
                      f" step() alone {ms / e:.2f})", flush=True)
            print(f"median over {args.vs_engine} rounds, inproc / dgbench: {r['median_ratio']:.2f} by rate, "
                  f"{r['median_cpu_ratio']:.2f} by CPU time per env-step, "
                  f"{r['median_step_only_ratio']:.2f} counting only the time inside env.step()", flush=True)
    if args.single:
        for r in bench_single(args.players, args.seconds, args.seed):
            results.append(r)
            print(f"single game  {r['mode']:<55s} {r['env_steps_per_s']:>12,.0f} /s", flush=True)
    if args.ismcts:
        for r in bench_ismcts(args.players, args.ismcts, args.seed):
            results.append(r)
            print(f"{r['mode']}: {r['seconds_per_move']:.2f} s per move (median of {r['moves']})", flush=True)
    eng = None if args.no_engine or not sizes else bench_engine(max(sizes), args.players, args.seconds)
    if eng:
        results.append(eng)
        print(f"go engine in-process N={max(sizes)} (bin/dgbench, no HTTP, no Python)  {eng['env_steps_per_s']:>12,.0f} env-steps/s", flush=True)
    os_r = None if args.no_openspiel else bench_openspiel(args.seconds, args.seed)
    if os_r:
        results.append(os_r)
        print(f"openspiel oh_hell (pyspiel, 1 game)  {os_r['env_steps_per_s']:>12,.0f} env-steps/s", flush=True)
        batch = [r["env_steps_per_s"] for r in results
                 if sizes and r.get("num_envs") == max(sizes) and r["mode"] in ("sync", "pipelined")]
        if batch:
            print(f"client at N={max(sizes)} / openspiel: {max(batch) / os_r['env_steps_per_s']:.0f}x")
    if eng and args.inproc:
        top = [r["env_steps_per_s"] for r in results if r.get("num_envs") == max(sizes) and r["mode"] == "sync"]
        if top:
            print(f"inproc from Python at N={max(sizes)} / dgbench -mode inproc: {top[0] / eng['env_steps_per_s']:.2f}")
    meta = {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "load_avg": os.getloadavg()}
    print("machine:", json.dumps(meta))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
