"""TorchRL over dgenv's PettingZoo AEC env, with action masks: self-play.

``PettingZooWrapper(..., use_mask=True)`` turns the turn-based AEC game into
one tensordict per step: with ``MarlGroupMapType.ALL_IN_ONE_GROUP`` every seat
is a row of the group ``"agents"``, ``("agents", "mask")`` says which seat is
to act and ``("agents", "action_mask")`` its legal cards (PettingZoo's
classic-games layout). Seats not on turn have an all-zero mask: their
action is ignored by the wrapper, so the policy lets them draw from every
action (a distribution over nothing is not one).

One shared policy plays every seat and learns by REINFORCE from each seat's
return (its points from its move to the game's end)::

    python python/examples/torchrl_aec_selfplay.py --games 200

Each iteration prints a JSON line with the mean points of the iteration's
games and the share of moves that were legal (always 1).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Optional, Sequence

import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import MarlGroupMapType, set_exploration_type, ExplorationType
from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor

from dgenv.pettingzoo import AECEnv


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--games", type=int, default=200, help="games to train on")
    p.add_argument("--games-per-iteration", type=int, default=10)
    p.add_argument("--players", type=int, default=3)
    p.add_argument("--deals", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--reward-scale", type=float, default=0.1)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--client", default="inproc", help="'inproc' (the engine in this process) or a server URL")
    return p.parse_args(argv)


class MaskedLogits(nn.Module):
    """Logits of the MLP; the mask lets seats not on turn draw from every action."""

    def __init__(self, obs_size: int, num_actions: int, hidden: int) -> None:
        super().__init__()
        self.net = MLP(in_features=obs_size, out_features=num_actions, num_cells=[hidden, hidden], activation_class=nn.Tanh)

    def forward(self, obs: torch.Tensor, action_mask: torch.Tensor, acting: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net(obs), action_mask | ~acting.unsqueeze(-1)


def main(argv: Optional[Sequence[str]] = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    aec = AECEnv(args.client, players=args.players, deals=args.deals, seed=args.seed)
    env = PettingZooWrapper(env=aec, use_mask=True, categorical_actions=True, return_state=False,
                            group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)
    obs_key = ("agents", "observation", "observation")
    obs_size = env.observation_spec[obs_key].shape[-1]
    na = env.action_spec[("agents", "action")].space.n
    net = TensorDictModule(MaskedLogits(obs_size, na, args.hidden),
                           in_keys=[obs_key, ("agents", "action_mask"), ("agents", "mask")],
                           out_keys=[("agents", "logits"), ("agents", "policy_mask")])
    policy = ProbabilisticActor(net, in_keys={"logits": ("agents", "logits"), "mask": ("agents", "policy_mask")},
                                out_keys=[("agents", "action")], distribution_class=MaskedCategorical,
                                return_log_prob=True, log_prob_key=("agents", "log_prob"))
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)

    t0 = time.perf_counter()
    line: dict[str, Any] = {}
    played = 0
    while played < args.games:
        losses, points, legal, moves = [], [], 0, 0
        for _ in range(args.games_per_iteration):
            with set_exploration_type(ExplorationType.RANDOM):
                td = env.rollout(10_000, policy, break_when_any_done=True)  # one game
            acting = td["agents", "mask"]                                    # [T, P]: the seat to act
            rewards = td["next", "agents", "reward"].squeeze(-1)             # [T, P]
            # Each seat's return from each step: its points from there to the end.
            ret = rewards.flip(0).cumsum(0).flip(0) * args.reward_scale
            chosen = td["agents", "action"][acting]
            legal += int(td["agents", "action_mask"][acting].gather(-1, chosen.unsqueeze(-1)).sum())
            moves += int(acting.sum())
            logp = td["agents", "log_prob"][acting]
            adv = ret[acting] - ret[acting].mean()
            losses.append(-(logp * adv).mean())
            points.append(rewards.sum(0))
        # log_prob was computed during the rollout with gradients on: one step over the iteration's games.
        loss = torch.stack(losses).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        played += args.games_per_iteration
        pts = torch.stack(points)
        line = {"games": played, "seconds": round(time.perf_counter() - t0, 1),
                "mean_points": round(float(pts.mean()), 2), "legal": legal / moves}
        print(json.dumps(line), flush=True)
    env.close()
    return line


if __name__ == "__main__":
    main()
