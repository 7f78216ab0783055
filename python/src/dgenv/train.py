"""Masked PPO for the batch server: ``python -m dgenv.train --preset beat-heuristic``.

A CleanRL-style PPO (one file of plain PyTorch) written for the batch API:
the server steps N games per request and hands back numpy arrays, so the
rollout is one torch forward over the whole batch per step, with no
per-env Python objects (SB3 would wrap the batch in a VecEnv and loop over
envs in Python for every step). Two ways to play:

* **Against server-side opponents** (``--opponent random|heuristic|search|policy:NAME``):
  the session has one learner seat; the server plays the other seats inside
  each step, so every observation the client sees is a learner decision.
* **Self-play** (``--opponent self``): the client plays every seat. In each
  env and game one seat is the learner, chosen at random; the other seats are
  played by one snapshot of the network sampled from a pool of past
  snapshots (or the current network), batched per snapshot in torch. Only the
  learner's decisions are trained on; rewards that accrue between two of its
  decisions are credited to the first.

Rewards are ``zero_sum`` by default: at the end of each deal the learner
gets its points minus the mean of the other seats'. That is exactly the
quantity the evaluation asks to be positive (beat the opponents' mean score),
it cancels most of the deal-to-deal luck that ``points`` carries (a deal
where every seat scores high is no better for anyone), and it keeps the
value targets centred. ``--reward points`` is there for comparison.

Output (``--out``, default ``runs/<preset or name>`` in the repository root): ``metrics.csv``
(one row per update), ``eval.csv`` (one row per evaluation and opponent),
TensorBoard event files in ``tb/`` (when ``tensorboard`` is installed),
``curve.png``, checkpoints in ``checkpoints/`` (torch ``state_dict``; for
resuming only) and ``policy.onnx`` (the "dgenv policy v1" file to serve and
evaluate; no pickle anywhere on the serving path).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn

from ._clients import resolve_client
from ._trainutil import Logger, Potential, default_out, evaluate_onnx, parse_params, plot_curve
from .expert import run_expert
from .imitate import train_imitation
from .model import PolicyNet, card_features, export_onnx, load_checkpoint, masked_logits, obs_scale, save_checkpoint
from .policy import PolicyMeta
from .server import serve
from .spec import DEFAULT_GAME
from .stats import summarize
from .warmstart import net_from_onnx

__all__ = ["TrainConfig", "PRESETS", "train", "evaluate_policy", "evaluate_onnx", "mean_ci", "main"]



@dataclass
class TrainConfig:
    """Every knob of a training run (the CLI flags have the same names, with dashes)."""

    name: str = "run"
    out: Optional[str] = None
    algo: str = "ppo"  # ppo | imitate (fit search's labels from bin/dgteach: dgenv.imitate) | expert (dgenv.expert)
    # game and env
    game: str = DEFAULT_GAME  # a registered game: david_goliath (the card game) or duel
    game_params: str = ""  # that game's parameters, "k=v,k=v" (e.g. "max_rounds=100" for the duel)
    players: int = 4  # the card game's (the duel has 2 seats)
    deals: Optional[int] = None  # the card game's
    opponent: str = "heuristic"  # random | heuristic | search | policy:NAME | self, or a mix "heuristic,random"
    learner_seats: str = "0"  # seats the learner takes against bots, envs split evenly ("0,1": both duel roles)
    reward: str = "zero_sum"
    reward_scale: float = 0.05
    shaping: bool = True  # potential-based: deal score so far, from the prize piles
    num_envs: int = 512
    seed: int = 1
    # budget
    minutes: float = 25.0
    total_steps: int = 0  # learner transitions; 0 = until minutes run out
    updates: int = 0  # 0 = no limit
    # PPO
    rollout_steps: int = 32  # learner decisions per env per update
    epochs: int = 3
    minibatches: int = 4
    lr: float = 5e-4
    lr_final: float = 0.1  # fraction of lr at the end of the budget (linear)
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float = 0.0  # 0 = no early stop
    # network
    hidden: tuple[int, ...] = (256, 256)
    activation: str = "relu"
    features: bool = False  # add CardFeatures to the first layer's input (folded away in the export)
    init: Optional[str] = None  # checkpoint to start from, or a policy file (.onnx: its actor, a new value head)
    value_warmup: int = 0  # with an .onnx --init (no value head): first updates fit only the value head, the actor held
    # self-play
    pool_size: int = 8
    snapshot_every: int = 10  # updates between snapshots
    self_prob: float = 0.5  # chance an env's opponents are the current net
    # imitation (algo "imitate"): labels from bin/dgteach
    data: Optional[str] = None  # dgteach directory (default runs/teach-p<players>); generated when empty and teach_games > 0
    teach_games: int = 0
    teach_seed: int = 0  # 0 = --seed
    teach_worlds: int = 32
    teach_table: str = ""  # bots per seat while generating ("" = search,search,heuristic,random for 4 players; other games: the teacher)
    teacher: str = "heuristic"  # games other than the card game: the bot imitated
    teach_eps: float = 0.05
    teach_minutes: float = 0.0
    tau: float = 1.0  # points: the policy target is softmax(q / tau) over the legal cards
    batch_size: int = 1024
    max_records: int = 0  # 0 = every record of the data
    augment: bool = True  # rename the colours of each sample by a random permutation (the rules are colour-symmetric)
    q_mse: float = 0.0  # expert: weight of the centred regression of logit * tau on the search values (points^2)
    ret_mix: float = 0.0  # expert: the played card's target is (1 - w) q + w (its real outcome): dgenv.expert.mix_return
    bias_mix: float = 0.0  # expert: every legal card's target is q + w b(s, card), b a model of PIMC's bias fitted on the played cards' outcomes: dgenv.expert.fit_bias
    card_head: int = 0  # expert, card game: units of an action-conditioned head (dgenv.model.CardHead) added to a network without one (0 = none)
    bias_head: int = 0  # expert, card game: units of a card head in --bias-mix's bias model (dgenv.expert.fit_bias; 0 = none)
    card_head_lr: float = 10.0  # expert: a card head's learning rate (--card-head, --bias-head), in multiples of the fit's (it starts at zero beside a trained network)
    # expert iteration (algo "expert": dgenv.expert): generate, train, evaluate, repeat; resumable
    exit_iterations: int = 1
    exit_games: int = 400  # games labelled per iteration
    exit_games0: int = 0  # the first iteration's (0 = exit_games)
    exit_epochs0: int = 0  # the first iteration's epochs (0 = epochs)
    exit_window: int = 4  # iterations of labels trained on
    # the card game's labels: 0 = the search's values (--teach-worlds worlds); K > 0 = the table's own values
    # (dgteach -teacher rollout: each card played in the true state, the deal finished K times by --rollout-table)
    exit_rollouts: int = 0
    rollout_table: str = ""  # bots of those playouts ({policy} the current network; "" = the table, search played by the network)
    rollout_worlds: int = 0  # worlds a decision of the searches among those bots (dgteach -rollout-worlds; 0 = as registered)
    rollout_sampled: bool = False  # those playouts start from worlds drawn from what the seat knows, not the true state (dgteach -rollout-sampled)
    rollout_top: int = 0  # value only the K legal cards --rollout-policy ranks highest (dgteach -rollout-top; 0 = all)
    rollout_policy: str = ""  # the policy that ranks them ({policy} the current network; dgteach -rollout-policy)
    exit_policies: tuple[str, ...] = ()  # expert: policy files copied into the run's policies/ (tables, --rollout-policy name them by file stem)
    exit_skip_leads: bool = False  # expert, the card game: train on no decision where the seat leads a trick (a later-card network: export --later)
    label_seats: str = ""  # table positions whose decisions are labelled ("" = all; dgteach -label-seats)
    teach_orders: int = 1  # expert: 2 = half the games play the table's reversed order (dgteach -orders), as dgeval -duplicate seats it
    exit_shard_games: int = 20
    exit_start: str = ""  # policy file that plays the table's first seat in iteration 0 ("" = search)
    exit_warm: bool = False  # iteration 0 is fitted from --exit-start's weights (its actor, a new value head), not from scratch
    exit_prior: bool = False  # expert: targets softmax(start's logits + q / tau), the start policy improved by the values
    exit_prior_views: int = 1  # expert, the card game: that prior is the start averaged over K colour renamings (1-5, export --colour-average K)
    exit_eval: str = "heuristic,heuristic,heuristic:1000;search,heuristic,random:400"  # tables after the network, "bots:games;..."
    # "RUN:K": continue run RUN from its iteration K in this --out: iterations 0..K-1 are RUN's (their labels
    # read in place, its exit-<K-1> plays and is warm-started from); this run does K.. (dgenv.expert)
    exit_from: str = ""
    teach_workers: int = 0  # dgteach and dgeval goroutines (0 = all cores)
    ckpt_every_s: float = 300.0  # training state saved at least this often
    device: str = "cpu"  # expert: where the network trains ("cuda" on a machine with a GPU)
    # evaluation
    eval_every_s: float = 180.0
    eval_games: int = 1000
    eval_opponents: tuple[str, ...] = ("random", "heuristic")
    final_eval_games: int = 4000
    eval_seed: int = 12345
    # runtime
    threads: int = 1  # torch threads (1: OpenMP spinning collapses on a busy 2-core machine); 0 = torch default
    server: Optional[str] = None  # URL of a running server; None = start one
    server_args: tuple[str, ...] = ()
    progress: bool = True
    tensorboard: bool = True
    plot: bool = True


# What the two 25-minute presets share.
_LONG_RUN: dict[str, Any] = dict(
    num_envs=512,
    rollout_steps=32,
    minutes=25.0,
    hidden=(256, 256),
    features=True,
    lr=1e-3,
    epochs=2,
    minibatches=8,
    target_kl=0.03,
)

PRESETS: dict[str, dict[str, Any]] = {
    # The documented run (docs/training.md): 1 learner seat vs 3 heuristic bots.
    "beat-heuristic": dict(
        _LONG_RUN,
        name="beat-heuristic",
        opponent="heuristic,heuristic,heuristic,random",  # 384 envs vs 3 heuristic, 128 vs 3 random
        eval_every_s=150.0,
        eval_games=1000,
        final_eval_games=4000,
    ),
    # Self-play with a snapshot pool.
    "selfplay": dict(
        _LONG_RUN,
        name="selfplay",
        opponent="self",
        eval_every_s=180.0,
    ),
    # Imitation of the search bot (docs/training.md): the labels come from
    # bin/dgteach (--data, or generated with --teach-games).
    "imitate": dict(
        name="imitate",
        algo="imitate",
        teach_games=1020,  # 51 shards of 20 games, ~190k labelled decisions at 4 players
        teach_seed=4,
        hidden=(256, 256),
        features=True,
        lr=1e-3,
        lr_final=0.05,
        epochs=12,
        batch_size=1024,
        tau=1.0,
        vf_coef=0.5,
        max_grad_norm=1.0,
        minutes=40.0,
        eval_every_s=120.0,
        eval_opponents=("random", "heuristic", "search"),
        final_eval_games=400,
    ),
    # RL fine-tuning of the imitation network against a mixed pool: search,
    # heuristic and random bots on the server, and self-play against the
    # current network and a pool of its past snapshots.
    "finetune": dict(
        _LONG_RUN,
        name="finetune",
        init="runs/imitate/checkpoints/final.pt",
        opponent="search,heuristic,random,self",
        num_envs=256,
        rollout_steps=16,
        lr=1e-4,
        lr_final=0.2,
        ent_coef=0.003,
        target_kl=0.02,
        pool_size=6,
        snapshot_every=5,
        self_prob=0.5,
        eval_every_s=600.0,
        eval_games=200,
        eval_opponents=("heuristic", "search"),
        final_eval_games=400,
    ),
    # Expert iteration (issue 22, dgenv.expert): labels from 8-world searches at
    # the mixed table with the current network in the first seat, a larger
    # network fitted with the centred value regression, evaluated per iteration.
    "expert": dict(
        name="expert",
        algo="expert",
        teach_seed=22,
        teach_worlds=8,
        teach_eps=0.05,
        exit_iterations=30,
        exit_games=400,
        exit_games0=1200,
        exit_epochs0=6,
        epochs=2,
        exit_window=16,  # the teacher does not change, so old labels stay useful
        exit_start="policies/imitate-search.onnx",
        hidden=(512, 256, 256),
        features=True,
        lr=1e-3,
        lr_final=0.1,
        batch_size=1024,
        tau=1.0,
        q_mse=0.05,
        vf_coef=0.5,
        max_grad_norm=1.0,
        minutes=0.0,
        eval_seed=7,
        exit_eval="heuristic,heuristic,heuristic:1000;search,heuristic,random:400",
        ckpt_every_s=300.0,
    ),
    # Policy iteration on the table's own values (docs/training.md "The table's own values"): from the
    # committed expert, each iteration labels the network's decisions at the mixed table by rollouts of the
    # true state (its own later cards and search's played by the network, the heuristic and random seats by
    # themselves), fits on the last 2 iterations' labels from the network before, and plays the tables.
    "expert-rollout": dict(
        name="expert-rollout",
        algo="expert",
        teach_seed=29,
        exit_rollouts=2,
        label_seats="0",
        teach_eps=0.05,
        exit_iterations=10,
        exit_games=2400,
        exit_window=2,  # the values are the last networks': older ones are another policy's
        exit_start="policies/expert-27.onnx",  # iteration 27 of expert-p4-ret05, policies/expert.onnx until session 28
        exit_warm=True,
        epochs=4,
        lr=3e-4,
        lr_final=0.1,
        batch_size=1024,
        tau=4.0,
        q_mse=0.05,
        vf_coef=0.0,
        max_grad_norm=1.0,
        minutes=0.0,
        eval_seed=7,
        exit_eval="heuristic,heuristic,heuristic:1000;search,heuristic,random:400",
        ckpt_every_s=300.0,
    ),
    # The duel, step 1: imitate the duel's heuristic bot (both roles) from
    # bin/dgteach -game duel demonstrations (10% of moves played at random,
    # still labelled with the heuristic's choice, so the net also sees the
    # positions a weaker player gets into). Step 2 is --preset duel --init.
    "duel-imitate": dict(
        name="duel-imitate",
        algo="imitate",
        game="duel",
        teacher="heuristic",
        teach_games=20000,
        teach_seed=14,
        teach_eps=0.1,
        hidden=(256, 256),
        features=False,
        augment=False,
        tau=0.05,  # q is 1 on the teacher's action: the target is that action
        reward="zero_sum",
        reward_scale=1.0,
        lr=1e-3,
        lr_final=0.05,
        epochs=8,
        batch_size=1024,
        vf_coef=0.5,
        max_grad_norm=1.0,
        minutes=10.0,
        eval_every_s=60.0,
        eval_opponents=("random", "heuristic"),
        final_eval_games=2000,
    ),
    # The duel (docs/duel.md): one network for both roles (Goliath at seat 0,
    # David at seat 1), against the heuristic bot in both, with some random
    # opponents early on for easy wins to learn from, and self-play.
    "duel": dict(
        name="duel",
        game="duel",
        learner_seats="0,1",
        opponent="heuristic,heuristic,heuristic,random",
        num_envs=256,
        rollout_steps=32,
        minutes=30.0,
        hidden=(256, 256),
        features=False,
        shaping=True,  # a third of a win for each wound dealt, paid when it lands (:class:`dgenv._trainutil.WoundPotential`)
        reward="zero_sum",
        reward_scale=1.0,
        gamma=0.995,
        gae_lambda=0.95,
        lr=5e-4,
        lr_final=0.2,
        epochs=3,
        minibatches=4,
        ent_coef=0.01,
        target_kl=0.03,
        eval_every_s=150.0,
        eval_games=400,
        eval_opponents=("random", "heuristic"),
        final_eval_games=2000,
    ),
    # The duel, step 2: PPO from the imitation network against the heuristic
    # in both roles, gently (the start is already the heuristic's level).
    "duel-finetune": dict(
        name="duel-finetune",
        game="duel",
        init="runs/duel-imitate/checkpoints/final.pt",
        learner_seats="0,1",
        opponent="heuristic",
        num_envs=256,
        rollout_steps=32,
        minutes=30.0,
        features=False,
        shaping=True,
        reward="zero_sum",
        reward_scale=1.0,
        gamma=0.995,
        gae_lambda=0.95,
        lr=2e-4,
        lr_final=0.2,
        epochs=3,
        minibatches=4,
        ent_coef=0.003,
        target_kl=0.02,
        eval_every_s=150.0,
        eval_games=400,
        eval_opponents=("random", "heuristic"),
        final_eval_games=2000,
    ),
    # Seconds-long smoke run (tests, CI).
    "tiny": dict(
        name="tiny",
        num_envs=8,
        rollout_steps=8,
        updates=2,
        minutes=5.0,
        hidden=(32,),
        epochs=1,
        minibatches=2,
        eval_games=8,
        final_eval_games=8,
        eval_every_s=1e9,
        progress=False,
        tensorboard=False,
    ),
}

# The 3-player later-card step (docs/training.md "Session 64"): at w34's table (policies/expert-p3-c3 in the
# first seat, both seatings), each later-card decision of that seat with two or more legal cards has the two
# cards w34's 3-view average ranks highest valued over 16 worlds drawn from what the seat knows (the same
# worlds for both), the deal played out by w34 (policies/expert-p3.onnx, the start) in its own seat and in
# search's and by the heuristic in its own. Fitted warm from w34 on those decisions only (no leads), the
# targets w34's 3-view average improved by the two values (softmax(logits + q / tau), q the two values less
# their mean). Served as export --later: w34's average on leads, this network's average on later cards.
PRESETS["expert-p3-later"] = dict(
    PRESETS["expert-rollout"],
    name="expert-p3-later",
    players=3,
    teach_seed=64,
    exit_start="policies/expert-p3.onnx",
    exit_warm=True,
    exit_prior=True,
    exit_prior_views=3,
    exit_policies=("policies/expert-p3-c3.onnx",),
    teach_table="policy:expert-p3-c3,search,heuristic",
    teach_orders=2,
    teach_eps=0.0,
    label_seats="0",
    exit_rollouts=16,
    rollout_sampled=True,
    rollout_top=2,
    rollout_policy="expert-p3-c3",
    rollout_table="policy:{policy},policy:{policy},heuristic",
    exit_skip_leads=True,
    exit_iterations=1,
    exit_games=9600,  # 236k later-card labels, 27 minutes on 2 cores
    exit_window=1,
    epochs=4,
    lr=3e-4,
    lr_final=0.1,
    batch_size=1024,
    tau=1.0,
    q_mse=0.0,
    exit_eval="",
)

# The same step at 5 and 6 players (docs/training.md "Session 65" and "Session 67"): the player count's 3-view
# average at the table and ranking the cards, its plain network warm-started and in the playouts, fitted at
# tau = 3 (the spread of the values is larger than at 3 players). With export --colour-average 3 and export
# --later over the count's 3-view average, these build policies/expert-p5-split.onnx and expert-p6-split.onnx.
def _later_step(players: int, teach_seed: int, exit_games: int, others: str) -> dict[str, Any]:
    """expert-p3-later at another player count: its networks, the mixed table's other seats ``others``."""
    net = f"expert-p{players}-c3"
    return dict(
        PRESETS["expert-p3-later"],
        name=f"expert-p{players}-later",
        players=players,
        teach_seed=teach_seed,
        exit_start=f"policies/expert-p{players}.onnx",
        exit_policies=(f"policies/{net}.onnx",),
        teach_table=f"policy:{net},search,{others}",
        rollout_policy=net,
        rollout_table=f"policy:{{policy}},policy:{{policy}},{others}",
        exit_games=exit_games,
        tau=3.0,
    )


PRESETS["expert-p5-later"] = _later_step(5, 66, 4800, "heuristic,random,heuristic")  # 214,939 labels, 22 min alone on 2 cores
PRESETS["expert-p6-later"] = _later_step(6, 69, 3600, "heuristic,random,heuristic,random")  # 195,668 labels, 20 min alone

# The duel, step 3: PPO from the committed policies/duel.onnx against the
# duel's search (env.Search, heuristic playouts, ~10 ms a move) for a
# quarter of the envs and the heuristic for the rest, in both roles. The
# file has no value head: the first updates fit a new one, the actor held.
PRESETS["duel-vs-search"] = dict(
    PRESETS["duel-finetune"],
    name="duel-vs-search",
    init="policies/duel.onnx",
    value_warmup=6,
    opponent="search,heuristic,heuristic,heuristic",  # 64 envs (32 a role) against search
    minutes=50.0,
    eval_every_s=300.0,
    eval_opponents=("heuristic",),
)

# The duel by expert iteration (issue 22, dgenv.expert; docs/training.md "Expert
# iteration for the duel"): the network against the duel's search, the table
# rotated a seat per game so it plays both roles, every decision of both
# seats labelled with the choice of the search the network guides
# (search:policy:<the network of the iteration before>: its move unless the
# search's 128 worlds find one 2 standard errors better; search:policy:duel
# beats search in both roles), so the teacher improves with the network.
# Fitted warm from policies/duel.onnx, evaluated in each role.
PRESETS["duel-expert"] = dict(
    name="duel-expert",
    algo="expert",
    game="duel",
    teacher="search:policy:{policy}",
    teach_table="policy:{policy},search",
    teach_seed=26,
    teach_worlds=0,  # the guided search's own 128 worlds
    teach_eps=0.05,
    exit_iterations=30,
    exit_games=200,  # ~40k labelled decisions (both seats'), a search each
    exit_games0=0,
    exit_epochs0=0,
    epochs=3,
    exit_window=8,
    exit_start="policies/duel.onnx",
    exit_warm=True,  # iteration 0 fitted from its weights (256-256; a new value head)
    # targets softmax(duel.onnx's logits + q / tau): the teacher's choice 1 / tau = 10 logits up on the start's
    # logits. With one-hot targets (tau 0.05, no prior, lr 5e-4) iteration 0 agreed with its teacher less than
    # the start (67% against 76% of held-out decisions) and kept only 83% of the start's moves.
    exit_prior=True,
    hidden=(256, 256),
    features=False,
    augment=False,
    lr=1e-4,
    lr_final=0.1,
    batch_size=1024,
    tau=0.1,
    q_mse=0.0,  # no regression: q is 1 on the choice, 0 elsewhere, not a value
    reward="zero_sum",
    reward_scale=1.0,
    vf_coef=0.5,
    max_grad_norm=1.0,
    minutes=0.0,
    eval_seed=7,
    exit_eval="search:400;heuristic:1000",
    ckpt_every_s=300.0,
)

# The duel's table's own values (session 58): each legal action of the network's role played in the true
# state, then the game finished by the network in both seats (--rollout-table), --exit-rollouts times; the
# value is the mean of those games' results (+2 won, -2 lost, 0 drawn), which sees past the search's
# 15-action playouts ("Session 42" in docs/training.md). The targets are duel.onnx improved by them,
# softmax(logits + q / tau), as the card game's policy iteration (--preset expert-rollout).
PRESETS["duel-expert-rollout"] = dict(
    PRESETS["duel-expert"],
    name="duel-expert-rollout",
    teacher="search",  # unused: the rollouts label
    teach_table="policy:{policy},search",
    exit_rollouts=4,
    rollout_table="policy:{policy},policy:{policy}",
    label_seats="0",
    exit_games=1000,
    exit_window=2,
    tau=2.0,  # one of the four games won instead of lost (+1 in the mean) is half a logit on the prior
    q_mse=0.0,
)

# The first duel run (/work/runs-strength/duel-expert-values): labels are the
# search's value of each legal action at 32 worlds (the seat's score, -1..+1:
# heuristic playouts over 15 actions, blind to most of a move's long-term
# worth), the targets policies/duel.onnx improved by them, softmax(its logits
# + q / tau) (--exit-prior; without it, softmax(q / 0.05), iteration 0 lost 0.8
# a game in each role). It moved the policy little: the network explains
# little of the values' variance from the observation.
PRESETS["duel-expert-values"] = dict(
    PRESETS["duel-expert"],
    name="duel-expert-values",
    teacher="search",
    teach_table="",  # the network against the teacher, rotated
    teach_worlds=32,  # label noise 0.025 a value (sd, centred), against a spread of 0.054 between actions
    exit_games=400,
    exit_games0=800,
    lr=5e-4,
    tau=0.01,  # a value 0.01 better is worth a logit over the start policy's; overrides its choice in ~10% of decisions
    q_mse=500.0,  # 0.05 / tau^2: the card preset's weight of the regression in logit^2 units
)


def mean_ci(x: Union[Sequence[float], np.ndarray]) -> tuple[float, float]:
    """Mean and half-width of its 95% normal interval (1.96 standard errors)."""
    a = np.asarray(x, dtype=np.float64)
    if a.size == 0:
        return float("nan"), float("nan")
    if a.size == 1:
        return float(a[0]), float("nan")
    return float(a.mean()), float(1.96 * a.std(ddof=1) / math.sqrt(a.size))


def _sample(logits: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One action per row from the categorical of (already masked) logits (Gumbel-max)."""
    u = torch.rand(logits.shape, generator=gen).clamp_(1e-12, 1.0)
    return (logits - torch.log(-torch.log(u))).argmax(dim=1)


def evaluate_policy(
    client: Any,
    net: PolicyNet,
    opponent: str,
    games: int,
    players: int = 4,
    deals: Optional[int] = None,
    seed: int = 12345,
    greedy: bool = True,
) -> dict[str, Any]:
    """Play ``games`` games (one per env) of the net at seat 0 against ``opponent`` in the other seats.

    In-process torch inference through server sessions; the trainer itself
    evaluates the exported file with ``bin/dgeval`` (:func:`evaluate_onnx`).
    Both report :mod:`dgenv.stats`' figures.

    Returns:
        ``{"opponent", "games", "score": [mean, ci95], "opp_score": [mean, ci95],
        "diff": [mean, ci95], "win_rate": [mean, ci95]}``: the policy's points per
        game, the opponents' mean points per game, and the per-game difference.
    """
    env = client.make(
        players=players, num_envs=games, seed=seed, learner_seats=[0], opponent=opponent, reward="points", deals=deals
    )
    try:
        b = env.reset(seed=seed)
        got = np.zeros(games, dtype=bool)
        scores = np.zeros((games, players), dtype=np.float64)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            while not got.all():
                lg = masked_logits(net.logits(torch.from_numpy(np.asarray(b.obs, np.float32))), torch.from_numpy(b.mask.copy()))
                a = lg.argmax(dim=1) if greedy else _sample(lg, gen)
                b = env.step(a.numpy())
                new = b.done & ~got
                scores[new] = b.scores[new]
                got |= b.done
    finally:
        env.close()
    pol, opp = summarize(["policy"] + ["opponent"] * (players - 1), scores.astype(np.int64))
    pair = lambda d: [d["mean"], d["ci95"]]  # noqa: E731
    return {
        "opponent": opponent,
        "games": games,
        "score": pair(pol["score"]),
        "opp_score": pair(opp["score"]),
        "diff": pair(pol["score_diff"]),
        "win_rate": pair(pol["win_rate"]),
    }


class _Collector:
    """Steps one session and turns learner decisions into PPO transitions."""

    def __init__(
        self, env: Any, net: PolicyNet, cfg: TrainConfig, gen: torch.Generator, rng: np.random.Generator,
        selfplay: bool, seed: int,
    ):
        self.env = env
        self.net = net
        self.cfg = cfg
        self.gen = gen
        self.rng = rng
        self.selfplay = selfplay
        N, D = env.num_envs, env.obs_size
        self.N, self.D, self.P = N, D, env.players
        if self.selfplay:
            self.seat = rng.integers(0, self.P, N)
        else:
            if len(env.spec.learner_seats) != 1:
                raise ValueError("training against bots needs exactly one learner seat")
            self.seat = np.full(N, env.spec.learner_seats[0])
        self.opp = np.full(N, -1)  # pool index of the opponents' snapshot (-1: current net)
        self.pool: list[PolicyNet] = []
        self.has = np.zeros(N, dtype=bool)
        self.p_obs = np.zeros((N, D), np.float32)
        self.p_mask = np.zeros((N, env.num_actions), bool)
        self.p_act = np.zeros(N, np.int64)
        self.p_logp = np.zeros(N, np.float32)
        self.p_val = np.zeros(N, np.float32)
        self.p_rew = np.zeros(N, np.float32)
        self.p_phi = np.zeros(N, np.float32)
        self.potential = Potential.for_spec(env.spec, cfg.reward) if cfg.shaping else None
        self.batch = env.reset(seed=seed)
        self.episodes: list[tuple[float, float]] = []  # (learner score, others' mean) of finished games
        self.raw_steps = 0

    def add_snapshot(self, net: PolicyNet) -> None:
        snap = PolicyNet.from_config(net.config())
        snap.load_state_dict(net.state_dict())
        snap.eval()
        self.pool.append(snap)
        if len(self.pool) > self.cfg.pool_size:
            self.pool.pop(0)
            self.opp = np.where(self.opp > 0, self.opp - 1, self.opp)  # indices shift; oldest's envs -> 0

    def _new_opponents(self, idx: np.ndarray) -> None:
        if not self.selfplay or idx.size == 0:
            return
        self.seat[idx] = self.rng.integers(0, self.P, idx.size)
        if self.pool:
            pick = self.rng.integers(0, len(self.pool), idx.size)
            self.opp[idx] = np.where(self.rng.random(idx.size) < self.cfg.self_prob, -1, pick)
        else:
            self.opp[idx] = -1

    def collect(self, target: int) -> dict[str, np.ndarray]:
        """Step until ``target`` finished learner transitions are in hand; return them."""
        out: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "mask", "act", "logp", "val", "rew", "done", "nval", "env")}
        count = 0
        scale = self.cfg.reward_scale
        ar = np.arange(self.N)

        def finish(rows: np.ndarray, nval: np.ndarray, done: bool, phi_next: Optional[np.ndarray] = None) -> None:
            nonlocal count
            if rows.size == 0:
                return
            out["obs"].append(self.p_obs[rows].copy())
            out["mask"].append(self.p_mask[rows].copy())
            out["act"].append(self.p_act[rows].copy())
            out["logp"].append(self.p_logp[rows].copy())
            out["val"].append(self.p_val[rows].copy())
            r = self.p_rew[rows]
            if self.potential is not None:  # F = phi(s') - phi(s), gamma = 1 within a game; phi = 0 after the end
                r = r + (0.0 if phi_next is None else phi_next) - self.p_phi[rows]
            out["rew"].append(r * scale)
            out["done"].append(np.full(rows.size, done))
            out["nval"].append(nval.astype(np.float32))
            out["env"].append(rows.copy())
            count += rows.size
            self.has[rows] = False

        while count < target:
            b = self.batch
            obs = np.asarray(b.obs, dtype=np.float32)
            mask = np.asarray(b.mask, dtype=bool)
            learn = (b.player.astype(np.int64) == self.seat) if self.selfplay else np.ones(self.N, bool)
            actions = np.zeros(self.N, np.int64)
            rows = ar[learn]
            with torch.no_grad():
                if rows.size:
                    lg, v = self.net(torch.from_numpy(obs[rows]))
                    lg = masked_logits(lg, torch.from_numpy(mask[rows]))
                    a = _sample(lg, self.gen)
                    logp = torch.log_softmax(lg, dim=1).gather(1, a[:, None]).squeeze(1)
                    a_np, v_np = a.numpy(), v.numpy()
                    phi = self.potential(obs[rows]) if self.potential is not None else None
                    hr = self.has[rows]
                    finish(rows[hr], v_np[hr], False, None if phi is None else phi[hr])
                    if phi is not None:
                        self.p_phi[rows] = phi
                    self.p_obs[rows] = obs[rows]
                    self.p_mask[rows] = mask[rows]
                    self.p_act[rows] = a_np
                    self.p_logp[rows] = logp.numpy()
                    self.p_val[rows] = v_np
                    self.p_rew[rows] = 0.0
                    self.has[rows] = True
                    actions[rows] = a_np
                if self.selfplay:
                    others = ar[~learn]
                    for k in np.unique(self.opp[others]):
                        r = others[self.opp[others] == k]
                        net = self.net if k < 0 else self.pool[k]
                        lg = masked_logits(net.logits(torch.from_numpy(obs[r])), torch.from_numpy(mask[r]))
                        actions[r] = _sample(lg, self.gen).numpy()
            b = self.env.step(actions)
            self.batch = b
            self.raw_steps += 1
            self.p_rew += np.where(self.has, b.rewards[ar, self.seat], 0.0).astype(np.float32)
            if b.done.any():
                d = ar[b.done]
                sc = b.scores[d].astype(np.float64)
                me = sc[np.arange(d.size), self.seat[d]]
                others = (sc.sum(axis=1) - me) / (self.P - 1)
                self.episodes.extend(zip(me.tolist(), others.tolist()))
                dh = d[self.has[d]]
                finish(dh, np.zeros(dh.size, np.float32), True)
                self._new_opponents(d)
        return {k: np.concatenate(v) for k, v in out.items()}


def _gae(buf: dict[str, np.ndarray], gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns over per-env chains of transitions (time order kept per env)."""
    n = buf["env"].size
    order = np.argsort(buf["env"], kind="stable")
    env_s = buf["env"][order]
    start = np.r_[0, np.flatnonzero(np.diff(env_s)) + 1]
    first = np.zeros(n, np.int64)
    first[start] = start
    first = np.maximum.accumulate(first)
    slot = np.arange(n) - first
    chain = np.cumsum(np.r_[0, (np.diff(env_s) != 0).astype(np.int64)])
    L, C = int(slot.max()) + 1, int(chain.max()) + 1
    def grid(x: np.ndarray, fill: float = 0.0) -> np.ndarray:
        g = np.full((L, C), fill, np.float32)
        g[slot, chain] = x[order]
        return g
    rew, val, nval, done = grid(buf["rew"]), grid(buf["val"]), grid(buf["nval"]), grid(buf["done"].astype(np.float32))
    valid = np.zeros((L, C), bool)
    valid[slot, chain] = True
    delta = rew + gamma * nval * (1.0 - done) - val
    adv = np.zeros((L, C), np.float32)
    nxt = np.zeros(C, np.float32)
    for t in range(L - 1, -1, -1):
        nxt_ok = valid[t + 1] if t + 1 < L else np.zeros(C, bool)
        adv[t] = delta[t] + gamma * lam * (1.0 - done[t]) * np.where(nxt_ok, nxt, 0.0)
        nxt = adv[t]
    out = np.empty(n, np.float32)
    out[order] = adv[slot, chain]
    return out, out + buf["val"]


class _Run:
    """One PPO run, phase by phase: :meth:`setup` (sessions, network,
    optimizer, collectors), :meth:`collect` (rollouts), :meth:`update` (PPO
    epochs), :meth:`report` (metrics), :meth:`evaluate` and
    :meth:`checkpoint` (periodic), :meth:`finish` (final checkpoint, export,
    final evaluation, summary) and :meth:`close`. :func:`train` runs them in
    that order.
    """

    def __init__(self, cfg: TrainConfig, on_update: Optional[Callable[[dict[str, Any]], None]]) -> None:
        self.cfg = cfg
        self.on_update = on_update
        self.out = Path(cfg.out) if cfg.out else default_out(cfg.name)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.json").write_text(json.dumps(asdict(cfg), indent=2, default=list))
        torch.manual_seed(cfg.seed)
        if cfg.threads > 0:
            torch.set_num_threads(cfg.threads)
        self.rng = np.random.default_rng(cfg.seed)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.t0 = time.monotonic()
        self.budget = cfg.minutes * 60.0
        self.card = cfg.game == DEFAULT_GAME
        self.game_params = parse_params(cfg.game_params)
        self.seats = [int(s) for s in str(cfg.learner_seats).split(",") if s.strip()]
        if not self.seats:
            raise ValueError(f"--learner-seats {cfg.learner_seats!r}: want seat numbers, e.g. 0 or 0,1")
        for flag, n in (("--eval-games", cfg.eval_games), ("--final-eval-games", cfg.final_eval_games)):
            if n < 0:
                raise ValueError(f"{flag} {n}: want 0 (no evaluation) or more games")
        # A server (or "inproc") the config names, else a server of the run's own, started with its arguments.
        self.client: Any = resolve_client(cfg.server) if cfg.server else serve(args=list(cfg.server_args))
        self.log = Logger(self.out, cfg.tensorboard)
        self.envs: list[Any] = []
        self.step = 0
        self.update_n = 0
        self.last_eval = time.monotonic()
        self.evals: list[dict[str, Any]] = []
        self.best: tuple[float, int] = (-math.inf, -1)
        self.pbar: Any = None

    # -- setup ---------------------------------------------------------------
    def setup(self) -> None:
        """Sessions (one per distinct opponent), the network and its optimizer, the collectors, the progress bar."""
        cfg = self.cfg
        opps = [o.strip() for o in cfg.opponent.split(",") if o.strip()]
        # one session per distinct opponent; repeating a name weighs it ("heuristic,heuristic,random");
        # "self" is a self-play session (the current net and its past snapshots at the other seats)
        shares = {o: opps.count(o) for o in dict.fromkeys(opps)}
        kinds: list[str] = []
        for k, (o, share) in enumerate(shares.items()):
            n = cfg.num_envs * share // len(opps)
            if n < 1:
                raise ValueError(f"--num-envs {cfg.num_envs} is too small to split over {opps}")
            # against bots, the envs are split over the learner's seats (a session each)
            seats: list[Optional[list[int]]] = [None] if o == "self" else [[s] for s in self.seats]
            for j, ls in enumerate(seats):
                m = n * (j + 1) // len(seats) - n * j // len(seats)
                if m < 1:
                    raise ValueError(f"--num-envs {cfg.num_envs} is too small to split over {opps} and seats {self.seats}")
                self.envs.append(
                    self.client.make(
                        players=cfg.players if self.card else None,
                        num_envs=m,
                        seed=cfg.seed + 1000 * k + 100 * j,
                        learner_seats=ls,
                        opponent=None if o == "self" else o,
                        reward=cfg.reward,
                        deals=cfg.deals if self.card else None,
                        game={"name": cfg.game, **self.game_params},
                    )
                )
                kinds.append(o)
        env = self.envs[0]
        self.meta = PolicyMeta.from_spec(env.spec, deals=cfg.deals)
        self.players = env.players
        self.net = self._network(env)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=cfg.lr, eps=1e-5)
        self.cols = [_Collector(e, self.net, cfg, self.gen, self.rng, kinds[i] == "self", seed=cfg.seed + 1000 * i)
                     for i, e in enumerate(self.envs)]
        for c in self.cols:
            if c.selfplay:
                c.add_snapshot(self.net)
        if cfg.progress:
            try:
                from tqdm import tqdm

                self.pbar = tqdm(total=int(self.budget), unit="s", desc=cfg.name, dynamic_ncols=True,
                                 bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt}s [{elapsed}<{remaining}]{postfix}")
            except ImportError:
                self.pbar = None

    def _network(self, env: Any) -> PolicyNet:
        """The network to train: ``--init``'s checkpoint, or a new one sized from the session's spec."""
        cfg = self.cfg
        if cfg.init and str(cfg.init).endswith(".onnx"):
            net, m0 = net_from_onnx(cfg.init)
            if m0.obs_size != env.obs_size or m0.num_actions != env.num_actions:
                raise ValueError(f"--init {cfg.init}: obs size {m0.obs_size} and {m0.num_actions} actions, "
                                 f"the session has {env.obs_size} and {env.num_actions}")
            net.train()
            return net
        if cfg.init:
            net, m0, _ = load_checkpoint(cfg.init)
            if m0.obs_size != env.obs_size:
                raise ValueError(f"--init {cfg.init}: obs size {m0.obs_size}, session has {env.obs_size}")
            net.train()
            return net
        feats = None
        if cfg.features:
            feats = card_features(env.spec)
            if feats is None:
                raise ValueError(f"features: the game {env.spec.game!r} has no card sections (hand, current_trick, prizes, prize_counts)")
        return PolicyNet(env.obs_size, cfg.hidden, cfg.activation, scale=obs_scale(env.spec.obs.sections, env.obs_size),
                         num_actions=env.num_actions, features=feats)

    # -- the loop --------------------------------------------------------------
    def done(self) -> bool:
        """Whether the budget (updates, steps or minutes) is spent."""
        cfg = self.cfg
        if cfg.updates and self.update_n >= cfg.updates:
            return True
        if cfg.total_steps and self.step >= cfg.total_steps:
            return True
        return time.monotonic() - self.t0 >= self.budget

    def schedule(self) -> float:
        """Set the optimizer's learning rate for the next update (linear decay to ``lr * lr_final``)."""
        cfg = self.cfg
        frac = min(1.0, max((time.monotonic() - self.t0) / self.budget,
                            self.step / cfg.total_steps if cfg.total_steps else 0.0))
        lr = cfg.lr * (1.0 - (1.0 - cfg.lr_final) * frac)
        for g in self.opt.param_groups:
            g["lr"] = lr
        return lr

    def collect(self) -> tuple[dict[str, np.ndarray], float]:
        """One rollout of every session: the transitions (env ids distinct across sessions) and the seconds it took."""
        tc = time.monotonic()
        self.net.eval()
        parts = [c.collect(c.N * self.cfg.rollout_steps) for c in self.cols]
        off = 0
        for c, part in zip(self.cols, parts):  # distinct env ids across sessions keep the GAE chains apart
            part["env"] = part["env"] + off
            off += c.N
        buf = {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}
        return buf, time.monotonic() - tc

    def update(self, buf: dict[str, np.ndarray]) -> tuple[dict[str, list[float]], np.ndarray, float]:
        """PPO epochs over ``buf``: the per-minibatch statistics, the returns and the seconds it took."""
        cfg, net, opt, gen = self.cfg, self.net, self.opt, self.gen
        adv, ret = _gae(buf, cfg.gamma, cfg.gae_lambda)
        n = adv.size
        obs_t = torch.from_numpy(buf["obs"])
        mask_t = torch.from_numpy(buf["mask"])
        act_t = torch.from_numpy(buf["act"])
        logp_t = torch.from_numpy(buf["logp"])
        adv_t = torch.from_numpy(adv)
        ret_t = torch.from_numpy(ret)
        net.train()
        mb = max(1, n // cfg.minibatches)
        stats: dict[str, list[float]] = {k: [] for k in ("pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac")}
        tu = time.monotonic()
        stop = False
        # value warm-up: the actor held fixed while a new value head learns the returns
        warm = self.update_n < cfg.value_warmup and str(cfg.init or "").endswith(".onnx")
        for _ in range(cfg.epochs):
            perm = torch.randperm(n, generator=gen)
            for s in range(0, n - mb + 1, mb):
                i = perm[s : s + mb]
                lg, v = net(obs_t[i])
                lg = masked_logits(lg, mask_t[i])
                lsm = torch.log_softmax(lg, dim=1)
                newlogp = lsm.gather(1, act_t[i][:, None]).squeeze(1)
                ent = -(lsm.exp() * lsm).sum(1).mean()
                ratio = (newlogp - logp_t[i]).exp()
                a = adv_t[i]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - cfg.clip, 1 + cfg.clip)).mean()
                vl = 0.5 * (v - ret_t[i]).square().mean()
                loss = pg + cfg.vf_coef * vl - cfg.ent_coef * ent
                if warm:
                    loss = cfg.vf_coef * vl
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if warm:  # only the value head moves (Adam skips a parameter without a gradient)
                    head = {id(p) for p in net.v.parameters()}
                    for p in net.parameters():
                        if id(p) not in head:
                            p.grad = None
                nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                opt.step()
                with torch.no_grad():
                    lr_ = newlogp - logp_t[i]
                    kl = ((ratio - 1) - lr_).mean().item()
                stats["pg_loss"].append(pg.item())
                stats["v_loss"].append(vl.item())
                stats["entropy"].append(ent.item())
                stats["approx_kl"].append(kl)
                stats["clipfrac"].append(((ratio - 1).abs() > cfg.clip).float().mean().item())
                if cfg.target_kl and kl > cfg.target_kl:
                    stop = True
                    break
            if stop:
                break
        t_update = time.monotonic() - tu
        self.update_n += 1
        self.step += n
        if self.update_n % cfg.snapshot_every == 0:
            for c in self.cols:
                if c.selfplay:
                    c.add_snapshot(net)
        return stats, ret, t_update

    def report(self, buf: dict[str, np.ndarray], ret: np.ndarray, stats: dict[str, list[float]], lr: float,
               t_collect: float, t_update: float) -> dict[str, Any]:
        """The update's metrics row: logged, given to ``on_update``, shown on the progress bar."""
        cols = self.cols
        n = ret.size
        per_opp: dict[str, float] = {}
        eps: list[tuple[float, float]] = []
        for c in cols:
            c.episodes = c.episodes[-2 * c.N :]
            eps += c.episodes
            if len(cols) > 1:  # per opponent, and per learner seat when the run has several
                key = f"train_diff_{c.env.spec.opponent or 'self'}"
                if len(self.seats) > 1 and not c.selfplay:
                    key += f"_seat{c.seat[0]}"
                per_opp[key] = float(np.mean([a - b for a, b in c.episodes])) if c.episodes else float("nan")
        diff = float(np.mean([a - b for a, b in eps])) if eps else float("nan")
        var_y = float(np.var(ret))
        ev = float("nan") if var_y == 0 else 1.0 - float(np.var(ret - buf["val"])) / var_y
        elapsed = time.monotonic() - self.t0
        row = {
            "update": self.update_n,
            "step": self.step,
            "time": round(elapsed, 1),
            "sps": round(n / max(t_collect + t_update, 1e-9), 1),
            "collect_s": round(t_collect, 3),
            "update_s": round(t_update, 3),
            "lr": lr,
            "train_score": float(np.mean([a for a, _ in eps])) if eps else float("nan"),
            "train_diff": diff,
            "explained_var": ev,
            **per_opp,
            **{k: float(np.mean(v)) if v else float("nan") for k, v in stats.items()},
        }
        self.log.row("metrics", row, self.step)
        if self.on_update is not None:
            self.on_update(row)
        if self.pbar is not None:
            self.pbar.n = min(int(elapsed), int(self.budget))
            post = {"upd": self.update_n, "steps": f"{self.step / 1e6:.2f}M", "sps": int(row["sps"]), "train_diff": f"{diff:+.1f}"}
            for r in self.evals[-len(self.cfg.eval_opponents) :]:
                post[f"vs_{r['opponent']}"] = f"{r['diff'][0]:+.1f}"
            self.pbar.set_postfix(post, refresh=True)
        return row

    # -- evaluation and checkpoints ------------------------------------------------
    def evaluate(self, games: int, tag: str) -> list[dict[str, Any]]:
        """The current network against every evaluation opponent (through its ONNX export), logged;
        nothing when ``games`` is 0 (``--eval-games 0``, ``--final-eval-games 0``: no evaluation)."""
        cfg, net = self.cfg, self.net
        if games < 1:
            return []
        net.eval()
        res = []
        onnx_eval = export_onnx(net, self.meta, self.out / "eval" / "policy.onnx",
                                description=f"{cfg.name} update {self.update_n}")
        for opp in cfg.eval_opponents:
            r = evaluate_onnx(onnx_eval, opp, games, self.players, cfg.deals, cfg.eval_seed, cfg.game, self.game_params)
            r.update(update=self.update_n, step=self.step, time=round(time.monotonic() - self.t0, 1), tag=tag)
            res.append(r)
            self.log.row(
                "eval",
                {
                    "update": self.update_n, "step": self.step, "time": r["time"], "tag": tag, "opponent": opp, "games": games,
                    "score": r["score"][0], "score_ci95": r["score"][1],
                    "opp_score": r["opp_score"][0], "opp_score_ci95": r["opp_score"][1],
                    "diff": r["diff"][0], "diff_ci95": r["diff"][1],
                    "win_rate": r["win_rate"][0], "win_rate_ci95": r["win_rate"][1],
                },
                self.step,
            )
        net.train()
        return res

    def eval_due(self) -> bool:
        """Whether a periodic evaluation is due (not at the very end: :meth:`finish` evaluates)."""
        return time.monotonic() - self.last_eval >= self.cfg.eval_every_s and not self.done()

    def checkpoint(self) -> None:
        """A periodic evaluation, its checkpoint, ``best.pt`` when it is the best so far, and the curve."""
        res = self.evaluate(self.cfg.eval_games, "periodic")
        self.evals.extend(res)
        self.last_eval = time.monotonic()
        extra = {"update": self.update_n, "step": self.step}
        save_checkpoint(self.out / "checkpoints" / f"update_{self.update_n:05d}.pt", self.net, self.meta, extra)
        if res and res[-1]["diff"][0] > self.best[0]:  # best.pt needs an evaluation
            self.best = (res[-1]["diff"][0], self.update_n)
            save_checkpoint(self.out / "checkpoints" / "best.pt", self.net, self.meta, extra)
        if self.cfg.plot:
            plot_curve(self.out, self.cfg.name)

    def finish(self) -> dict[str, Any]:
        """The final checkpoint, the ONNX export, the final evaluation and ``summary.json``."""
        cfg = self.cfg
        if self.pbar is not None:
            self.pbar.n = self.pbar.total
            self.pbar.close()
        ck = save_checkpoint(self.out / "checkpoints" / "final.pt", self.net, self.meta,
                             {"update": self.update_n, "step": self.step})
        desc = f"dgenv.train {cfg.name}: {self.update_n} updates, {self.step} learner decisions, opponent {cfg.opponent}"
        onnx_path = export_onnx(self.net, self.meta, self.out / "policy.onnx", description=desc)
        final = self.evaluate(cfg.final_eval_games, "final")
        if cfg.plot:
            plot_curve(self.out, cfg.name)
        summary = {
            "out": str(self.out),
            "game": cfg.game,
            "players": self.players,
            "checkpoint": str(ck),
            "onnx": str(onnx_path),
            "updates": self.update_n,
            "steps": self.step,
            "minutes": round((time.monotonic() - self.t0) / 60.0, 2),
            "final_eval": final,
            "best_periodic": {"diff_vs_last_opponent": self.best[0], "update": self.best[1]},
        }
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2))
        return summary

    def close(self) -> None:
        """Close the logger and the sessions; stop the server this run started."""
        self.log.close()
        for e in self.envs:
            e.close()
        if hasattr(self.client, "stop"):
            self.client.stop()
        else:
            self.client.close()


def train(cfg: TrainConfig, on_update: Optional[Callable[[dict[str, Any]], None]] = None) -> dict[str, Any]:
    """Run PPO as ``cfg`` says; return a summary (paths, final evaluation).

    Starts a server with :func:`dgenv.serve` unless ``cfg.server`` names one.
    ``cfg.algo == "imitate"`` fits the network to the search bot's labels
    instead (:func:`dgenv.imitate.train_imitation`; no server needed). The
    phases are :class:`_Run`'s methods.
    """
    if cfg.algo == "imitate":
        return train_imitation(cfg, on_update)
    if cfg.algo == "expert":
        return run_expert(cfg, on_update)
    if cfg.algo != "ppo":
        raise ValueError(f"--algo {cfg.algo!r}: want ppo, imitate or expert")
    run = _Run(cfg, on_update)
    try:
        run.setup()
        while not run.done():
            lr = run.schedule()
            buf, t_collect = run.collect()
            stats, ret, t_update = run.update(buf)
            run.report(buf, ret, stats, lr, t_collect, t_update)
            if run.eval_due():
                run.checkpoint()
        return run.finish()
    finally:
        run.close()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dgenv.train",
        description="Masked PPO against the batch server's bots or in self-play; exports a policy-v1 ONNX file.",
    )
    p.add_argument("--preset", choices=sorted(PRESETS), help="start from a named configuration (flags override it)")
    defaults = TrainConfig()
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        d = getattr(defaults, f.name)
        if isinstance(d, bool):
            p.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes", "on"), default=None, metavar="BOOL")
        elif isinstance(d, tuple):
            p.add_argument(flag, type=str, default=None, metavar="A,B", help="comma-separated")
        elif isinstance(d, (int, float)):
            p.add_argument(flag, type=type(d), default=None)
        else:
            p.add_argument(flag, type=str, default=None)
    return p


def config_from_args(argv: Optional[Sequence[str]] = None) -> TrainConfig:
    """Parse CLI flags (over the preset, over the defaults) into a :class:`TrainConfig`."""
    a = _parser().parse_args(argv)
    kw: dict[str, Any] = dict(PRESETS[a.preset]) if a.preset else {}
    defaults = TrainConfig()
    for f in fields(TrainConfig):
        v = getattr(a, f.name)
        if v is None:
            continue
        d = getattr(defaults, f.name)
        if isinstance(d, tuple):
            items = [x for x in v.split(",") if x]
            v = tuple(int(x) for x in items) if f.name == "hidden" else tuple(items)
        kw[f.name] = v
    return TrainConfig(**kw)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """CLI entry point."""
    cfg = config_from_args(argv)
    s = train(cfg)
    if cfg.algo == "expert":
        print(json.dumps({k: s[k] for k in ("out", "iterations", "policy")}))
        return 0
    print(json.dumps({k: s[k] for k in ("out", "onnx", "updates", "steps", "minutes")}))
    k = s.get("players", cfg.players) - 1
    for r in s["final_eval"]:
        print(
            f"vs {k}x {r['opponent']:<10} {r['games']} games: policy {r['score'][0]:.2f} ± {r['score'][1]:.2f}, "
            f"opponents {r['opp_score'][0]:.2f} ± {r['opp_score'][1]:.2f}, diff {r['diff'][0]:+.2f} ± {r['diff'][1]:.2f}, "
            f"win rate {r['win_rate'][0]:.3f} ± {r['win_rate'][1]:.3f}"
        )
        if cfg.game != DEFAULT_GAME:  # each role (seat) apart: wins-draws-losses
            for b in r.get("by_seat", []):
                print(f"    as seat {b['seat']}: {b['wins']}-{b['draws']}-{b['losses']} (wins-draws-losses of {b['games']}), "
                      f"score {b['score'][0]:+.3f} ± {b['score'][1]:.3f}")
    return 0


if __name__ == "__main__":
    from ._cli import run

    run(main)
