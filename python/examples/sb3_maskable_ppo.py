"""SB3 MaskablePPO against the heuristic bots, with a before/after evaluation.

The recipe of docs/python.md ("A first run that learns"): ``zero_sum`` rewards
scaled by 0.1, a 256x256 MLP, learning rate 1e-3, 64 envs x 64 steps per
rollout, one torch thread. Before and after training it plays
``--eval-games`` games (the same deals both times) with the greedy masked
policy and prints the learner's mean points per game with its 95% interval::

    python python/examples/sb3_maskable_ppo.py --total-steps 150000   # about 5 minutes on 2 cores

``--eval-every K`` also evaluates every K rollouts (the curve). The last line
is JSON: ``{"before": {...}, "curve": [...], "after": {...}, "steps": ...,
"seconds": ...}`` (seconds of training, evaluations not counted).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Optional, Sequence

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback

import dgenv
from dgenv.sb3 import VecEnv
from dgenv.stats import estimate95


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--total-steps", type=int, default=150_000)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--n-steps", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--reward", default="zero_sum", choices=["points", "zero_sum"])
    p.add_argument("--reward-scale", type=float, default=0.1)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--players", type=int, default=4)
    p.add_argument("--eval-games", type=int, default=2000)
    p.add_argument("--eval-every", type=int, default=0, help="also evaluate every this many rollouts (0: only before and after)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--client", default="inproc", help="'inproc' (the engine in this process) or a server URL")
    return p.parse_args(argv)


def evaluate(model: MaskablePPO, client: Any, games: int, players: int, seed: int) -> dict[str, Any]:
    """The greedy masked policy's points per game over ``games`` games against the heuristic bots."""
    env = client.make(players=players, num_envs=games, seed=seed, learner_seats=[0], opponent="heuristic", reward="points")
    try:
        b = env.reset(seed=seed)
        got = np.zeros(games, bool)
        scores = np.zeros((games, players), np.int64)
        while not got.all():
            actions, _ = model.predict(b.obs, action_masks=b.mask, deterministic=True)
            b = env.step(actions)
            new = b.done & ~got
            scores[new] = b.scores[new]
            got |= b.done
    finally:
        env.close()
    return {"games": games, "points": estimate95(scores[:, 0]), "opponents_points": estimate95(scores[:, 1:].mean(axis=1))}


class Curve(BaseCallback):
    """Evaluates every ``every`` rollouts; the time spent evaluating is kept apart."""

    def __init__(self, every: int, run: Any) -> None:
        super().__init__()
        self.every, self.run = every, run
        self.rollouts = 0
        self.points: list[dict[str, Any]] = []
        self.t0 = time.perf_counter()
        self.t_eval = 0.0

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.rollouts += 1
        if self.every and self.rollouts % self.every == 0:
            te = time.perf_counter()
            trained = te - self.t0 - self.t_eval
            ev = self.run()
            self.t_eval += time.perf_counter() - te
            self.points.append({"steps": int(self.num_timesteps), "seconds": round(trained, 1), **ev})
            print(f"{self.num_timesteps} steps: {ev['points']['mean']:.3f} ± {ev['points']['ci95']:.3f} points/game", flush=True)


def main(argv: Optional[Sequence[str]] = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    client = dgenv.local() if args.client == "inproc" else dgenv.connect(args.client)
    venv = VecEnv(args.num_envs, client, players=args.players, opponent="heuristic", reward=args.reward,
                  reward_scale=args.reward_scale, seed=args.seed)
    model = MaskablePPO("MlpPolicy", venv, n_steps=args.n_steps, batch_size=args.batch_size, n_epochs=args.epochs,
                        learning_rate=args.lr, gamma=1.0, ent_coef=0.01, seed=args.seed, device="cpu",
                        policy_kwargs={"net_arch": [args.hidden, args.hidden]})
    eval_seed = args.seed + 10_000
    before = evaluate(model, client, args.eval_games, args.players, eval_seed) if args.eval_games else None
    if before:
        print(f"before: {before['points']['mean']:.3f} ± {before['points']['ci95']:.3f} points/game", flush=True)
    curve = Curve(args.eval_every if args.eval_games else 0, lambda: evaluate(model, client, args.eval_games, args.players, eval_seed))
    model.learn(args.total_steps, callback=curve)
    seconds = time.perf_counter() - curve.t0 - curve.t_eval
    venv.close()
    after = evaluate(model, client, args.eval_games, args.players, eval_seed) if args.eval_games else None
    if after:
        print(f"after: {after['points']['mean']:.3f} ± {after['points']['ci95']:.3f} points/game", flush=True)
    out = {"before": before, "curve": curve.points, "after": after, "steps": int(model.num_timesteps),
           "seconds": round(seconds, 1)}
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
