"""Expert iteration with cheap search labels: ``python -m dgenv.train --preset expert``.

The aim (issue 22) is a bare network that plays better than the search bot.
Each iteration ``i`` of the loop

1. **generates** labels with ``bin/dgteach``: games at the mixed table
   ``policy:<net of iteration i-1>,search,heuristic,random`` (so the positions
   are the ones the network meets at the table it is judged at), every
   decision labelled with the search bot's value of each legal card at few
   worlds (``--teach-worlds``, 8 in the preset: a quarter of search's cost
   per label, so four times the decisions per CPU second);
2. **trains** the network, warm-started from iteration ``i-1``, on the last
   ``--exit-window`` iterations' labels: the soft-target cross-entropy of
   ``--preset imitate`` plus ``--q-mse`` times a *centred regression* of
   ``logit * tau`` on the search values (the squared error less its mean over
   the legal cards). The regression's target is unbiased: with noisy
   few-world values its minimiser is the expected value over worlds, i.e. the
   values of a search with infinitely many worlds, which a 32-world search
   only estimates (the cross-entropy alone would chase the noise through the
   softmax);
3. **exports** ``policies/exit-<i>.onnx`` and **evaluates** it with
   ``bin/dgeval`` at the tables of ``--exit-eval`` (duplicate deals, both
   seat orders), one row of ``curve.csv``.

Everything is under ``--out`` and every step can be interrupted at any
moment: rerunning the same command continues. Shards are written atomically
by dgteach and a missing one is generated again (each is drawn from the seed
and its number alone); training writes ``iter-<i>/state.pt`` (weights,
optimiser, position in the epoch) every ``--ckpt-every-s`` seconds and the
batch order and colour permutations of each batch are drawn from the seed,
the iteration, the epoch and the batch number alone, so a resumed run is the
run that was not interrupted, bit for bit (tested); an iteration's
evaluation is ``iter-<i>/eval.json``. ``config.json`` pins the configuration:
a rerun with other settings (other than the budget and the cosmetic ones)
is refused rather than mixed.

Other games (``--game duel``, ``--preset duel-expert``): dgteach labels with
``--teacher`` of that game, by its values when it has them (the duel's
``search``, ``env.ActionValuer``) or by its choices (``search:policy:{policy}``,
the search the current network guides; ``--teach-worlds 0`` for its own
budget); the table is ``--teach-table`` or the network against the teacher,
rotated a seat per game so the network plays both roles; no colour
permutations, no card features; each evaluation keeps every seat's record
(the duel's roles) in ``eval.json``, ``curve.csv`` and :func:`curve_table`.
``--exit-warm`` fits iteration 0 from ``--exit-start``'s weights rather than
from scratch, and ``--exit-prior`` makes the targets that policy improved by
the labels: ``softmax(its logits + q / tau)`` (:func:`q_losses`).

The card game's targets can reach past the search's values. ``--ret-mix W``
moves the played card's target towards the deal's real outcome for the seat
(:func:`mix_return`, DouZero's Monte-Carlo target). ``--bias-mix W`` carries
that correction to every legal card: each iteration first fits a model of the
values' bias, ``b(s, a) ~ E[ret - q_a | s, a]``, on the played cards of the
window (:func:`fit_bias`: the start network's trunk under a new head, saved as
``iter-<i>/bias.pt`` before any training state), then trains on ``q + W b``;
``train.json`` keeps the model's held-out ``bias_r2``.

Labels of a few cards in sampled worlds (``--preset expert-p3-later``):
``--rollout-sampled`` starts the rollouts from worlds drawn from what the seat
knows instead of the true state (dgteach ``-rollout-sampled``), and
``--rollout-top K --rollout-policy NAME`` values only the K legal cards that
policy ranks highest (``{policy}`` the current network; ``--exit-policies``
copies other policy files into the run's ``policies/`` for the tables and
this flag to name). The fit centres the K values and leaves the other legal
cards at 0, so with ``--exit-prior`` the target is the prior with those K
cards moved apart by their difference over tau; ``--q-mse``, ``--ret-mix`` and
``--bias-mix``, which need every card's value, are refused.
``--exit-skip-leads`` trains on no decision where the seat leads a trick: the
network is then served on later cards only, beside another on leads
(``python -m dgenv.export --later``).

``--exit-from RUN:K`` continues another run from its iteration ``K`` in a new
``--out`` (with, say, more epochs): iterations ``0 .. K-1`` are ``RUN``'s,
whose labels are read where they are (never written) so the window is full
from the start, and whose network of iteration ``K-1`` plays the first
labelled games and is warm-started from; the new run does ``K`` onwards, its
iterations numbered as ``RUN``'s. With ``RUN``'s configuration otherwise, its
iteration ``K`` is ``RUN``'s own, bit for bit (tested). ``RUN`` may itself be a
continuation: the labels are found where they were written.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
import dataclasses
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch

from ._trainutil import default_out, find_dgteach, game_potential, imitation_metrics, load_teach, teach_spec
from ._trainutil import parse_params as game_params  # --game-params "k=v,k=v"
from .evaluate import evaluate
from .imitate import colour_permutations
from .model import PolicyNet, card_head_config, export_onnx, masked_logits, obs_scale, save_checkpoint
from .policy import PolicyMeta, colour_views, onnx_forward
from .server import find_repo
from .stats import estimate95
from .spec import DEFAULT_GAME
from .warmstart import net_from_onnx

__all__ = ["run_expert", "q_losses", "mix_return", "default_table", "heldout_gain", "curve_table", "parse_from",
           "RESUME_FREE", "game_params"]

# Config fields a rerun may change without invalidating what was done: the
# budget, the output's cosmetics and the machine's share.
RESUME_FREE = ("minutes", "exit_iterations", "progress", "tensorboard", "plot", "threads", "teach_workers",
               "ckpt_every_s", "device")

_FALLBACK = ["search", "heuristic", "random", "heuristic", "random"]


def default_table(players: int, policy: Optional[str]) -> list[str]:
    """The generation table: the network (or, with none yet, ``search``), then the mixed table's bots."""
    return [f"policy:{policy}" if policy else "search"] + _FALLBACK[: players - 1]


def _with_policy(spec: str, prev: Optional[str]) -> list[str]:
    """The bots of a comma-separated table, ``{policy}`` the current network."""
    return [t.replace("{policy}", prev or "") for t in spec.split(",")]


def _table(cfg: Any, prev: Optional[str]) -> list[str]:
    """The generation table: ``--teach-table`` (``{policy}`` the current network), else the card
    game's :func:`default_table`, else (a 2-seat game such as the duel) the network against the
    teacher, which dgteach rotates a seat per game so the network plays both roles."""
    if cfg.teach_table:
        return _with_policy(cfg.teach_table, prev)
    if cfg.game == DEFAULT_GAME:
        return default_table(cfg.players, prev)
    t = _teacher(cfg, prev)
    return [f"policy:{prev}" if prev else t, t]


def _rollout_table(cfg: Any, table: list[str], prev: Optional[str]) -> list[str]:
    """The bots of the rollouts (``--exit-rollouts``): ``--rollout-table`` (``{policy}`` the current
    network), else the generation table with ``search`` played by the network (a search a card
    would cost a thousand playouts' time; the network imitates it)."""
    if cfg.rollout_table:
        return _with_policy(cfg.rollout_table, prev)
    return [f"policy:{prev}" if t == "search" and prev else t for t in table]


def _teacher(cfg: Any, prev: Optional[str]) -> str:
    """``--teacher`` with ``{policy}`` the current network: ``search:policy:{policy}`` is the search
    it guides (the duel: the network's move unless the search finds one clearly better), whose
    choices label (dgteach's demonstrations: q is 1 on the choice), a teacher that improves with the network."""
    return cfg.teacher.replace("{policy}", prev or "")


def q_losses(logits: torch.Tensor, mask: torch.Tensor, q: torch.Tensor, tau: float,
             prior: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ce, mse)`` per sample: the cross-entropy against ``softmax(q / tau)`` over the
    legal cards, and the centred squared error of ``logits * tau`` against ``q``
    (its mean over the legal cards, less the square of its mean: invariant to
    a constant added to every logit), in points squared. With ``prior`` (a
    policy's logits, ``--exit-prior``) the target is ``softmax(prior + q / tau)``,
    the prior improved by the values, and the regression is of ``(logits - prior) * tau``
    on ``q``: the same optimum, ``logits = prior + q / tau`` up to a constant."""
    lg = masked_logits(logits, mask)
    lsm = torch.log_softmax(lg, dim=1)
    tgt = torch.softmax(masked_logits(q / tau if prior is None else q / tau + prior, mask), dim=1)
    ce = -(tgt * lsm.masked_fill(~mask, 0.0)).sum(1)
    m = mask.float()
    n = m.sum(1).clamp(min=1.0)
    d = ((logits if prior is None else logits - prior) * tau - q) * m
    mean = d.sum(1) / n
    mse = (d.square().sum(1) / n) - mean.square()
    return ce, mse


class ViewAverage(torch.nn.Module):
    """A policy net's logits averaged over colour views (:func:`dgenv.policy.colour_views`), as the
    ONNX graph of :func:`dgenv.policy.colour_average` computes them; the value is view 0's."""

    obs_idx: torch.Tensor
    back_idx: torch.Tensor

    def __init__(self, net: PolicyNet, obs_idx: torch.Tensor, back_idx: torch.Tensor) -> None:
        super().__init__()
        self.net = net
        self.register_buffer("obs_idx", obs_idx)
        self.register_buffer("back_idx", back_idx)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        k = int(self.obs_idx.shape[0])
        acc, v0 = self.net(obs[:, self.obs_idx[0]])
        acc = acc[:, self.back_idx[0]]
        for s in range(1, k):  # summed in view order, then scaled: the ONNX graph's arithmetic
            acc = acc + self.net(obs[:, self.obs_idx[s]])[0][:, self.back_idx[s]]
        return acc * (1.0 / k), v0


def mix_return(q: torch.Tensor, played: torch.Tensor, ret: torch.Tensor, w: float) -> torch.Tensor:
    """The search values with the played card's replaced by ``(1 - w) q + w ret``: ``ret`` is
    what that card really led to (the deal's outcome for the seat, in q's units), a Monte-Carlo
    sample of its value under the table's real play (DouZero's target), free of the search's
    determinized worlds and heuristic playouts; ``q`` is not changed in place."""
    out = q.clone()
    rows = torch.arange(q.shape[0])
    out[rows, played] = (1.0 - w) * q[rows, played] + w * ret
    return out


BIAS_EPOCHS = 3  # fit_bias: passes over the window (held-out r^2 had levelled off by the third, 3 players)
BIAS_LR = 3e-4


def _residual(t: dict[str, torch.Tensor]) -> torch.Tensor:
    """``ret - q`` of each record's played card: how far the search's value of it was off."""
    return t["ret"].float() - t["q"].float().gather(1, t["played"][:, None]).squeeze(1)


def fit_bias(start: PolicyNet, tr: dict[str, torch.Tensor], seed: int, batch_size: int,
             device: torch.device, epochs: int = BIAS_EPOCHS, lr: float = BIAS_LR,
             head: Optional[dict[str, Any]] = None, head_lr: float = 10.0) -> PolicyNet:
    """A model of the search values' bias, ``b(s, a) ~ E[ret - q_a | s, a]``: the start network's
    trunk under a new zero-initialised head, regressed on the played cards of ``tr`` only (the one
    card of each decision whose real outcome is known) for ``epochs`` epochs. Fitted on
    every decision of the window, it carries the outcomes' correction to the cards that were not
    played (:func:`correct_bias`): a target past PIMC that reaches more than the played card. The
    batch order is drawn from ``seed`` alone (a rerun fits the same model).

    ``head`` (:func:`~dgenv.model.card_head_config`) gives the model a new card head (in place
    of the start's, if it has one): one function of the card's features for every card, so
    what the played cards show carries to the others by what they are, not only through the
    trunk. A card head learns at ``head_lr`` times ``lr``."""
    net = _net_from({"config": start.config(), "state_dict": start.state_dict()})
    if head is not None:
        net = net.with_card_head(head, replace=True)
    net.to(device)
    torch.nn.init.zeros_(net.pi.weight)
    torch.nn.init.zeros_(net.pi.bias)
    if net.head is not None:  # the model starts at zero: its card head adds nothing yet
        torch.nn.init.zeros_(net.head.w2)
        torch.nn.init.zeros_(net.head.b2)
    net.train()
    played = tr["played"]
    y = _residual(tr)
    opt = torch.optim.Adam(_param_groups(net, lr, head_lr), lr=lr, eps=1e-5)
    n = y.shape[0]
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen)
        for s in range(0, n, batch_size):
            idx = order[s : s + batch_size]
            lg, _ = net(tr["obs"][idx].float().to(device))
            pred = lg.gather(1, played[idx].to(device)[:, None]).squeeze(1)
            loss = (pred - y[idx].to(device)).square().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
    return net.to("cpu").eval()


def _card_head(sections: list[dict[str, Any]], units: int, flag: str) -> dict[str, Any]:
    """:func:`~dgenv.model.card_head_config` of a teach file's sections; a clear error naming
    ``flag`` when the game's observation lacks the card sections a card head reads."""
    head = card_head_config(sections, units)
    if head is None:
        raise ValueError(f"{flag}: the observation lacks the card sections a card head reads")
    return head


def _param_groups(net: PolicyNet, lr: float, head_lr: float) -> list[dict[str, Any]]:
    """Adam's parameter groups: the network's at ``lr``, and its card head's at ``head_lr`` times
    that (``lr_mult``, which a schedule keeps: a zero-initialised head beside a trained network
    moves too slowly otherwise)."""
    head = set() if net.head is None else {id(p) for p in net.head.parameters()}
    groups: list[dict[str, Any]] = [{"params": [p for p in net.parameters() if id(p) not in head], "lr": lr, "lr_mult": 1.0}]
    if net.head is not None:
        groups.append({"params": list(net.head.parameters()), "lr": lr * head_lr, "lr_mult": head_lr})
    return groups


def bias_of(bias: PolicyNet, t: dict[str, torch.Tensor]) -> torch.Tensor:
    """``b(s, .)`` of every record of ``t`` (``[N, num_actions]``, float32), by the model of :func:`fit_bias`."""
    with torch.no_grad():
        return torch.cat([bias(t["obs"][s : s + 8192].float())[0] for s in range(0, t["obs"].shape[0], 8192)]) \
            if t["obs"].shape[0] else torch.zeros(0, t["q"].shape[1])


def correct_bias(q: torch.Tensor, mask: torch.Tensor, b: torch.Tensor, w: float) -> torch.Tensor:
    """The search values with ``w`` times the bias model's correction added on the legal cards:
    ``q + w b * mask`` (``q`` is not changed in place)."""
    return q + w * b * mask.to(q.dtype)


def bias_r2(b: torch.Tensor, t: dict[str, torch.Tensor]) -> float:
    """The share of the played cards' ``ret - q`` variance that ``b`` explains on ``t`` (held out)."""
    if t["obs"].shape[0] < 2:
        return 0.0
    y = _residual(t)
    pred = b.gather(1, t["played"][:, None]).squeeze(1)
    var = float((y - y.mean()).square().mean())
    return 1.0 - float((y - pred).square().mean()) / var if var > 0 else 0.0


def _split_from(spec: str) -> tuple[Optional[Path], int]:
    if not spec:
        return None, 0
    run, _, k = spec.rpartition(":")
    if not run or not k.isdigit() or int(k) < 1:
        raise ValueError(f"--exit-from {spec!r}: want RUN:K, K >= 1 (continue RUN from its iteration K)")
    return Path(run), int(k)


def _holder(out: Path, spec: str, j: int) -> Path:
    """The run directory that holds iteration ``j`` of the run in ``out`` continued ``--exit-from spec``:
    ``out`` itself, or the run it continues (which may itself continue another: its ``config.json``)."""
    base, k = _split_from(spec)
    if base is None or j >= k:
        return out
    cpath = base / "config.json"
    return _holder(base, json.loads(cpath.read_text()).get("exit_from", "") if cpath.exists() else "", j)


def parse_from(spec: str) -> tuple[Optional[Path], int]:
    """``--exit-from``'s ``"RUN:K"`` as ``(RUN, K)``; ``(None, 0)`` for ``""``. RUN (or the runs it
    continues) must hold K-1's network and the labels of iterations ``0 .. K-1`` (a clear error otherwise)."""
    base, it = _split_from(spec)
    if base is None:
        return None, 0
    cpath = base / "config.json"
    up = json.loads(cpath.read_text()).get("exit_from", "") if cpath.exists() else ""
    last = _holder(base, up, it - 1)
    need = [last / f"iter-{it - 1:03d}" / "final.pt", last / "policies" / f"exit-{it - 1}.onnx"]
    need += [_holder(base, up, j) / "data" / f"iter-{j:03d}" / "meta.json" for j in range(it)]
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        raise ValueError(f"--exit-from {spec!r}: {base} has not finished iteration {it - 1} "
                         f"(no {missing[0]}{f' and {len(missing) - 1} more' if len(missing) > 1 else ''})")
    return base, it


def _data_dir(cfg: Any, out: Path, j: int) -> Path:
    """Where iteration ``j``'s labels are: in ``out``, or in the run (or runs) it continues."""
    return _holder(out, cfg.exit_from, j) / "data" / f"iter-{j:03d}"


def _final_path(cfg: Any, out: Path, j: int) -> Path:
    """Iteration ``j``'s trained network (``final.pt``): in ``out``, or in the run (or runs) it continues."""
    return _holder(out, cfg.exit_from, j) / f"iter-{j:03d}" / "final.pt"


def _seed(*parts: int) -> int:
    h = 1469598103934665603
    for p in parts:
        h = ((h ^ (p & 0xFFFFFFFFFFFFFFFF)) * 1099511628211) & 0x7FFFFFFFFFFFFFFF
    return h


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=list))
    tmp.replace(path)


def _pinned(cfg: Any) -> dict[str, Any]:
    d = json.loads(json.dumps(asdict(cfg), default=list))
    return {k: v for k, v in d.items() if k not in RESUME_FREE and k != "out"}


class _Stop(Exception):
    """Raised by the test hook to stop a run at a chosen point (a stand-in for a kill)."""


def run_expert(cfg: Any, on_iteration: Optional[Callable[[dict[str, Any]], None]] = None,
               hook: Optional[Callable[[str, int, int], None]] = None) -> dict[str, Any]:
    """Run (or continue) the expert iteration that ``cfg`` (a :class:`~dgenv.train.TrainConfig`) describes.

    ``hook(phase, iteration, n)`` is called after each shard batch generated
    (``"generate"``), each training batch (``"train"``, n = batches done in the
    iteration) and each evaluation (``"eval"``); tests raise from it to stop the
    run as a kill would."""
    base, first = parse_from(cfg.exit_from)  # before anything is written: a bad spec leaves no trace
    for flag, w in (("--ret-mix", cfg.ret_mix), ("--bias-mix", cfg.bias_mix)):
        if cfg.game != DEFAULT_GAME and w:
            raise ValueError(f"{flag}: the card game's only (dgteach's ret of {cfg.game} is not in its values' units)")
    if cfg.card_head < 0 or cfg.bias_head < 0:
        raise ValueError(f"--card-head {cfg.card_head}, --bias-head {cfg.bias_head}: units, want >= 0 (0: no head)")
    if cfg.game != DEFAULT_GAME and (cfg.card_head or cfg.bias_head):
        raise ValueError(f"--card-head, --bias-head: the card game's only ({cfg.game}'s observation has no cards to head)")
    if cfg.bias_head and not cfg.bias_mix:
        raise ValueError("--bias-head: the head of --bias-mix's bias model; give --bias-mix too")
    if cfg.rollout_worlds < 0:
        raise ValueError(f"--rollout-worlds {cfg.rollout_worlds}: must be >= 0 (0: the searches' own worlds)")
    if cfg.teach_orders not in (1, 2):
        raise ValueError(f"--teach-orders {cfg.teach_orders}: want 1 (the table's order) or 2 (and its reverse, dgteach -orders)")
    if (cfg.rollout_table or cfg.rollout_worlds or cfg.rollout_sampled or cfg.rollout_top or cfg.rollout_policy) and not cfg.exit_rollouts:
        raise ValueError("--rollout-table, --rollout-worlds, --rollout-sampled, --rollout-top, --rollout-policy: "
                         "give --exit-rollouts too (the number of rollouts of each card)")
    if cfg.rollout_top < 0 or bool(cfg.rollout_top) != bool(cfg.rollout_policy):
        raise ValueError(f"--rollout-top {cfg.rollout_top}, --rollout-policy {cfg.rollout_policy!r}: give both "
                         "(K >= 1 cards, ranked by that policy) or neither")
    if cfg.rollout_top and (cfg.q_mse or cfg.ret_mix or cfg.bias_mix):
        raise ValueError("--rollout-top: --q-mse, --ret-mix and --bias-mix need every legal card's value; set them to 0")
    if cfg.exit_skip_leads and cfg.game != DEFAULT_GAME:
        raise ValueError(f"--exit-skip-leads: the card game's tricks have leads; {cfg.game}'s do not")
    for f in cfg.exit_policies:
        if not _repo_path(f).exists() or not f.endswith(".onnx"):
            raise ValueError(f"--exit-policies {f}: no such policy file (.onnx)")
    if not 1 <= cfg.exit_prior_views <= 5:
        raise ValueError(f"--exit-prior-views {cfg.exit_prior_views}: want 1 to 5 (the cyclic shifts of the 5 colours)")
    if cfg.exit_prior_views > 1 and not (cfg.exit_prior and cfg.game == DEFAULT_GAME):
        raise ValueError("--exit-prior-views: averages the card game's --exit-prior; give --exit-prior true")
    for flag, on in (("--exit-warm", cfg.exit_warm), ("--exit-prior", cfg.exit_prior),
                     ("--teacher {policy}", "{policy}" in cfg.teacher and not cfg.exit_from)):
        if on and not cfg.exit_start:
            raise ValueError(f"{flag}: needs the start policy; give --exit-start")
    game_params(cfg.game_params)
    out = Path(cfg.out) if cfg.out else default_out(cfg.name)
    out.mkdir(parents=True, exist_ok=True)
    pinned = _pinned(cfg)
    cpath = out / "config.json"
    if cpath.exists():
        old = {k: v for k, v in json.loads(cpath.read_text()).items() if k not in RESUME_FREE and k != "out"}
        # a field added to TrainConfig since the run started reads as its default there
        defaults = _pinned(type(cfg)())
        diff = sorted(k for k in set(old) | set(pinned) if old.get(k, defaults.get(k)) != pinned.get(k))
        if diff:
            raise ValueError(f"{out}: a run with another configuration is there (differs in {', '.join(diff)}); "
                             f"rerun with its flags ({cpath}) or choose another --out")
    _write_json(cpath, json.loads(json.dumps(asdict(cfg), default=list)))
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    t0 = time.monotonic()
    budget = cfg.minutes * 60.0
    pol_dir = out / "policies"
    pol_dir.mkdir(exist_ok=True)
    prev: Optional[str] = None
    if cfg.exit_start:
        start = _start_file(cfg)
        if not (pol_dir / "start.onnx").exists():
            shutil.copyfile(start, pol_dir / "start.onnx.tmp")
            os.replace(pol_dir / "start.onnx.tmp", pol_dir / "start.onnx")
        prev = "start"
    for f in cfg.exit_policies:  # other policies the tables name: copied once, as the start
        src = _repo_path(f)
        if not (pol_dir / src.name).exists():
            shutil.copyfile(src, pol_dir / "extra.onnx.tmp")
            os.replace(pol_dir / "extra.onnx.tmp", pol_dir / src.name)
    if base is not None:  # the network that plays iteration K's games: the other run's exit-<K-1>
        prev = f"exit-{first - 1}"
        if not (pol_dir / f"{prev}.onnx").exists():
            src = _holder(out, cfg.exit_from, first - 1) / "policies" / f"{prev}.onnx"
            shutil.copyfile(src, pol_dir / "from.onnx.tmp")
            os.replace(pol_dir / "from.onnx.tmp", pol_dir / f"{prev}.onnx")
    dgteach = find_dgteach()
    rows: list[dict[str, Any]] = []
    net: Optional[PolicyNet] = None
    for i in range(first, cfg.exit_iterations):
        it = out / f"iter-{i:03d}"
        it.mkdir(exist_ok=True)
        if (it / "eval.json").exists():
            rows.append(json.loads((it / "eval.json").read_text()))
            prev = f"exit-{i}"
            net = None
            continue
        if budget and time.monotonic() - t0 > budget:
            break
        games = cfg.exit_games0 if i == 0 and cfg.exit_games0 else cfg.exit_games
        data = out / "data" / f"iter-{i:03d}"
        _generate(dgteach, cfg, data, i, games, prev, pol_dir, hook)
        final = it / "final.pt"
        if not final.exists() and not _train(cfg, out, i, hook, t0, budget):
            break  # out of time: state.pt holds where it stopped
        trow = json.loads((it / "train.json").read_text())
        name = f"exit-{i}"
        onnx = pol_dir / f"{name}.onnx"
        if not onnx.exists():
            d = torch.load(str(final), map_location="cpu", weights_only=True)
            net = _net_from(d)
            tmp = it / "exported.onnx"  # not in pol_dir: dgteach and dgeval refuse a file name like "x.tmp.onnx"
            pmeta = PolicyMeta.from_props(d["meta"])
            if cfg.game == DEFAULT_GAME and not cfg.exit_prior:  # logit * tau ~ q, in points
                pmeta = dataclasses.replace(pmeta, logit_scale=float(cfg.tau))
            export_onnx(net, pmeta, tmp,
                        description=f"dgenv.train {cfg.name}: expert iteration {i}, seed {cfg.seed}")
            os.replace(tmp, onnx)
        ev = _evaluate(cfg, pol_dir, name, i)
        row = {"iteration": i, **trow, "evals": ev, "minutes": round((time.monotonic() - t0) / 60.0, 2)}
        _write_json(it / "eval.json", row)
        if hook is not None:
            hook("eval", i, 0)
        rows.append(row)
        _write_curve(out, rows)
        if on_iteration is not None:
            on_iteration(row)
        prev = name
    _write_curve(out, rows)
    summary = {"out": str(out), "iterations": len(rows), "policy": str(pol_dir / f"{prev}.onnx") if prev else None,
               "curve": rows}
    _write_json(out / "summary.json", summary)
    return summary


def _repo_path(p: str) -> Path:
    """A file named on the command line: a relative path from here, else from the repository."""
    path = Path(p)
    if not path.exists() and not path.is_absolute():
        repo = find_repo()
        path = repo / path if repo is not None else path
    return path


def _start_file(cfg: Any) -> Path:
    """``--exit-start``'s policy file (a relative path: from here, else from the repository)."""
    start = _repo_path(cfg.exit_start)
    if not start.exists():
        raise ValueError(f"--exit-start {start}: no such policy file")
    return start


def _net_from(d: dict[str, Any]) -> PolicyNet:
    net = PolicyNet.from_config(d["config"])
    net.load_state_dict(d["state_dict"])
    return net


def _generate(dgteach: Path, cfg: Any, data: Path, i: int, games: int, prev: Optional[str], pol_dir: Path,
              hook: Optional[Callable[[str, int, int], None]]) -> None:
    """dgteach shards of iteration ``i`` in ``data``; only the missing ones are (re)generated."""
    sg = cfg.exit_shard_games
    shards = (games + sg - 1) // sg
    have = {int(p.stem.split("-")[1]) for p in data.glob("shard-*.npz")} if data.exists() else set()
    missing = [k for k in range(shards) if k not in have]
    if not missing:
        return
    table = _table(cfg, prev)
    if cfg.game == DEFAULT_GAME:
        who = ["-players", str(cfg.players)]
    else:
        who = ["-game", cfg.game] + (["-game-params", cfg.game_params] if cfg.game_params else [])
    if cfg.exit_rollouts:  # the table's own values, any game: no worlds
        who += ["-teacher", "rollout", "-rollouts", str(cfg.exit_rollouts), "-rollout-table", ",".join(_rollout_table(cfg, table, prev))]
        who += ["-rollout-worlds", str(cfg.rollout_worlds)] if cfg.rollout_worlds else []
        who += ["-rollout-sampled"] if cfg.rollout_sampled else []
        if cfg.rollout_top:
            who += ["-rollout-top", str(cfg.rollout_top), "-rollout-policy", _with_policy(cfg.rollout_policy, prev)[0]]
    elif cfg.game != DEFAULT_GAME:  # another game: its bot --teacher labels, by its values (env.ActionValuer: the duel's search) or its choices
        who += ["-teacher", _teacher(cfg, prev)]
    # --teach-worlds 0: the teacher's own budget (a teacher that only chooses, such as search:policy:<name>, takes none)
    worlds = ["-worlds", str(cfg.teach_worlds)] if (cfg.teach_worlds or cfg.game == DEFAULT_GAME) and not cfg.exit_rollouts else []
    cmd = [str(dgteach), *who, "-table", ",".join(table), "-policies", str(pol_dir),
           "-games", str(games), "-shard-games", str(sg), *worlds, "-eps", str(cfg.teach_eps),
           "-seed", str(_seed(cfg.teach_seed or cfg.seed, i) % (1 << 62)), "-out", str(data), "-quiet",
           "-from", str(missing[0])]
    if cfg.deals:
        cmd += ["-deals", str(cfg.deals)]
    if cfg.label_seats:
        cmd += ["-label-seats", cfg.label_seats]
    if cfg.teach_orders != 1:
        cmd += ["-orders", str(cfg.teach_orders)]
    if cfg.teach_workers:
        cmd += ["-workers", str(cfg.teach_workers)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr}")
    if hook is not None:
        hook("generate", i, shards)


def _load_window(cfg: Any, out: Path, i: int) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The labels of iterations ``i - window + 1 .. i``: ``(meta, train, held_out)``; every
    shard whose number is 19 mod 20 is held out (of the last iteration only: the positions the
    current network reaches)."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "mask", "q", "action", "ret", "played", "valued", "held")}
    meta: dict[str, Any] = {}
    for j in range(max(0, i - cfg.exit_window + 1), i + 1):
        meta, arr, shard = load_teach(_data_dir(cfg, out, j))
        arr.setdefault("valued", arr["mask"])  # every legal card valued, but with dgteach -rollout-top
        for k in ("obs", "mask", "q", "action", "ret", "played", "valued"):
            parts[k].append(arr[k])
        held = (shard % 20) == 19
        if j != i:
            held = np.zeros_like(held)  # older iterations' held-out shards train too
        elif not held.any() or held.all():  # few shards: the last 5% of the records
            held = np.arange(shard.size) >= max(1, int(0.95 * shard.size))
        parts["held"].append(held)
    arr = {k: np.concatenate(v) for k, v in parts.items()}
    valued = arr.pop("valued")
    if (valued != arr["mask"]).any():  # some legal cards not valued (-rollout-top): the valued ones centred, the others 0
        n_val = valued.sum(1, keepdims=True).clip(min=1)
        mean = (arr["q"] * valued).sum(1, keepdims=True) / n_val
        arr["q"] = np.where(valued, arr["q"] - mean, 0.0).astype(np.float32)
    if cfg.exit_skip_leads:  # a later-card network: the decisions where the seat leads are not trained on
        o = {s["name"]: int(s["offset"]) for s in meta["obs"]["sections"]}["trick_position"]
        keep = arr["obs"][:, o] == 0
        arr = {k: v[keep] for k, v in arr.items()}
    phi = game_potential(meta, cfg.reward)
    vt = ((arr["ret"] - (phi(arr["obs"]) if phi is not None else 0.0)) * cfg.reward_scale).astype(np.float32)
    held = arr.pop("held")

    def sel(s: np.ndarray) -> dict[str, torch.Tensor]:
        return {"obs": torch.from_numpy(np.ascontiguousarray(arr["obs"][s])), "mask": torch.from_numpy(arr["mask"][s]),
                "q": torch.from_numpy(arr["q"][s]), "action": torch.from_numpy(arr["action"][s]),
                "vt": torch.from_numpy(vt[s]), "played": torch.from_numpy(arr["played"][s]),
                "ret": torch.from_numpy(arr["ret"][s].astype(np.float32))}

    return meta, sel(~held), sel(held)


def _metrics(net: PolicyNet, va: dict[str, torch.Tensor], tau: float) -> dict[str, float]:
    """Held-out: the imitate metrics (agreement, regret against the labels' values) plus
    ``gain``: the labels' value of the network's card minus their mean over the legal cards,
    points per decision (unbiased with noisy values, unlike the regret, whose max is not)."""
    m = imitation_metrics(net, va, tau)
    net.eval()
    g = 0.0
    n = va["obs"].shape[0]
    with torch.no_grad():
        for s in range(0, n, 8192):
            sl = slice(s, s + 8192)
            lg, _ = net(va["obs"][sl].float())
            mask, q = va["mask"][sl], va["q"][sl]
            a = masked_logits(lg, mask).argmax(1)
            mean = (q * mask).sum(1) / mask.sum(1).clamp(min=1)
            g += float((q.gather(1, a[:, None]).squeeze(1) - mean).sum())
    net.train()
    m["gain"] = g / max(n, 1)
    return m


def _keep(net: PolicyNet, prior: torch.nn.Module, va: dict[str, torch.Tensor]) -> float:
    """The share of ``va``'s decisions where ``net`` plays ``prior``'s greedy action."""
    net.eval()
    same, n = 0, va["obs"].shape[0]
    with torch.no_grad():
        for s in range(0, n, 8192):
            obs, mask = va["obs"][s : s + 8192].float(), va["mask"][s : s + 8192]
            same += int((masked_logits(net(obs)[0], mask).argmax(1) == masked_logits(prior(obs)[0], mask).argmax(1)).sum())
    net.train()
    return same / max(n, 1)


def _train(cfg: Any, out: Path, i: int, hook: Optional[Callable[[str, int, int], None]], t0: float,
           budget: float) -> bool:
    """Train iteration ``i`` (resuming ``iter-<i>/state.pt``); write ``final.pt`` and ``train.json``.
    Returns False when the time budget ran out first (the state is saved)."""
    it = out / f"iter-{i:03d}"
    meta, tr, va = _load_window(cfg, out, i)
    D = int(meta["obs_size"])
    players = int(meta["players"])
    sections = meta["obs"]["sections"]
    offs = {s["name"]: int(s["offset"]) for s in sections}
    card = cfg.game == DEFAULT_GAME
    pmeta = PolicyMeta.from_spec(teach_spec(meta), deals=int(meta["deals"]) if card else None)
    state_path = it / "state.pt"
    torch.manual_seed(_seed(cfg.seed, i, 1))
    if state_path.exists():
        st = torch.load(str(state_path), map_location="cpu", weights_only=True)
        net = _net_from(st["net"])
    elif i > 0:
        st = None
        net = _net_from(torch.load(str(_final_path(cfg, out, i - 1)), map_location="cpu", weights_only=True))
    elif cfg.exit_warm:  # iteration 0 from the start policy's weights (dgenv.warmstart: its actor, a new value head)
        st = None
        net, m0 = net_from_onnx(out / "policies" / "start.onnx")  # run_expert's copy of --exit-start
        if m0.obs_size != D or m0.num_actions != int(meta["num_actions"]) or m0.game != cfg.game:
            raise ValueError(f"--exit-start {cfg.exit_start}: a policy of {m0.game} ({m0.obs_size} inputs, "
                             f"{m0.num_actions} actions); the labels are {cfg.game}'s ({D}, {meta['num_actions']})")
    else:
        st = None
        feats = {"players": players, "offsets": {k: offs[k] for k in ("hand", "current_trick", "prizes")}} if cfg.features and card else None
        net = PolicyNet(D, cfg.hidden, cfg.activation, scale=obs_scale(sections, D), features=feats,
                        num_actions=int(meta["num_actions"]))
    if cfg.card_head and net.head is None:  # the card game only (run_expert refuses it elsewhere); zero-initialised: the same logits as the network it extends
        net = net.with_card_head(_card_head(sections, cfg.card_head, "--card-head"))
    dev = torch.device(cfg.device)
    extra: dict[str, float] = {}
    if cfg.bias_mix:  # the outcomes' correction on every legal card (fit_bias), fitted once, before any state is saved
        bpath = it / "bias.pt"
        if bpath.exists():
            bias = _net_from(torch.load(str(bpath), map_location="cpu", weights_only=True)).eval()
        else:
            bhead = _card_head(sections, cfg.bias_head, "--bias-head") if cfg.bias_head else None
            bias = fit_bias(net, tr, _seed(cfg.seed, i, 11), cfg.batch_size, dev, head=bhead, head_lr=cfg.card_head_lr)
            save_checkpoint(bpath, bias, pmeta)  # atomic, as final.pt
        bva = bias_of(bias, va)
        extra["bias_r2"] = bias_r2(bva, va)  # before the correction: ret - q of the raw values
        tr["q"] = correct_bias(tr["q"], tr["mask"], bias_of(bias, tr), cfg.bias_mix)
        va["q"] = correct_bias(va["q"], va["mask"], bva, cfg.bias_mix)
    net.to(dev)
    net.train()
    opt = torch.optim.Adam(_param_groups(net, cfg.lr, cfg.card_head_lr), lr=cfg.lr, eps=1e-5)
    epochs = cfg.exit_epochs0 if i == 0 and cfg.exit_epochs0 else cfg.epochs
    n = tr["obs"].shape[0]
    per_epoch = math.ceil(n / cfg.batch_size)
    total = per_epoch * epochs
    epoch, b, hist = 0, 0, []
    run = {"loss": 0.0, "ce": 0.0, "mse": 0.0, "v": 0.0, "k": 0}
    if st is not None:
        opt.load_state_dict(st["opt"])
        epoch, b, hist, run = int(st["epoch"]), int(st["batch"]), list(st["hist"]), dict(st["run"])
    augment = cfg.augment and card  # renaming colours is the card game's symmetry
    if augment:
        perm_obs, perm_act = (torch.from_numpy(x) for x in colour_permutations(sections, D))
    prior_net: Optional[torch.nn.Module] = None
    if cfg.exit_prior:  # the targets improve the start policy by the values (its logits + q / tau)
        prior_net = net_from_onnx(out / "policies" / "start.onnx")[0].to(dev)
        prior_net.eval()
        if cfg.exit_prior_views > 1:  # ... averaged over colour renamings, as export --colour-average
            views = colour_views(sections, D, cfg.exit_prior_views)
            prior_net = ViewAverage(prior_net, *(torch.from_numpy(x) for x in views)).to(dev)  # int64 index maps
    t_it = time.monotonic()
    last_ck = time.monotonic()

    def save_state() -> None:
        tmp = state_path.with_name("state.pt.tmp")
        torch.save({"net": {"config": net.config(), "state_dict": net.state_dict()}, "opt": opt.state_dict(),
                    "epoch": epoch, "batch": b, "hist": hist, "run": run}, tmp)
        tmp.replace(state_path)

    while epoch < epochs:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(_seed(cfg.seed, i, epoch)))
        while b < per_epoch:
            step = epoch * per_epoch + b
            lr = cfg.lr * (1.0 - (1.0 - cfg.lr_final) * step / total)
            for g in opt.param_groups:
                g["lr"] = lr * g.get("lr_mult", 1.0)  # (a state saved before card heads has no lr_mult)
            idx = order[b * cfg.batch_size : (b + 1) * cfg.batch_size]
            obs, mask, q = tr["obs"][idx], tr["mask"][idx], tr["q"][idx]
            if cfg.ret_mix:
                q = mix_return(q, tr["played"][idx], tr["ret"][idx], cfg.ret_mix)
            if augment:
                gen = torch.Generator().manual_seed(_seed(cfg.seed, i, epoch, b, 7))
                k = torch.randint(0, perm_obs.shape[0], (idx.numel(),), generator=gen)
                obs, mask, q = obs.gather(1, perm_obs[k]), mask.gather(1, perm_act[k]), q.gather(1, perm_act[k])
            obs, mask, q = obs.to(dev), mask.to(dev), q.to(dev)
            lg, v = net(obs.float())
            if prior_net is None:
                ce, mse = q_losses(lg, mask, q, cfg.tau)
            else:
                with torch.no_grad():
                    pl, _ = prior_net(obs.float())
                ce, mse = q_losses(lg, mask, q, cfg.tau, prior=pl)
            vl = 0.5 * (v - tr["vt"][idx].to(dev)).square().mean()
            loss = ce.mean() + cfg.q_mse * mse.mean() + cfg.vf_coef * vl
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
            opt.step()
            b += 1
            run["loss"] += loss.item()
            run["ce"] += ce.mean().item()
            run["mse"] += mse.mean().item()
            run["v"] += vl.item()
            run["k"] += 1
            if hook is not None:
                hook("train", i, step + 1)
            if time.monotonic() - last_ck >= cfg.ckpt_every_s:
                save_state()
                last_ck = time.monotonic()
            if budget and time.monotonic() - t0 >= budget:
                save_state()
                return False
        m = _metrics(net.to("cpu"), va, cfg.tau)  # the held-out data stays on the CPU
        net.to(dev)
        nk = max(run["k"], 1)
        hist.append({"epoch": epoch + 1, "train_loss": run["loss"] / nk, "train_ce": run["ce"] / nk,
                     "train_q_mse": run["mse"] / nk, "val_agree": m["agree"], "val_regret": m["regret"],
                     "val_gain": m["gain"], "val_ce": m["ce"]})
        if prior_net is not None:  # how often the network keeps the start policy's choice (held out)
            hist[-1]["val_keep"] = _keep(net.to("cpu"), prior_net.to("cpu"), va)
            net.to(dev)
            prior_net.to(dev)
        if cfg.progress:
            print(f"expert iteration {i} epoch {epoch + 1}/{epochs}: {json.dumps(hist[-1])}", file=sys.stderr, flush=True)
        run = {"loss": 0.0, "ce": 0.0, "mse": 0.0, "v": 0.0, "k": 0}
        epoch, b = epoch + 1, 0
        save_state()
        last_ck = time.monotonic()
    save_checkpoint(it / "final.pt", net, pmeta, {"iteration": i})
    last = hist[-1] if hist else {}
    trow = {"records": int(n), "held_out": int(va["obs"].shape[0]), "batches": int(total),
            "train_minutes": round((time.monotonic() - t_it) / 60.0, 2),
            **{k: v for k, v in last.items() if k != "epoch"}, **extra}
    _write_json(it / "train.json", trow)
    return True


def _evaluate(cfg: Any, pol_dir: Path, name: str, i: int) -> list[dict[str, Any]]:
    """``bin/dgeval`` at each table of ``cfg.exit_eval`` (``"bot,bot,...:games"``): every agent's score difference."""
    res = []
    card = cfg.game == DEFAULT_GAME
    for spec in [x for x in cfg.exit_eval.split(";") if x]:
        opps, _, games = spec.rpartition(":")
        agents = [f"policy:{name}"] + opps.split(",")
        kw: dict[str, Any] = {} if card else {"game": cfg.game, "game_params": game_params(cfg.game_params)}
        r = evaluate(agents, games=int(games), players=len(agents), deals=cfg.deals, seed=cfg.eval_seed,
                     duplicate=True, policies=str(pol_dir), backend="dgeval", progress=False,
                     workers=cfg.teach_workers or 0, **kw)
        e = {"table": ",".join(agents), "games": r["games"],
             "diff": {a["name"]: [a["score_diff"]["mean"], a["score_diff"]["ci95"]] for a in r["agents"]}}
        if not card:  # each seat's record (the duel: seat 0 Goliath, seat 1 David): the network's in each role
            e["by_seat"] = {f"{b['name']}@{b['seat']}": [b["score"]["mean"], b["score"]["ci95"], b["wins"], b["draws"],
                                                      b["losses"]] for b in r["by_seat"]}
        res.append(e)
    return res


def _record(mean: float, ci: Optional[float], w: int, d: int, lo: int) -> str:
    """A seat's record: score per game, its 95% interval (none from one game), wins-draws-losses."""
    return f"{mean:+.2f} ± {ci:.2f} ({w}-{d}-{lo})" if ci is not None else f"{mean:+.2f} ({w}-{d}-{lo})"


def _write_curve(out: Path, rows: list[dict[str, Any]]) -> None:
    """``curve.csv``: one row per iteration (training figures, then each table's score differences)."""
    import csv

    if not rows:
        return
    flat = []
    for r in rows:
        f = {k: v for k, v in r.items() if k != "evals"}
        for e in r["evals"]:
            tag = e["table"].split(",", 1)[1]
            for agent, (mean, ci) in e["diff"].items():
                who = "net" if agent.startswith("policy:") else agent
                f[f"{tag}|{who}"] = f"{mean:+.2f} ± {ci:.2f}"
            for key, (mean, ci, w, d, l) in e.get("by_seat", {}).items():  # games other than the card game
                agent, _, seat = key.rpartition("@")
                if agent.startswith("policy:"):  # the network's score in each seat (role), wins-draws-losses
                    f[f"{tag}|net seat {seat}"] = _record(mean, ci, w, d, l)
        flat.append(f)
    keys: list[str] = []
    for f in flat:
        keys += [k for k in f if k not in keys]
    tmp = out / "curve.csv.tmp"
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(flat)
    tmp.replace(out / "curve.csv")


def _label_arrays(files: list[Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(obs float32, mask bool, q float64)`` of some of a dgteach directory's shards, concatenated."""
    zs = [np.load(f) for f in files]
    return (np.concatenate([z["obs"] for z in zs]).astype(np.float32),
            np.concatenate([z["mask"] for z in zs]).astype(bool), np.concatenate([z["q"] for z in zs]).astype(np.float64))


def _gains(q: np.ndarray, mask: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Per decision: the labels' value of card ``a`` less their mean over the legal cards (points)."""
    return q[np.arange(len(q)), a] - (q * mask).sum(1) / mask.sum(1)


def _policy_gains(p: Path, obs: np.ndarray, mask: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The gain of the policy's greedy legal card at each decision."""
    lg = np.concatenate([onnx_forward(str(p), obs[s : s + 8192]) for s in range(0, len(obs), 8192)])
    return _gains(q, mask, np.where(mask, lg, -np.inf).argmax(1))


def _paired(d: np.ndarray) -> tuple[float, float]:
    """Mean of per-decision differences and the half-width of its 95% interval (:func:`estimate95`)."""
    e = estimate95(d.tolist())
    return e["mean"], e["ci95"]


def heldout_gain(run: Path, i: int, policy: Path, reference: Path) -> Optional[tuple[int, float, float, float]]:
    """On iteration ``i``'s held-out shards (numbered 19 mod 20) of ``run``: ``(decisions, gain of
    policy, gain of reference, half-width of the 95% interval of their paired difference)``,
    gains in points per decision (:func:`_metrics`); None when the iteration has no such shard."""
    fs = sorted(f for f in (Path(run) / "data" / f"iter-{i:03d}").glob("shard-*.npz") if int(f.stem.split("-")[1]) % 20 == 19)
    if not fs:
        return None
    g, r = _gains_of(fs, policy, reference)
    return (len(g), float(g.mean()), float(r.mean()), _paired(g - r)[1])


def _gains_of(files: list[Path], a: Path, b: Path) -> tuple[np.ndarray, np.ndarray]:
    """Per decision of some of a dgteach directory's shards: the gains of policies ``a`` and ``b``."""
    obs, mask, q = _label_arrays(files)
    return _policy_gains(a, obs, mask, q), _policy_gains(b, obs, mask, q)


def step_gain(run: Path, k: int) -> Optional[tuple[int, float, float]]:
    """The step iteration ``k`` made: ``exit-k``'s gain less the network before it (``exit-<k-1>``,
    or the run's ``start.onnx`` when k is 0), paired per decision on the labels of iteration k+1 (all
    its shards so far), which neither network was fitted on: ``(decisions, mean, 95% half-width)``
    in points per decision, None while those labels, or a network, are not there. A run whose
    steps are zero has converged: its later iterations relabel and refit the same policy."""
    pol = Path(run) / "policies"
    a, b = pol / f"exit-{k}.onnx", pol / (f"exit-{k - 1}.onnx" if k > 0 else "start.onnx")
    fs = sorted((Path(run) / "data" / f"iter-{k + 1:03d}").glob("shard-*.npz"))
    if not fs or not a.exists() or not b.exists():
        return None
    g, r = _gains_of(fs, a, b)
    m, ci = _paired(g - r)
    return len(g), m, ci


def decision_gains(data: Path, policies: list[Path]) -> list[dict[str, Any]]:
    """Every decision of a dgteach directory (all shards): the gain (points per decision) of the
    card that was played and of each policy's greedy card, on the same decisions. The first row is
    ``"played"``: with ``-eps 0`` and a table of bots other than the teacher (or ``-prior-weight 0``),
    the table's bots' own choices, judged by labels independent of them; so a network is compared
    with a search on the search's positions. Each policy's row has its paired difference (and the
    95% half-width) with the played card and with the first policy."""
    fs = sorted(Path(data).glob("shard-*.npz"))
    if not fs:
        raise ValueError(f"{data}: no dgteach shards")
    _, arr, _ = load_teach(Path(data))
    if "played" not in arr:
        raise ValueError(f"{data}: a shard without the played cards (written by an older dgteach)")
    obs, mask, q = arr["obs"].astype(np.float32), arr["mask"], arr["q"].astype(np.float64)
    base = _gains(q, mask, arr["played"])
    rows: list[dict[str, Any]] = [{"name": "played", "decisions": len(q), "gain": float(base.mean())}]
    first: Optional[np.ndarray] = None
    for p in policies:
        g = _policy_gains(p, obs, mask, q)
        row: dict[str, Any] = {"name": Path(p).stem, "decisions": len(q), "gain": float(g.mean()),
                               "vs_played": _paired(g - base)}
        if first is not None:
            row["vs_first"] = _paired(g - first)
        first = g if first is None else first
        rows.append(row)
    return rows


def curve_table(run: Path, reference: Optional[Path] = None, steps: bool = False) -> str:
    """docs/training.md's curve of a run, one markdown row per finished iteration: decisions,
    held-out gain (and its paired difference with ``reference``), each table's score differences;
    with ``steps``, after the held-out cells, the iteration's :func:`step_gain` (blank while the
    next iteration has no labels)."""
    import time as _t

    lines = []
    for f in sorted(Path(run).glob("iter-*/eval.json")):
        d = json.loads(f.read_text())
        i = int(d["iteration"])
        paired = ""
        nd = 4 if any("by_seat" in e for e in d["evals"]) else 3  # another game's values (the duel's: -1..1) want a digit more
        if reference is not None:
            h = heldout_gain(Path(run), i, Path(run) / "policies" / f"exit-{i}.onnx", reference)
            paired = f"{h[1] - h[2]:+.{nd}f} ± {h[3]:.{nd}f}" if h else ""
        if steps:
            st = step_gain(Path(run), i)
            paired += " | " + (f"{st[1]:+.{nd}f} ± {st[2]:.{nd}f} ({st[0]:,})" if st else "")
        cells = []
        for e in d["evals"]:
            if "by_seat" in e:  # another game than the card game: the network's score in each seat (role)
                cells += [_record(*rec) for key, rec in e["by_seat"].items() if key.startswith("policy:")]
                continue
            for agent, (mean, ci) in e["diff"].items():
                if agent.startswith("policy:") or agent == "search":
                    cells.append(f"{mean:+.2f} ± {ci:.2f}")
        done = _t.strftime("%H:%M", _t.gmtime(f.stat().st_mtime))
        lines.append(f"| {i} | {d['records']:,} | {d['held_out']:,} | {d['val_gain']:.{nd}f} | {paired} | "
                     + " | ".join(cells) + f" | {done} |")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m dgenv.expert RUN [--reference ONNX] [--steps]``: print the run's curve as a markdown table.
    ``python -m dgenv.expert --gains DIR ONNX...``: :func:`decision_gains` of a dgteach directory."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m dgenv.expert", description=main.__doc__)
    p.add_argument("run", type=Path, nargs="?")
    p.add_argument("--reference", type=Path, default=None, help="policy whose held-out gain each iteration's is paired with")
    p.add_argument("--steps", action="store_true",
                   help="add each iteration's step: its network less the one before, on the next iteration's labels")
    p.add_argument("--gains", type=Path, nargs="+", metavar=("DIR", "ONNX"),
                   help="a dgteach directory, then policies: the gain per decision of the played card and of each")
    a = p.parse_args(argv)
    if (a.run is None) == (a.gains is None):
        p.error("give a run directory or --gains DIR ONNX..., not both")
    if a.steps and a.run is None:
        p.error("--steps: give a run directory")
    if a.gains is not None:
        try:
            rows = decision_gains(a.gains[0], a.gains[1:])
        except (ValueError, OSError) as e:
            p.error(str(e))
        print("| | decisions | gain | less the played card's | less the first policy's |")
        print("|---|---|---|---|---|")
        for r in rows:
            cells = [f"{r[k][0]:+.3f} ± {r[k][1]:.3f}" if k in r else "" for k in ("vs_played", "vs_first")]
            print(f"| {r['name']} | {r['decisions']:,} | {r['gain']:.3f} | " + " | ".join(cells) + " |")
        return 0
    print(curve_table(a.run, a.reference, a.steps))
    return 0


if __name__ == "__main__":
    from ._cli import run

    run(main)
