"""Matches between bots and trained policies: ``python -m dgenv.evaluate``.

Plays ``--games`` games with the seats rotated and, with ``--duplicate``,
every deal replayed in every seating so the luck of the cards cancels, then
reports per agent the mean score per game, the score difference (own total
minus the mean of the other seats) and the win rate, each with its 95%
interval, plus Bradley-Terry ratings. Writes ``results.json``, ``results.csv``
and a bar chart ``results.png`` (error bars = 95% intervals) to ``--out``.

Agents: ``random``, ``heuristic``, ``search``, and trained policies as
``policy:NAME`` (``NAME.onnx`` in ``--policies DIR``) or ``policy:PATH.onnx``
(any file; it is copied into a temporary policies directory).

Backends:

* ``dgeval`` (default when a dgeval that supports ``-policies`` is found:
  the wheel's ``dgenv/_bin/dgeval``, ``$DGENV_DGEVAL``, PATH, or the
  repository's ``bin/dgeval``): the Go
  command plays everything in process, on every core: fastest, and the only
  one for mixed tables and the search bot at scale.
* ``python``: server sessions; the policy seats are played in Python with
  the numpy reference forward (:class:`dgenv.policy.OnnxPolicy`), the other
  seats by one server bot; one session per seating (:func:`seatings`) with the same
  seed, so every seating sees the same deals (duplicate). For tables of
  policies against one bot kind only.

The same ``--seed`` gives the same games and the same numbers.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ._clients import resolve_client
from .server import serve
from .spec import DEFAULT_GAME
from .stats import ratings, summarize

__all__ = ["evaluate", "find_dgeval", "plot_results", "write_results", "main"]

_PROGRESS = re.compile(r"(\d+)/(\d+) games")


def find_dgeval(binary: Optional[str] = None, build: bool = True) -> Optional[Path]:
    """Path of the ``dgeval`` binary (:func:`dgenv.server.find_binary`'s search:
    ``binary``, the wheel's, ``$DGENV_DGEVAL``, PATH, the repository's
    ``bin/dgeval`` built when missing or older than the Go sources), or None."""
    from .errors import ServerStartError
    from .server import find_binary

    try:
        return find_binary("dgeval", binary or None, "auto" if build else False)
    except ServerStartError:
        return None


def _dgeval_supports_policies(exe: Path) -> bool:
    try:
        p = subprocess.run([str(exe), "-h"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "-policies" in p.stdout


def _resolve_policies(agents: Sequence[str], policies_dir: Optional[str], tmp: Path) -> tuple[list[str], Optional[Path], dict[str, Path]]:
    """Agent names for dgeval and the policies directory; ``policy:path.onnx`` becomes ``policy:<stem>``."""
    names: list[str] = []
    files: dict[str, Path] = {}
    pdir: Optional[Path] = Path(policies_dir) if policies_dir else None
    for a in agents:
        if not a.startswith("policy:"):
            names.append(a)
            continue
        ref = a[len("policy:"):]
        if ref.endswith(".onnx") or os.sep in ref:
            src = Path(ref).resolve()
            if not src.is_file():
                raise FileNotFoundError(f"agent {a}: no file {src}")
            stem = re.sub(r"[^A-Za-z0-9_-]", "_", src.stem) or "policy"
            while stem in files and files[stem] != src:
                stem += "_"
            files[stem] = src
            names.append(f"policy:{stem}")
        else:
            if pdir is None:
                raise ValueError(f"agent {a}: give --policies DIR (with {ref}.onnx) or a path to the .onnx file")
            files[ref] = (pdir / f"{ref}.onnx").resolve()
            names.append(a)
    if files:
        tmp.mkdir(parents=True, exist_ok=True)
        for stem, src in files.items():
            dst = tmp / f"{stem}.onnx"
            if not dst.exists():  # a copy: dgeval opens the folder as a root and refuses links out of it
                shutil.copyfile(src, dst)
        pdir = tmp
    return names, pdir, files


def _run_dgeval(
    exe: Path, agents: list[str], players: int, deals: Optional[int], games: int, seed: int, duplicate: bool,
    policies: Optional[Path], workers: int, progress: bool, tmp: Path, game: str = DEFAULT_GAME,
    game_params: Optional[Mapping[str, int]] = None,
) -> dict[str, Any]:
    out = tmp / "dgeval.json"
    cmd = [str(exe), "-players", str(players), "-agents", ",".join(agents), "-games", str(games),
           "-seed", str(seed), "-json", str(out)]
    if game != DEFAULT_GAME:
        cmd += ["-game", game]
    if game_params:
        cmd += ["-game-params", ",".join(f"{k}={int(v)}" for k, v in game_params.items())]
    if deals:
        cmd += ["-deals", str(deals)]
    if duplicate:
        cmd.append("-duplicate")
    if workers:
        cmd += ["-workers", str(workers)]
    if policies is not None:
        cmd += ["-policies", str(policies)]
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(total=games, unit="game", desc="dgeval", dynamic_ncols=True)
        except ImportError:
            bar = None
    else:
        cmd.append("-quiet")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    err_tail: list[str] = []
    assert proc.stderr is not None
    buf = ""
    while True:
        ch = proc.stderr.read(1)
        if not ch:
            break
        if ch in "\r\n":
            m = _PROGRESS.search(buf)
            if m and bar is not None:
                bar.total = int(m.group(2))
                bar.n = int(m.group(1))
                bar.refresh()
            elif buf.strip():
                err_tail.append(buf)
            buf = ""
        else:
            buf += ch
    if buf.strip():
        err_tail.append(buf)
    stdout = proc.stdout.read() if proc.stdout else ""
    rc = proc.wait()
    if bar is not None:
        bar.close()
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {rc}:\n" + "\n".join(err_tail[-20:]) + stdout)
    res = json.loads(out.read_text())
    res["backend"] = "dgeval"
    res["command"] = cmd
    res["report"] = stdout
    return res


def seatings(players: int) -> int:
    """How many seatings a duplicate set has, as dgeval's (``env.Seatings``): the
    ``players`` rotations of the agents' order and, from 3 players on, of the reversed
    order (so no agent always plays right after the same other agent)."""
    return players if players <= 2 else 2 * players


def seat_of(i: int, r: int, players: int) -> int:
    """The seat of agent ``i`` in seating ``r``, as dgeval's (``env.SeatOf``)."""
    return (i + r) % players if r < players else (r - players - i) % players


def _run_python(
    agents: list[str], files: dict[str, Path], players: int, deals: Optional[int], games: int, seed: int,
    duplicate: bool, progress: bool, server: Optional[str], game: str = DEFAULT_GAME,
    game_params: Optional[Mapping[str, int]] = None,
) -> dict[str, Any]:
    from .policy import OnnxPolicy

    pol_seats = [i for i, a in enumerate(agents) if a.startswith("policy:")]
    bots = {a for a in agents if not a.startswith("policy:")}
    if not pol_seats:
        raise ValueError("the python backend needs at least one policy agent: bots only are played by dgeval, and none "
                         "was found (the dgenv wheel carries one; in a checkout run `make build`, or set $DGENV_DGEVAL)")
    if len(bots) > 1:
        raise ValueError(f"the python backend plays one bot kind in the non-policy seats; have {sorted(bots)}: use dgeval")
    bot = next(iter(bots)) if bots else None
    models = {a: OnnxPolicy(files[a[len("policy:"):]]) for a in agents if a.startswith("policy:")}
    rotations = list(range(seatings(players))) if duplicate else [0]
    per_rot = max(1, games // len(rotations))
    client = resolve_client(server) if server else serve()
    rows: list[tuple[int, int, np.ndarray]] = []  # (game index, rotation, totals by seat)
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(total=per_rot * len(rotations), unit="game", desc="sessions", dynamic_ncols=True)
        except ImportError:
            bar = None
    try:
        for r in rotations:
            seat_agents = [""] * players
            for i in range(players):
                seat_agents[seat_of(i, r, players)] = agents[i]
            learners = [s for s, a in enumerate(seat_agents) if a.startswith("policy:")]
            card = game == DEFAULT_GAME
            env = client.make(players=players if card else None, num_envs=per_rot, seed=seed, deals=deals if card else None,
                              game={"name": game, **(game_params or {})},
                              learner_seats=learners if bot else None, opponent=bot, reward="points", obs_dtype=None)
            try:
                b = env.reset(seed=seed)
                got = np.zeros(per_rot, bool)
                totals = np.zeros((per_rot, players), np.int64)
                while not got.all():
                    acts = np.zeros(per_rot, np.int64)
                    for s in learners:
                        rows_s = np.flatnonzero(b.player == s)
                        if rows_s.size:
                            acts[rows_s] = models[seat_agents[s]].act(b.obs[rows_s], b.mask[rows_s])
                    b = env.step(acts)
                    new = b.done & ~got
                    totals[new] = b.scores[new]
                    got |= b.done
                    if bar is not None:
                        bar.n = len(rows) + int(got.sum())
                        bar.refresh()
            finally:
                env.close()
            rows.extend((g, r, totals[g]) for g in range(per_rot))
    finally:
        if bar is not None:
            bar.close()
        if hasattr(client, "stop"):
            client.stop()
    # agent i sat at seat seat_of(i, r, P): the totals by agent index, summarized as dgeval does (dgenv.stats)
    by_agent = np.array([[tot[seat_of(i, r, players)] for i in range(players)] for _, r, tot in rows], dtype=np.int64)
    return {"backend": "python", "games": len(rows), "players": players, "seed": seed, "duplicate": duplicate,
            "agents": summarize(agents, by_agent), "ratings": ratings(agents, by_agent)}


def evaluate(
    agents: Sequence[str],
    games: int = 2000,
    players: Optional[int] = None,
    deals: Optional[int] = None,
    seed: int = 1,
    duplicate: bool = True,
    policies: Optional[str] = None,
    backend: str = "auto",
    workers: int = 0,
    progress: bool = True,
    dgeval: Optional[str] = None,
    server: Optional[str] = None,
    game: Optional[str] = None,
    game_params: Optional[Mapping[str, int]] = None,
) -> dict[str, Any]:
    """Play a match and return its summary.

    Args:
        agents: one agent per seat (``"heuristic"``, ``"policy:NAME"``, ``"policy:path.onnx"``...).
        games: games to play (with ``duplicate``, dgeval counts every seating as a game).
        players: seats per table (default ``len(agents)``).
        deals: deals per game (default: as many as players).
        seed: the same seed replays the same games.
        duplicate: replay every deal in every seating (:func:`seatings`).
        policies: directory holding ``NAME.onnx`` for ``policy:NAME`` agents.
        backend: ``"dgeval"``, ``"python"`` or ``"auto"`` (dgeval when it can load policies).
        workers: dgeval goroutines (0 = all cores).
        progress: show a progress bar.
        dgeval: path of the dgeval binary.
        server: URL of a running server for the python backend (default: start one).
        game: the game (default the card game, ``"david_goliath"``; ``"duel"``...).
            ``players`` and ``deals`` are the card game's; other games have a fixed
            seat count (give as many agents).
        game_params: that game's parameters (e.g. ``{"max_rounds": 50}`` for the duel).

    Returns:
        ``{"backend", "games", "players", "seed", "duplicate", "agents": [{"name", "seats",
        "score", "score_diff", "win_rate"}], "ratings"}``, each statistic ``{"mean", "ci95"}``;
        the dgeval backend adds ``"by_seat"``: each agent's record from each seat it
        held (in the duel, each role): ``{"agent", "name", "seat", "games", "score",
        "wins", "draws", "losses"}``.
    """
    agents = [a.strip() for a in agents if a.strip()]
    game = game or DEFAULT_GAME
    players = players or len(agents)
    if len(agents) != players:
        raise ValueError(f"{len(agents)} agents for {players} seats")
    with tempfile.TemporaryDirectory(prefix="dgeval-") as td:
        tmp = Path(td)
        names, pdir, files = _resolve_policies(agents, policies, tmp / "policies")
        if files:
            from .policy import read_meta

            for stem, f in files.items():
                m = read_meta(f)
                if m.game != game:
                    raise ValueError(f"policy {stem} ({f}) plays {m.game}, the match is {game}")
                if m.players != players:
                    raise ValueError(f"policy {stem} ({f}) was trained for {m.players} players, the table has {players}")
        exe = None
        if backend in ("auto", "dgeval"):
            exe = find_dgeval(dgeval)
            ok = exe is not None and exe.is_file() and (not files or _dgeval_supports_policies(exe))
            if not ok:
                if backend == "dgeval":
                    raise RuntimeError("no dgeval binary that loads policies (-policies); build it with `make build`")
                exe = None
        if exe is not None:
            res = _run_dgeval(exe, names, players, deals, games, seed, duplicate, pdir if files else None,
                              workers, progress, tmp, game, game_params)
        else:
            res = _run_python(names, files, players, deals, games, seed, duplicate, progress, server, game, game_params)
        res["agent_files"] = {k: str(v) for k, v in files.items()}
        res["agents_given"] = agents
        return res


def write_results(res: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write ``results.json``, ``results.csv`` and ``results.png`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    pj = out / "results.json"
    pj.write_text(json.dumps(res, indent=2, default=str))
    pc = out / "results.csv"
    with open(pc, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["agent", "seats", "score", "score_ci95", "score_diff", "score_diff_ci95", "win_rate", "win_rate_ci95", "rating"])
        for a in res["agents"]:
            w.writerow([a["name"], a["seats"], a["score"]["mean"], a["score"]["ci95"], a["score_diff"]["mean"],
                        a["score_diff"]["ci95"], a["win_rate"]["mean"], a["win_rate"]["ci95"],
                        res.get("ratings", {}).get(a["name"], "")])
    paths = {"json": pj, "csv": pc}
    png = plot_results(res, out / "results.png")
    if png is not None:
        paths["png"] = png
    return paths


def plot_results(res: dict[str, Any], path: Path, title: str = "") -> Optional[Path]:
    """Bar chart of score per game and score difference per agent, with 95% error bars."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    ag = res["agents"]
    names = [a["name"] for a in ag]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.8), dpi=110)
    for ax, key, label in zip(axes, ("score", "score_diff", "win_rate"), ("points per game", "points - others' mean", "win rate")):
        m = [a[key]["mean"] if a[key]["mean"] is not None else float("nan") for a in ag]
        c = [0 if a[key]["ci95"] is None or (isinstance(a[key]["ci95"], float) and math.isnan(a[key]["ci95"])) else a[key]["ci95"] for a in ag]
        ax.bar(range(len(ag)), m, yerr=c, capsize=4, color=[f"C{i}" for i in range(len(ag))])
        ax.set_xticks(range(len(ag)))
        ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        if key == "score_diff":
            ax.axhline(0, color="k", lw=0.8)
    fig.suptitle(title or f"{res['games']} games, {res['players']} players, seed {res['seed']}"
                 f"{', duplicate' if res.get('duplicate') else ''} (error bars: 95% CI)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(prog="python -m dgenv.evaluate", description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", required=True, help="comma-separated, one per seat: random, heuristic, search, policy:NAME or policy:FILE.onnx")
    p.add_argument("--games", type=int, default=2000)
    p.add_argument("--players", type=int, default=None)
    p.add_argument("--deals", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duplicate", type=lambda s: s.lower() in ("1", "true", "yes", "on"), default=True, metavar="BOOL")
    p.add_argument("--policies", default=None, help="directory with NAME.onnx for policy:NAME")
    p.add_argument("--backend", choices=("auto", "dgeval", "python"), default="auto")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--out", default="eval_results", help="folder for results.json/.csv/.png")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--dgeval", default=None, help="path of the dgeval binary")
    p.add_argument("--server", default=None, help="URL of a running server (python backend)")
    p.add_argument("--game", default=None, help="the game (default the card game; e.g. duel)")
    p.add_argument("--game-params", default="", help="that game's parameters, k=v comma-separated (e.g. max_rounds=50)")
    a = p.parse_args(argv)
    gp = {k: int(v) for k, v in (kv.split("=", 1) for kv in a.game_params.split(",") if kv)}
    res = evaluate(a.agents.split(","), a.games, a.players, a.deals, a.seed, a.duplicate, a.policies, a.backend,
                   a.workers, not a.quiet, a.dgeval, a.server, game=a.game, game_params=gp or None)
    paths = write_results(res, Path(a.out))
    print(f"{res['games']} games, {res['players']} players, seed {res['seed']}, duplicate {res['duplicate']}, backend {res['backend']}")
    print(f"{'agent':<24} {'seats':>5} {'score/game':>16} {'score diff':>16} {'win rate':>14} {'rating':>7}")
    for ag in res["agents"]:
        def f(d: dict, k: int = 1) -> str:
            num = lambda x: "nan" if x is None else f"{x:.{k}f}"  # dgeval writes null for non-finite
            return f"{num(d.get('mean'))} ± {num(d.get('ci95'))}"

        print(f"{ag['name']:<24} {ag['seats']:>5} {f(ag['score']):>16} {f(ag['score_diff']):>16} {f(ag['win_rate'], 3):>14} "
              f"{res.get('ratings', {}).get(ag['name'], float('nan')):>7.0f}")
    print("wrote " + ", ".join(str(v) for v in paths.values()))
    return 0


if __name__ == "__main__":
    from ._cli import run

    run(main)
