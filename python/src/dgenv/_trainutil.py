"""What the trainers share: :mod:`dgenv.train` (PPO), :mod:`dgenv.imitate` and :mod:`dgenv.expert`.

Each trainer is its own module and none imports another's private names:
what more than one of them needs lives here. The run's output directory
(:func:`default_out`), its CSV and TensorBoard tables (:class:`Logger`) and
curve (:func:`plot_curve`); the games' shaping potentials (:class:`Potential`,
:class:`WoundPotential`, :func:`game_potential`); a game's parameters from the
command line (:func:`parse_params`); the evaluation of an exported policy by
``bin/dgeval`` (:func:`evaluate_onnx`); and the ``dgteach`` labels the
imitation trainers read (:func:`find_dgteach`, :func:`load_teach`,
:func:`teach_spec`, :func:`imitation_metrics`).
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Mapping, Optional

import numpy as np
import torch

from .evaluate import evaluate
from .model import PolicyNet, masked_logits
from .server import find_repo
from .spec import DEFAULT_GAME, ObsSpec

__all__ = [
    "default_out", "Logger", "plot_curve", "parse_params", "evaluate_onnx", "Potential", "WoundPotential",
    "game_potential", "find_dgteach", "load_teach", "teach_spec", "imitation_metrics",
]

log = logging.getLogger("dgenv.train")


def default_out(name: str) -> Path:
    """``runs/<name>`` in the repository root when inside it (git ignores /runs/), else in the current directory."""
    repo = find_repo()
    return (repo if repo is not None else Path.cwd()) / "runs" / name


class Logger:
    """The CSV tables of a run (``<table>.csv`` in ``out``), mirrored to TensorBoard when asked and installed."""

    def __init__(self, out: Path, tensorboard: bool):
        self.out = out
        self.files: dict[str, Any] = {}
        self.writers: dict[str, csv.DictWriter] = {}
        self.tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.tb = SummaryWriter(str(out / "tb"))
            except Exception as e:  # tensorboard not installed
                print(f"dgenv.train: no TensorBoard logging ({e})", file=sys.stderr)

    def row(self, table: str, row: dict[str, Any], step: int) -> None:
        if table not in self.writers:
            f = open(self.out / f"{table}.csv", "w", newline="")
            self.files[table] = f
            self.writers[table] = csv.DictWriter(f, fieldnames=list(row))
            self.writers[table].writeheader()
        self.writers[table].writerow(row)
        self.files[table].flush()
        if self.tb is not None:
            prefix = table if table != "eval" else f"eval/{row.get('opponent')}"
            for k, v in row.items():
                if isinstance(v, (int, float, np.floating, np.integer)) and k not in ("update", "step"):
                    self.tb.add_scalar(f"{prefix}/{k}", float(v), step)

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        if self.tb is not None:
            self.tb.close()


def plot_curve(out: Path, title: str = "") -> Optional[Path]:
    """Draw ``curve.png`` from ``metrics.csv`` and ``eval.csv`` in ``out`` (matplotlib, Agg)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    m = out / "metrics.csv"
    if m.exists():
        rows = list(csv.DictReader(open(m)))
        xs = [int(r["step"]) / 1e6 for r in rows if r.get("train_diff") not in ("", "nan", None)]
        ys = [float(r["train_diff"]) for r in rows if r.get("train_diff") not in ("", "nan", None)]
        if xs:
            ax.plot(xs, ys, color="0.6", lw=1, label="training games (sampled actions)")
    e = out / "eval.csv"
    if e.exists():
        rows = list(csv.DictReader(open(e)))
        for opp in dict.fromkeys(r["opponent"] for r in rows):
            rr = [r for r in rows if r["opponent"] == opp]
            x = np.array([int(r["step"]) / 1e6 for r in rr])
            y = np.array([float(r["diff"]) for r in rr])
            c = np.array([float(r["diff_ci95"]) for r in rr])
            ax.errorbar(x, y, yerr=c, marker="o", ms=4, capsize=3, label=f"eval vs {opp} (greedy, 95% CI)")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("learner decisions (millions)")
    ax.set_ylabel("points per game: policy - opponents' mean")
    ax.set_title(title or out.name)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # nothing to label before a game ends or an evaluation
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    p = out / "curve.png"
    fig.savefig(p)
    plt.close(fig)
    return p


def parse_params(text: str) -> dict[str, int]:
    """``"k=v,k=v"`` as a dict of integers (a game's parameters)."""
    out: dict[str, int] = {}
    for kv in (text or "").split(","):
        if not kv.strip():
            continue
        k, sep, v = kv.partition("=")
        try:
            out[k.strip()] = int(v)
        except ValueError:
            sep = ""
        if not sep or not k.strip():
            raise ValueError(f"game parameter {kv!r}: want k=<integer>")
    return out


def evaluate_onnx(
    onnx_path: Any, opponent: str, games: int, players: int = 4, deals: Optional[int] = None, seed: int = 12345,
    game: str = DEFAULT_GAME, game_params: Optional[Mapping[str, int]] = None,
) -> dict[str, Any]:
    """The exported policy at one seat against ``players - 1`` bots ``opponent``, played by
    ``bin/dgeval`` with duplicate deals (every deal under every seating; in the duel, both
    roles): the statistics of every other evaluation of the project (:mod:`dgenv.evaluate`),
    in :func:`evaluate_policy`'s form, plus ``"by_seat"``: the policy's record from each
    seat (``{"seat", "games", "score": [mean, ci95], "wins", "draws", "losses"}``).
    """
    res = evaluate([f"policy:{onnx_path}"] + [opponent] * (players - 1), games=games, players=players,
                   deals=deals if game == DEFAULT_GAME else None, seed=seed, duplicate=True, backend="dgeval",
                   progress=False, game=game, game_params=game_params)
    pol = next(a for a in res["agents"] if a["name"].startswith("policy:"))
    other = next(a for a in res["agents"] if not a["name"].startswith("policy:"))
    pair = lambda d: [d["mean"], d["ci95"]]  # noqa: E731
    return {
        "opponent": opponent,
        "games": res["games"],
        "score": pair(pol["score"]),
        "opp_score": pair(other["score"]),
        "diff": pair(pol["score_diff"]),
        "win_rate": pair(pol["win_rate"]),
        "by_seat": [
            {"seat": r["seat"], "games": r["games"], "score": pair(r["score"]), "wins": r["wins"], "draws": r["draws"],
             "losses": r["losses"]}
            for r in res.get("by_seat", []) if r["name"].startswith("policy:")
        ],
    }


class Potential:
    """Deal score so far from the observer's view, read off the ``prizes`` section.

    ``zero_sum``: the observer's score minus the mean of the others'; ``points``:
    the observer's score. Used as the potential of potential-based shaping
    (Ng et al. 1999): the learner is paid each trick's change of it instead of
    waiting for the deal's end, and the return of a whole game is unchanged.
    """

    @classmethod
    def for_spec(cls, spec: Any, reward: str) -> Optional[Callable[[np.ndarray], np.ndarray]]:
        """The potential of a spec: the deal score for the card game (``prizes`` and
        ``prize_counts`` sections), the wound balance for the duel (:class:`WoundPotential`);
        None (no shaping) for any other game."""
        names = {s.name for s in spec.obs.sections}
        if {"prizes", "prize_counts"} <= names:
            return cls(spec, reward)
        if spec.game == "duel" and "public" in names:
            return WoundPotential(spec, reward)
        log.info("shaping off: no potential is defined for the game %r", spec.game)
        return None

    def __init__(self, spec: Any, reward: str):
        sec = spec.obs.section("prizes")
        self.sl = slice(sec.offset, sec.offset + sec.size)
        self.P = spec.players
        self.zero_sum = reward == "zero_sum"
        # Colours and values from the layout: prize_counts is [P, C], a prizes row [C * V].
        self.C = int(spec.obs.section("prize_counts").shape[-1])
        self.V = sec.size // (self.P * self.C)
        self.values = np.tile(np.arange(1, self.V + 1, dtype=np.float32), self.C).reshape(self.C, self.V)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        pr = obs[:, self.sl].reshape(-1, self.P, self.C, self.V)
        n = pr.sum(axis=3)
        face = (pr * self.values).sum(axis=3)
        score = np.where(n <= 2, face, n).sum(axis=2)  # [B, P], row 0 = observer
        if self.zero_sum:
            return (score[:, 0] - score[:, 1:].mean(axis=1)).astype(np.float32)
        return score[:, 0].astype(np.float32)


class WoundPotential:
    """The duel's wound balance from the observer's view, read off the ``public`` section
    (own wounds at index 2, the opponent's at 3; docs/duel.md), in the reward's units.

    Three wounds kill: a wound dealt is paid a third of a win when it lands (a win is 1
    with ``points``, 2 with ``zero_sum``: the winner's 1 minus the loser's -1), and the
    whole game's return is unchanged (the potential is 0 at the start and after the end).
    """

    def __init__(self, spec: Any, reward: str = "zero_sum"):
        sec = spec.obs.section("public")
        self.own, self.opp = sec.offset + 2, sec.offset + 3
        self.per_wound = (2.0 if reward == "zero_sum" else 1.0) / 3.0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        o = obs[:, [self.own, self.opp]].astype(np.float32)  # uint8 would wrap below 0
        return ((o[:, 1] - o[:, 0]) * self.per_wound).astype(np.float32)


def game_potential(meta: dict[str, Any], reward: str) -> Optional[Callable[[np.ndarray], np.ndarray]]:
    """The trainer's shaping potential of the labels' game (None when it has none)."""
    g = dict(meta.get("game") or {})
    num_actions = int(meta["num_actions"])
    spec = SimpleNamespace(game=str(g.pop("name", DEFAULT_GAME)), players=int(meta["players"]),
                           obs=ObsSpec.from_wire(meta["obs"], num_actions), params=g)
    return Potential.for_spec(spec, reward)


def find_dgteach(build: bool = True) -> Path:
    """The ``dgteach`` binary: ``$DGENV_DGTEACH``, the repository's ``bin/dgteach``
    (built with ``go build`` when missing or older than its sources), or PATH."""
    env = os.environ.get("DGENV_DGTEACH")
    if env:
        return Path(env)
    repo = find_repo()
    if repo is not None and (repo / "cmd" / "dgteach").is_dir():
        out = repo / "bin" / "dgteach"
        srcs = [p for d in ("cmd/dgteach", "env", "obs") for p in (repo / d).rglob("*.go")]  # every package it may build
        stale = not out.exists() or any(p.stat().st_mtime > out.stat().st_mtime for p in srcs)
        if stale and build and shutil.which("go"):
            tmp = out.with_name(f"dgteach.tmp{os.getpid()}")
            r = subprocess.run(["go", "build", "-o", str(tmp), "./cmd/dgteach"], cwd=repo, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"go build ./cmd/dgteach failed:\n{r.stderr}")
            os.replace(tmp, out)
        if out.exists():
            return out
    found = shutil.which("dgteach")
    if found:
        return Path(found)
    raise RuntimeError("no dgteach binary: build it with `make build` (or set DGENV_DGTEACH)")


def load_teach(path: Path, max_records: int = 0) -> tuple[dict[str, Any], dict[str, np.ndarray], np.ndarray]:
    """Read a ``dgteach`` directory: ``(meta, arrays, shard_id)``.

    ``arrays`` has ``obs`` uint8 [n, D], ``mask`` bool [n, A], ``q`` float32
    [n, A] (A the game's actions: 90 in the card game), ``action`` int64 [n],
    ``ret`` float32 [n], and ``played`` int64 [n] (the card played) when every shard has it,
    ``valued`` bool [n, A] (the actions ``q`` values: dgteach ``-rollout-top``) when every shard has it;
    ``shard_id`` [n] is each record's shard number (for a held-out split by whole games).
    """
    path = Path(path)
    meta = json.loads((path / "meta.json").read_text())
    if meta.get("format") != "dgteach-v1":
        raise ValueError(f"{path}: not a dgteach directory (meta.json format {meta.get('format')!r})")
    files = sorted(path.glob("shard-*.npz"))
    if not files:
        raise ValueError(f"{path}: no shards")
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "mask", "q", "action", "ret")}
    played: list[np.ndarray] = []
    valued: list[np.ndarray] = []
    ids = []
    n = 0
    D = int(meta["obs_size"])
    for f in files:
        with np.load(f) as z:
            if z["obs"].shape[1:] != (D,):
                raise ValueError(f"{f}: observations of size {z['obs'].shape[1:]}, meta.json says {D}")
            for k in parts:
                parts[k].append(z[k])
            if "played" in z.files:
                played.append(z["played"])
            if "valued" in z.files:
                valued.append(z["valued"])
            ids.append(np.full(len(z["action"]), int(f.stem.split("-")[1]), np.int64))
            n += len(z["action"])
        if max_records and n >= max_records:
            break
    arrays = {k: np.concatenate(v) for k, v in parts.items()}
    arrays["mask"] = arrays["mask"].astype(bool)
    arrays["action"] = arrays["action"].astype(np.int64)
    if len(played) == len(ids):
        arrays["played"] = np.concatenate(played).astype(np.int64)
    if len(valued) == len(ids):
        arrays["valued"] = np.concatenate(valued).astype(bool)
    return meta, arrays, np.concatenate(ids)


def teach_spec(meta: dict[str, Any]) -> dict[str, Any]:
    """The session spec (wire form) the labels were taken in, as :meth:`PolicyMeta.from_spec` reads it."""
    return {"players": int(meta["players"]), "num_actions": int(meta["num_actions"]), "obs": meta["obs"],
            "game": meta.get("game") or {"name": DEFAULT_GAME}}


def imitation_metrics(net: PolicyNet, data: dict[str, torch.Tensor], tau: float, batch: int = 8192) -> dict[str, float]:
    """Held-out loss, agreement with search's card, and regret (points per decision)."""
    net.eval()
    n = data["obs"].shape[0]
    tot = {"ce": 0.0, "agree": 0.0, "regret": 0.0, "v_mse": 0.0}
    with torch.no_grad():
        for s in range(0, n, batch):
            sl = slice(s, s + batch)
            obs = data["obs"][sl].float()
            mask = data["mask"][sl]
            q = data["q"][sl]
            lg, v = net(obs)
            lg = masked_logits(lg, mask)
            tgt = torch.softmax(masked_logits(q / tau, mask), dim=1)
            tot["ce"] += float(-(tgt * torch.log_softmax(lg, dim=1)).sum(1).sum())
            a = lg.argmax(1)
            tot["agree"] += float((a == data["action"][sl]).float().sum())
            qm = masked_logits(q, mask)
            tot["regret"] += float((qm.max(1).values - q.gather(1, a[:, None]).squeeze(1)).sum())
            tot["v_mse"] += float((v - data["vt"][sl]).square().sum())
    net.train()
    return {k: v / max(n, 1) for k, v in tot.items()}
