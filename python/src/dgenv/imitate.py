"""Imitation of the search bot: ``python -m dgenv.train --preset imitate``.

The first half of expert iteration (for the card game; any other game, such
as the duel, imitates one of its bots: ``-teacher`` below). ``bin/dgteach`` (Go) plays games at a
table of bots and labels every decision with more than one legal card with
the search bot's value of each card (the mean outcome over 32 worlds that
resample every hidden hand, so the labels use only what the acting seat may
know) and its choice. This module trains :class:`~dgenv.model.PolicyNet` on
those labels:

* policy head: cross-entropy against the soft target ``softmax(q / tau)``
  over the legal cards (``tau`` in points of deal score), so the logits learn
  the search values up to a constant per position (``logit * tau ~ q``);
  that is what lets a guided search (``search:policy:<name>``) add the
  logits to its own noisy estimates on the same scale;
* value head: the deal's outcome for the acting seat (its deal points minus
  the others' mean) less what is already on the table, times
  ``reward_scale``: the value the PPO trainer's shaped rewards make it learn,
  so a fine-tuning run (``--preset finetune``) starts with a fitted critic.

Every ``--eval-every-s`` seconds and at the end it reports, on held-out
shards, the agreement with search's choice and the *regret*: the search
value of search's card minus that of the network's card, in points per
decision. The exported ``policy.onnx`` is then played by ``bin/dgeval``
(duplicate deals) against each of ``--eval-opponents``: the same statistics
as every other evaluation of the project.

Games other than the card game (``--game duel``): ``bin/dgteach -game duel``
labels each decision with the choice of a bot of that game (``--teacher``,
default ``heuristic``); ``q`` is then 1 on the teacher's action and 0 on the
other legal ones, so with a small ``--tau`` the policy target is the
teacher's action, and the value head learns the game's outcome less the
game's shaping potential (the duel's wound balance). No colour permutations
(they are the card game's symmetry) and no card features.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch

from ._trainutil import (
    Logger,
    default_out,
    evaluate_onnx,
    find_dgteach,
    game_potential,
    imitation_metrics,
    load_teach,
    parse_params,
    plot_curve,
    teach_spec,
)
from .model import PolicyNet, export_onnx, load_checkpoint, masked_logits, obs_scale, save_checkpoint
from .policy import PolicyMeta, colour_permutations
from .spec import DEFAULT_GAME

__all__ = ["colour_permutations", "load_teach", "find_dgteach", "generate", "train_imitation", "potential"]


def generate(out: Path, players: int, games: int, worlds: int = 32, table: str = "", eps: float = 0.05,
             seed: int = 1, minutes: float = 0.0, deals: Optional[int] = None, progress: bool = True,
             game: str = DEFAULT_GAME, game_params: str = "", teacher: str = "heuristic") -> Path:
    """Run ``bin/dgteach`` to write labelled shards to ``out``; returns ``out``.

    The card game is labelled by search; another ``game`` by its bot ``teacher``
    (``table`` then defaults to the teacher at every seat, as dgteach does)."""
    exe = find_dgteach()
    card = game == DEFAULT_GAME
    if not table and card:
        table = ",".join((["search", "search", "heuristic", "random"] + ["search", "heuristic"])[:players])
    cmd = [str(exe), "-games", str(games), "-eps", str(eps), "-seed", str(seed), "-out", str(out),
           "-shard-games", str(max(1, min(20, games)))]
    if table:  # another game's default: the teacher at every seat
        cmd += ["-table", table]
    if card:
        cmd += ["-players", str(players), "-worlds", str(worlds)]
    else:
        cmd += ["-game", game, "-teacher", teacher]
        if game_params:
            cmd += ["-game-params", game_params]
    if minutes:
        cmd += ["-minutes", str(minutes)]
    if deals and card:
        cmd += ["-deals", str(deals)]
    if not progress:
        cmd.append("-quiet")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr or ''}")
    return out


def potential(obs: np.ndarray, players: int, prizes_offset: int) -> np.ndarray:
    """The observer's deal score so far minus the others' mean, from the ``prizes`` section."""
    pr = obs[:, prizes_offset : prizes_offset + players * 90].reshape(-1, players, 5, 18).astype(np.float32)
    n = pr.sum(axis=3)
    face = (pr * np.arange(1, 19, dtype=np.float32)).sum(axis=3)
    score = np.where(n <= 2, face, n).sum(axis=2)
    return (score[:, 0] - score[:, 1:].mean(axis=1)).astype(np.float32)


def _batches(n: int, size: int, gen: torch.Generator):
    perm = torch.randperm(n, generator=gen)
    for s in range(0, n, size):
        yield perm[s : s + size]


def train_imitation(cfg: Any, on_update: Optional[Callable[[dict[str, Any]], None]] = None) -> dict[str, Any]:
    """Fit the network to ``dgteach`` labels as ``cfg`` (a :class:`~dgenv.train.TrainConfig`) says."""
    out = Path(cfg.out) if cfg.out else default_out(cfg.name)
    out.mkdir(parents=True, exist_ok=True)
    from dataclasses import asdict

    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=2, default=list))
    torch.manual_seed(cfg.seed)
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    gen = torch.Generator().manual_seed(cfg.seed)
    t0 = time.monotonic()

    card = cfg.game == DEFAULT_GAME
    data_dir = Path(cfg.data) if cfg.data else default_out(f"teach-p{cfg.players}" if card else f"teach-{cfg.game}")
    if not (data_dir / "meta.json").exists() or not any(data_dir.glob("shard-*.npz")):
        if not cfg.teach_games:
            raise ValueError(f"--data {data_dir}: no dgteach data there (set --teach-games to generate it)")
        what = "search labels" if card else f"{cfg.teacher} demonstrations of {cfg.game}"
        print(f"dgenv.train: generating {cfg.teach_games} games of {what} in {data_dir}", file=sys.stderr)
        generate(data_dir, cfg.players, cfg.teach_games, cfg.teach_worlds, cfg.teach_table, cfg.teach_eps,
                 cfg.teach_seed or cfg.seed, cfg.teach_minutes, cfg.deals, cfg.progress,
                 game=cfg.game, game_params=cfg.game_params, teacher=cfg.teacher)
    t_gen = time.monotonic() - t0
    meta, arr, shard = load_teach(data_dir, cfg.max_records)
    data_game = str((meta.get("game") or {}).get("name") or DEFAULT_GAME)
    if data_game != cfg.game:
        raise ValueError(f"--data {data_dir}: labels of {data_game}, the run has --game {cfg.game}")
    if card and int(meta["players"]) != cfg.players:
        raise ValueError(f"--data {data_dir}: {meta['players']} players, the run has --players {cfg.players}")
    players = int(meta["players"])
    sections = meta["obs"]["sections"]
    offs = {s["name"]: int(s["offset"]) for s in sections}
    D = int(meta["obs_size"])
    pmeta = PolicyMeta.from_spec(teach_spec(meta), deals=int(meta["deals"]) if card else None)
    if card:  # the logits are fitted to the search values over tau points: logit * tau ~ q
        pmeta = replace(pmeta, logit_scale=float(cfg.tau))
    phi = game_potential(meta, cfg.reward)
    vt = (arr["ret"] - (phi(arr["obs"]) if phi is not None else 0.0)) * cfg.reward_scale

    # held out: every 20th shard (whole games), or the last 5% when there are few shards
    ushards = np.unique(shard)
    held = np.isin(shard, ushards[::20][1:]) if ushards.size >= 40 else np.arange(shard.size) >= int(0.95 * shard.size)
    if held.all() or not held.any():
        held = np.arange(shard.size) >= max(1, int(0.95 * shard.size))

    def tensors(sel: np.ndarray) -> dict[str, torch.Tensor]:
        return {
            "obs": torch.from_numpy(np.ascontiguousarray(arr["obs"][sel])),
            "mask": torch.from_numpy(arr["mask"][sel]),
            "q": torch.from_numpy(arr["q"][sel]),
            "action": torch.from_numpy(arr["action"][sel]),
            "vt": torch.from_numpy(vt[sel].astype(np.float32)),
        }

    tr, va = tensors(~held), tensors(held)
    augment = cfg.augment and card  # renaming colours is the card game's symmetry
    if augment:
        perm_obs, perm_act = (torch.from_numpy(x) for x in colour_permutations(sections, D))
    del arr
    n = tr["obs"].shape[0]
    t1 = time.monotonic()  # the --minutes budget is the training's, not the data generation's

    if cfg.init:
        net, m0, _ = load_checkpoint(cfg.init)
        if m0.obs_size != D:
            raise ValueError(f"--init {cfg.init}: obs size {m0.obs_size}, data has {D}")
        net.train()
    else:
        feats = None
        if cfg.features and card:
            feats = {"players": players, "offsets": {k: offs[k] for k in ("hand", "current_trick", "prizes")}}
        net = PolicyNet(D, cfg.hidden, cfg.activation, scale=obs_scale(sections, D), features=feats,
                        num_actions=int(meta["num_actions"]))
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, eps=1e-5)
    steps_per_epoch = math.ceil(n / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    budget = cfg.minutes * 60.0
    log = Logger(out, cfg.tensorboard)
    pbar = None
    if cfg.progress:
        try:
            from tqdm import tqdm

            pbar = tqdm(total=total, unit="batch", desc=cfg.name, dynamic_ncols=True)
        except ImportError:
            pbar = None
    step = 0
    best = (math.inf, -1)
    hist: list[dict[str, Any]] = []
    last_eval = time.monotonic()
    stopped = False
    try:
        for epoch in range(cfg.epochs):
            run = {"loss": 0.0, "ce": 0.0, "v": 0.0, "k": 0}
            for idx in _batches(n, cfg.batch_size, gen):
                frac = min(1.0, max(step / total, (time.monotonic() - t1) / budget if budget else 0.0))
                lr = cfg.lr * (1.0 - (1.0 - cfg.lr_final) * frac)
                for g in opt.param_groups:
                    g["lr"] = lr
                obs = tr["obs"][idx]
                mask = tr["mask"][idx]
                q = tr["q"][idx]
                if augment:  # each sample with its colours renamed by a random permutation
                    k = torch.randint(0, perm_obs.shape[0], (idx.numel(),), generator=gen)
                    obs = obs.gather(1, perm_obs[k])
                    mask = mask.gather(1, perm_act[k])
                    q = q.gather(1, perm_act[k])
                lg, v = net(obs.float())
                lsm = torch.log_softmax(masked_logits(lg, mask), dim=1)
                tgt = torch.softmax(masked_logits(q / cfg.tau, mask), dim=1)
                ce = -(tgt * lsm).sum(1).mean()
                vl = 0.5 * (v - tr["vt"][idx]).square().mean()
                loss = ce + cfg.vf_coef * vl
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                opt.step()
                step += 1
                run["loss"] += loss.item()
                run["ce"] += ce.item()
                run["v"] += vl.item()
                run["k"] += 1
                if pbar is not None:
                    pbar.update(1)
                if cfg.updates and step >= cfg.updates:
                    stopped = True
                    break
                if budget and time.monotonic() - t1 >= budget:
                    stopped = True
                    break
                if time.monotonic() - last_eval >= cfg.eval_every_s:
                    break  # end the "epoch" row early: a periodic held-out check
            nk = max(run["k"], 1)
            m = imitation_metrics(net, va, cfg.tau)
            last_eval = time.monotonic()
            row = {
                "update": step, "epoch": epoch + 1, "step": step * cfg.batch_size, "time": round(time.monotonic() - t0, 1),
                "lr": lr, "train_loss": run["loss"] / nk, "train_ce": run["ce"] / nk, "train_v": run["v"] / nk,
                "val_ce": m["ce"], "val_agree": m["agree"], "val_regret": m["regret"], "val_v_mse": m["v_mse"],
            }
            hist.append(row)
            log.row("metrics", row, step)
            if on_update is not None:
                on_update(row)
            if pbar is not None:
                pbar.set_postfix({"agree": f"{m['agree']:.3f}", "regret": f"{m['regret']:.3f}"}, refresh=True)
            if m["regret"] < best[0]:
                best = (m["regret"], step)
                save_checkpoint(out / "checkpoints" / "best.pt", net, pmeta, {"update": step, "val_regret": m["regret"]})
            if stopped:
                break
        if pbar is not None:
            pbar.close()
            pbar = None
        ck = save_checkpoint(out / "checkpoints" / "final.pt", net, pmeta, {"update": step})
        teacher = f"search ({meta['worlds']} worlds)" if card else f"{meta.get('teacher')} ({data_game})"
        desc = (f"dgenv.train {cfg.name}: imitation of {teacher} on {n} decisions, "
                f"{step} batches of {cfg.batch_size}, seed {cfg.seed}")
        onnx_path = export_onnx(net, pmeta, out / "policy.onnx", description=desc)
        if cfg.plot:
            plot_imitation(out, cfg.name)
        final = final_evaluation(onnx_path, cfg, players)
        for r in final:
            log.row("eval", _eval_row(r, step), step)
        summary = {
            "out": str(out), "game": data_game, "players": players,
            "checkpoint": str(ck), "onnx": str(onnx_path), "updates": step, "steps": step * cfg.batch_size,
            "records": int(n), "held_out": int(va["obs"].shape[0]), "data": str(data_dir),
            "minutes": round((time.monotonic() - t0) / 60.0, 2), "teach_minutes": round(t_gen / 60.0, 2),
            "last": hist[-1] if hist else None, "best_val_regret": {"regret": best[0], "update": best[1]},
            "final_eval": final,
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        return summary
    finally:
        if pbar is not None:
            pbar.close()
        log.close()


def final_evaluation(onnx_path: Path, cfg: Any, players: int) -> list[dict[str, Any]]:
    """The policy at one seat against ``players - 1`` bots of each of ``cfg.eval_opponents``,
    ``cfg.final_eval_games`` duplicate games by ``bin/dgeval`` (:func:`dgenv.train.evaluate_onnx`)."""
    if not cfg.final_eval_games:
        return []
    return [evaluate_onnx(onnx_path, opp, cfg.final_eval_games, players, cfg.deals, cfg.eval_seed, cfg.game,
                          parse_params(cfg.game_params))
            for opp in cfg.eval_opponents]


def _eval_row(r: dict[str, Any], step: int) -> dict[str, Any]:
    return {
        "update": step, "step": step, "time": 0.0, "tag": "final", "opponent": r["opponent"], "games": r["games"],
        "score": r["score"][0], "score_ci95": r["score"][1], "opp_score": r["opp_score"][0],
        "opp_score_ci95": r["opp_score"][1], "diff": r["diff"][0], "diff_ci95": r["diff"][1],
        "win_rate": r["win_rate"][0], "win_rate_ci95": r["win_rate"][1],
    }


def plot_imitation(out: Path, title: str = "") -> Optional[Path]:
    """``curve.png``: held-out agreement with search and regret per decision over training."""
    import csv

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    if not rows:
        return None
    x = [int(r["step"]) / 1e6 for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax.plot(x, [float(r["val_agree"]) for r in rows], "o-", ms=3, label="agreement with search's card")
    ax.set_xlabel("training samples seen (millions)")
    ax.set_ylabel("agreement (held-out)")
    ax2 = ax.twinx()
    ax2.plot(x, [float(r["val_regret"]) for r in rows], "s-", ms=3, color="C1", label="regret (points/decision)")
    ax2.set_ylabel("regret: search value lost per decision (points)")
    ax.set_title(title or out.name)
    ax.grid(alpha=0.3)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="center right", fontsize=8)
    fig.tight_layout()
    p = out / "curve.png"
    fig.savefig(p)
    plt.close(fig)
    return p
