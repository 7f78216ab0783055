"""CleanRL-style masked PPO in one file, over dgenv's Gymnasium VectorEnv.

The learner plays seat 0 against three of the engine's heuristic bots. The
policy's logits of illegal cards are set to -inf (the mask is
``info["action_mask"]``), as in CleanRL's masked-PPO variants; the rest is
CleanRL's ``ppo.py`` (GAE, clipped objective, value loss, entropy bonus).
The VectorEnv runs in ``same_step`` auto-reset mode, so the observation
after a finished game is already the next game's, as CleanRL's envpool
scripts expect.

Before and after training it plays ``--eval-games`` games (the same deals
both times) with the greedy policy and prints the learner's mean points per
game and its 95% interval (dgenv.stats, the figures dgeval computes)::

    python python/examples/cleanrl_ppo_masked.py --total-steps 600000   # about 5 minutes on 2 cores

``--eval-every K`` also evaluates every K updates (the curve). The last line
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
import torch.nn as nn

import dgenv
from dgenv.gymnasium import VectorEnv
from dgenv.stats import estimate95


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--total-steps", type=int, default=600_000, help="learner env-steps to train for")
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--num-steps", type=int, default=64, help="steps per env per rollout")
    p.add_argument("--players", type=int, default=4)
    p.add_argument("--opponent", default="heuristic")
    p.add_argument("--reward", default="zero_sum", choices=["points", "zero_sum"])
    p.add_argument("--reward-scale", type=float, default=0.1, help="rewards are multiplied by this")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=1.0, help="the game is short and its total is what counts")
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--eval-games", type=int, default=2000, help="games of the greedy policy before and after (0: none)")
    p.add_argument("--eval-every", type=int, default=0, help="also evaluate every this many updates (0: only before and after)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--client", default="inproc", help="'inproc' (the engine in this process) or a server URL")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest for small MLPs on small CPUs)")
    return p.parse_args(argv)


class Agent(nn.Module):
    """Actor and critic MLPs; illegal actions get logit -inf."""

    def __init__(self, obs_size: int, num_actions: int, hidden: int) -> None:
        super().__init__()

        def mlp(out: int, std: float) -> nn.Sequential:
            layers = [nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, out)]
            for layer in layers:
                if isinstance(layer, nn.Linear):
                    nn.init.orthogonal_(layer.weight, np.sqrt(2))
                    nn.init.zeros_(layer.bias)
            nn.init.orthogonal_(layers[-1].weight, std)  # type: ignore[arg-type]
            return nn.Sequential(*layers)

        self.actor = mlp(num_actions, 0.01)
        self.critic = mlp(1, 1.0)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def dist(self, x: torch.Tensor, mask: torch.Tensor) -> torch.distributions.Categorical:
        logits = self.actor(x).masked_fill(~mask, float("-inf"))
        return torch.distributions.Categorical(logits=logits)


def evaluate(agent: Agent, client: Any, games: int, players: int, opponent: str, seed: int) -> dict[str, Any]:
    """The greedy policy's points per game over ``games`` games (one per env, the same deals for the same seed)."""
    env = client.make(players=players, num_envs=games, seed=seed, learner_seats=[0], opponent=opponent, reward="points")
    try:
        b = env.reset(seed=seed)
        got = np.zeros(games, bool)
        scores = np.zeros((games, players), np.int64)
        while not got.all():
            with torch.no_grad():
                logits = agent.actor(torch.as_tensor(b.obs)).masked_fill(~torch.as_tensor(b.mask), float("-inf"))
            b = env.step(logits.argmax(dim=1).numpy())
            new = b.done & ~got
            scores[new] = b.scores[new]
            got |= b.done
    finally:
        env.close()
    mine = estimate95(scores[:, 0])
    others = estimate95(scores[:, 1:].mean(axis=1))
    return {"games": games, "points": mine, "opponents_points": others}


def main(argv: Optional[Sequence[str]] = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    client = dgenv.local() if args.client == "inproc" else dgenv.connect(args.client)
    envs = VectorEnv(args.num_envs, client, players=args.players, opponent=args.opponent, reward=args.reward,
                     seed=args.seed, autoreset_mode="same_step")
    n, steps = args.num_envs, args.num_steps
    obs_size, na = envs.single_observation_space.shape[0], int(envs.single_action_space.n)
    agent = Agent(obs_size, na, args.hidden)
    opt = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    eval_seed = args.seed + 10_000
    before = evaluate(agent, client, args.eval_games, args.players, args.opponent, eval_seed) if args.eval_games else None
    if before:
        print(f"before: {before['points']['mean']:.3f} ± {before['points']['ci95']:.3f} points/game", flush=True)

    obs_b = torch.zeros((steps, n, obs_size))
    mask_b = torch.zeros((steps, n, na), dtype=torch.bool)
    act_b = torch.zeros((steps, n), dtype=torch.long)
    logp_b = torch.zeros((steps, n))
    rew_b = torch.zeros((steps, n))
    done_b = torch.zeros((steps, n))
    val_b = torch.zeros((steps, n))

    o, info = envs.reset(seed=args.seed)
    next_obs, next_mask = torch.as_tensor(o), torch.as_tensor(info["action_mask"])
    next_done = torch.zeros(n)
    updates = max(1, args.total_steps // (n * steps))
    batch = n * steps
    mb = batch // args.minibatches
    t0 = time.perf_counter()
    t_eval = 0.0  # seconds spent evaluating, not counted as training
    curve: list[dict[str, Any]] = []
    finished: list[float] = []
    for update in range(1, updates + 1):
        for t in range(steps):
            obs_b[t], mask_b[t], done_b[t] = next_obs, next_mask, next_done
            with torch.no_grad():
                d = agent.dist(next_obs, next_mask)
                a = d.sample()
                logp_b[t], val_b[t] = d.log_prob(a), agent.value(next_obs)
            act_b[t] = a
            o, r, term, trunc, info = envs.step(a.numpy())
            rew_b[t] = torch.as_tensor(r) * args.reward_scale
            next_obs, next_mask = torch.as_tensor(o), torch.as_tensor(info["action_mask"])
            next_done = torch.as_tensor(term | trunc, dtype=torch.float32)
            if info["_scores"].any():
                finished.extend(info["scores"][info["_scores"], 0].tolist())
        with torch.no_grad():  # GAE; in same_step mode done_b[t+1] marks the end of the game of step t
            next_value = agent.value(next_obs)
            adv = torch.zeros_like(rew_b)
            last = torch.zeros(n)
            for t in reversed(range(steps)):
                nonterm = 1.0 - (next_done if t == steps - 1 else done_b[t + 1])
                nv = next_value if t == steps - 1 else val_b[t + 1]
                delta = rew_b[t] + args.gamma * nv * nonterm - val_b[t]
                last = delta + args.gamma * args.gae_lambda * nonterm * last
                adv[t] = last
            ret = adv + val_b
        b_obs, b_mask = obs_b.reshape(batch, obs_size), mask_b.reshape(batch, na)
        b_act, b_logp, b_adv, b_ret = act_b.reshape(-1), logp_b.reshape(-1), adv.reshape(-1), ret.reshape(-1)
        for _ in range(args.update_epochs):
            perm = torch.randperm(batch)
            for s in range(0, batch, mb):
                i = perm[s:s + mb]
                d = agent.dist(b_obs[i], b_mask[i])
                ratio = (d.log_prob(b_act[i]) - b_logp[i]).exp()
                a_i = (b_adv[i] - b_adv[i].mean()) / (b_adv[i].std() + 1e-8)
                pg = torch.max(-a_i * ratio, -a_i * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((agent.value(b_obs[i]) - b_ret[i]) ** 2).mean()
                loss = pg + args.vf_coef * v_loss - args.ent_coef * d.entropy().mean()
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                opt.step()
        if update % 10 == 0 or update == updates:
            recent = finished[-200:]
            print(json.dumps({"update": update, "steps": update * batch, "seconds": round(time.perf_counter() - t0 - t_eval, 1),
                              "train_points": round(float(np.mean(recent)), 3) if recent else None}), flush=True)
        if args.eval_games and args.eval_every and update % args.eval_every == 0 and update != updates:
            te = time.perf_counter()
            trained = te - t0 - t_eval
            ev = evaluate(agent, client, args.eval_games, args.players, args.opponent, eval_seed)
            t_eval += time.perf_counter() - te
            curve.append({"steps": update * batch, "seconds": round(trained, 1), **ev})
            print(f"{update * batch} steps: {ev['points']['mean']:.3f} ± {ev['points']['ci95']:.3f} points/game", flush=True)
    seconds = time.perf_counter() - t0 - t_eval
    envs.close()
    after = evaluate(agent, client, args.eval_games, args.players, args.opponent, eval_seed) if args.eval_games else None
    if after:
        print(f"after: {after['points']['mean']:.3f} ± {after['points']['ci95']:.3f} points/game", flush=True)
    out = {"before": before, "curve": curve, "after": after, "steps": updates * batch, "seconds": round(seconds, 1)}
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
