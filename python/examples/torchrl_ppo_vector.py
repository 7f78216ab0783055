"""TorchRL PPO over dgenv's Gymnasium VectorEnv, with action masking.

What TorchRL needs from the VectorEnv:

* ``autoreset_mode="same_step"``: TorchRL's ``GymWrapper`` reads a finished
  game's last observation from ``info["final_obs"]`` and keeps going with the
  next game's first one (the server's own auto-reset, no step lost).
* the mask as a tensor: ``GymWrapper`` turns the info keys into entries of
  the tensordict; ``default_info_dict_reader`` with a ``Binary`` spec makes
  ``"action_mask"`` a bool ``[N, 90]`` entry with a spec.
* ``ActionMask()``: masks the action spec (random actions stay legal), and
  the actor draws from a ``MaskedCategorical`` over that entry.

The learner plays seat 0 against three heuristic bots; the loop is TorchRL's
PPO tutorial's (collector, GAE, ClipPPOLoss)::

    python python/examples/torchrl_ppo_vector.py --frames 200000

Each iteration prints a JSON line with the learner's mean points per game
finished in it; before and after training the greedy policy plays
``--eval-games`` games (the same deals both times), and the last line is
JSON with ``"before"`` and ``"after"`` (points per game with 95% intervals).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Optional, Sequence

import numpy as np
import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import Binary, Unbounded
from torchrl.envs import ActionMask, GymWrapper, TransformedEnv
from torchrl.envs.libs.gym import default_info_dict_reader
from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

import dgenv
from dgenv.gymnasium import VectorEnv
from dgenv.stats import estimate95


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--frames", type=int, default=200_000, help="learner env-steps to train for")
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--frames-per-batch", type=int, default=4096)
    p.add_argument("--minibatch", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--reward", default="zero_sum", choices=["points", "zero_sum"])
    p.add_argument("--reward-scale", type=float, default=0.1)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--players", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-games", type=int, default=2000, help="games of the greedy policy before and after (0: none)")
    p.add_argument("--client", default="inproc", help="'inproc' (the engine in this process) or a server URL")
    return p.parse_args(argv)


def evaluate(logits_net: nn.Module, client: Any, games: int, players: int, seed: int) -> dict[str, Any]:
    """The greedy masked policy's points per game over ``games`` games against the heuristic bots."""
    env = client.make(players=players, num_envs=games, seed=seed, learner_seats=[0], opponent="heuristic", reward="points")
    try:
        b = env.reset(seed=seed)
        got = np.zeros(games, bool)
        scores = np.zeros((games, players), np.int64)
        while not got.all():
            with torch.no_grad():
                logits = logits_net(torch.as_tensor(b.obs)).masked_fill(~torch.as_tensor(b.mask), float("-inf"))
            b = env.step(logits.argmax(dim=1).numpy())
            new = b.done & ~got
            scores[new] = b.scores[new]
            got |= b.done
    finally:
        env.close()
    return {"games": games, "points": estimate95(scores[:, 0]), "opponents_points": estimate95(scores[:, 1:].mean(axis=1))}


def make_env(args: argparse.Namespace, client: Any) -> TransformedEnv:
    venv = VectorEnv(args.num_envs, client, players=args.players, opponent="heuristic", reward=args.reward,
                     seed=args.seed, autoreset_mode="same_step")
    na = int(venv.single_action_space.n)
    env = GymWrapper(venv, categorical_action_encoding=True)
    # The info keys TorchRL keeps, with their specs (no dummy rollout to guess them).
    reader = default_info_dict_reader(
        ["action_mask", "scores"],
        spec={"action_mask": Binary(n=na, shape=(args.num_envs, na), dtype=torch.bool),
                "scores": Unbounded(shape=(args.num_envs, args.players), dtype=torch.int32)},
    )
    env.set_info_dict_reader(reader)
    return TransformedEnv(env, ActionMask())


def main(argv: Optional[Sequence[str]] = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    client = dgenv.local() if args.client == "inproc" else dgenv.connect(args.client)
    env = make_env(args, client)
    obs_size = env.observation_spec["observation"].shape[-1]
    na = env.action_spec.space.n

    logits_net = MLP(in_features=obs_size, out_features=na, num_cells=[args.hidden, args.hidden], activation_class=nn.Tanh)
    actor_net = TensorDictModule(logits_net, in_keys=["observation"], out_keys=["logits"])
    actor = ProbabilisticActor(actor_net, in_keys={"logits": "logits", "mask": "action_mask"}, out_keys=["action"],
                               distribution_class=MaskedCategorical, spec=env.action_spec, return_log_prob=True)
    critic = ValueOperator(MLP(in_features=obs_size, out_features=1, num_cells=[args.hidden, args.hidden],
                               activation_class=nn.Tanh), in_keys=["observation"])
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.01, critic_coeff=0.5)
    gae = GAE(gamma=1.0, lmbda=0.95, value_network=critic)
    opt = torch.optim.Adam(loss.parameters(), lr=args.lr)
    collector = Collector(env, actor, frames_per_batch=args.frames_per_batch, total_frames=args.frames)

    eval_seed = args.seed + 10_000
    before = evaluate(logits_net, client, args.eval_games, args.players, eval_seed) if args.eval_games else None
    if before:
        print(f"before: {before['points']['mean']:.3f} ± {before['points']['ci95']:.3f} points/game", flush=True)
    t0 = time.perf_counter()
    line: dict[str, Any] = {}
    frames = 0
    for i, data in enumerate(collector):
        data["next", "reward"] = data["next", "reward"] * args.reward_scale
        with torch.no_grad():
            gae(data)
        flat = data.reshape(-1)
        for _ in range(args.epochs):
            for idx in torch.randperm(flat.numel()).split(args.minibatch):
                out = loss(flat[idx])
                total = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
                opt.zero_grad()
                total.backward()
                nn.utils.clip_grad_norm_(loss.parameters(), 0.5)
                opt.step()
        collector.update_policy_weights_()
        frames += flat.numel()
        done = data["next", "done"].squeeze(-1)
        # On the step that ends a game, "scores" (from info) holds its totals; seat 0 is the learner.
        finished = data["next", "scores"][done][:, 0].float()
        line = {"iteration": i + 1, "frames": frames, "seconds": round(time.perf_counter() - t0, 1),
                "games": int(done.sum()), "points": round(float(finished.mean()), 2) if finished.numel() else None}
        print(json.dumps(line), flush=True)
    seconds = time.perf_counter() - t0
    collector.shutdown()
    env.close()
    after = evaluate(logits_net, client, args.eval_games, args.players, eval_seed) if args.eval_games else None
    if after:
        print(f"after: {after['points']['mean']:.3f} ± {after['points']['ci95']:.3f} points/game", flush=True)
    out = {**line, "before": before, "after": after, "seconds": round(seconds, 1)}
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
