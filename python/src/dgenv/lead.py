"""One agent's lead over another in duplicate tables: ``python -m dgenv.lead``.

Reads the CSVs that ``bin/dgeval -duplicate -csv`` writes (``game, deal_seed``,
then one ``i:agent`` column of totals per agent of the table; one file a seed)
and reports how many points a game ``--agent`` scores ahead of ``--over``:
each seat's total less the mean of the other seats (dgeval's score difference;
seats held by one name pooled per game), the agent's less the other's. Each
deal is one sample (the mean over its seatings), so the 95% interval counts
the deals, not the games, that the seatings of one deal share. The figure is
split by the order of the table: the seatings that rotate the agents' order
(``env.Seatings``: the first P of the 2P) and those that rotate its reverse.

``--less`` pairs it with the same figure in another set of tables (the same
games with another network in the agent's column): the difference per deal,
e.g. a new network less the committed one on the same deals. Every game of
one set must be in the other (the same deal seed and seating).

The tables of docs/training.md since its "Session 52" are this figure::

    python -m dgenv.lead csv/r13-p3-s*.csv --less csv/r12-p3-s*.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from .evaluate import seatings
from .stats import estimate95

__all__ = ["Table", "read_table", "leads", "lead_report", "main"]


class Table:
    """The games of one or more dgeval CSVs of the same table: ``agents`` (one per
    column), ``scores[k, i]`` (agent i's total in game k), ``seed[k]`` (the deal) and
    ``seating[k]`` (k mod Seatings(P) within its file)."""

    def __init__(self, agents: list[str], scores: np.ndarray, seed: np.ndarray, seating: np.ndarray) -> None:
        self.agents, self.scores, self.seed, self.seating = agents, scores, seed, seating

    @property
    def players(self) -> int:
        return len(self.agents)


def _read_one(path: Path) -> tuple[list[str], list[list[float]], list[int], list[int]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2 or len(rows[0]) < 4 or rows[0][:2] != ["game", "deal_seed"]:
        raise ValueError(f"{path}: want dgeval's -csv: a header game,deal_seed,0:<agent>,1:<agent>,... and games")
    agents = []
    for i, col in enumerate(rows[0][2:]):
        idx, _, name = col.partition(":")
        if idx != str(i) or not name:
            raise ValueError(f"{path}: column {i + 2} is {col!r}, want \"{i}:<agent>\"")
        agents.append(name)
    ns = seatings(len(agents))
    scores, seeds, seating = [], [], []
    for k, row in enumerate(rows[1:]):
        if len(row) != len(rows[0]):
            raise ValueError(f"{path}: game row {k + 1} has {len(row)} fields, want {len(rows[0])}")
        try:
            game, seed = int(row[0]), int(row[1])
            scores.append([float(x) for x in row[2:]])
        except ValueError:
            raise ValueError(f"{path}: game row {k + 1}: want integers, got {row}") from None
        if game != k:
            raise ValueError(f"{path}: game row {k + 1} is game {game}, want {k} (the games in dgeval's order)")
        seeds.append(seed)
        seating.append(game % ns)
    if len(scores) % ns:
        raise ValueError(f"{path}: {len(scores)} games, not whole duplicate sets of {ns} seatings (-duplicate)")
    return agents, scores, seeds, seating


def read_table(paths: Sequence[str | Path]) -> Table:
    """The games of ``paths`` (dgeval ``-csv`` files of one table: the same agents)."""
    if not paths:
        raise ValueError("no CSV files")
    agents: Optional[list[str]] = None
    scores: list[list[float]] = []
    seeds: list[int] = []
    seating: list[int] = []
    for p in paths:
        a, sc, sd, st = _read_one(Path(p))
        if agents is not None and a != agents:
            raise ValueError(f"{p}: agents {','.join(a)}, want the first file's {','.join(agents)}")
        agents = a
        scores += sc
        seeds += sd
        seating += st
    assert agents is not None
    keys = set(zip(seeds, seating))
    if len(keys) != len(seeds):
        raise ValueError(f"{len(seeds) - len(keys)} games repeat a deal seed and seating (a file given twice?)")
    return Table(agents, np.array(scores, dtype=np.float64), np.array(seeds, dtype=np.uint64), np.array(seating))


def _column(t: Table, name: str, flag: str) -> list[int]:
    cols = [i for i, a in enumerate(t.agents) if a == name]
    if not cols:
        raise ValueError(f"{flag} {name}: not at the table ({','.join(t.agents)})")
    return cols


def _diff(t: Table, name: str, flag: str) -> np.ndarray:
    """Per game: the seats of ``name``, each its total less the mean of the other seats, averaged (dgeval's score difference)."""
    p = t.players
    d = t.scores - (t.scores.sum(1, keepdims=True) - t.scores) / (p - 1)
    return d[:, _column(t, name, flag)].mean(1)


def default_agent(t: Table) -> str:
    """The first ``policy:`` agent of the table."""
    for a in t.agents:
        if a.startswith("policy:"):
            return a
    raise ValueError(f"no policy: agent at the table ({','.join(t.agents)}); give --agent")


def leads(t: Table, agent: str, over: str, less: Optional[Table] = None, less_agent: Optional[str] = None) -> np.ndarray:
    """Per game of ``t``: ``agent``'s score difference less ``over``'s; with ``less``, less the same
    figure of ``less_agent`` over ``over`` in the same game (deal seed and seating) of ``less``."""
    if agent == over:
        raise ValueError(f"--agent and --over are both {agent}")
    x = _diff(t, agent, "--agent") - _diff(t, over, "--over")
    if less is None:
        return x
    if less.players != t.players:
        raise ValueError(f"--less: a {less.players}-player table, want {t.players} players")
    y = _diff(less, less_agent or default_agent(less), "--less agent") - _diff(less, over, "--over")
    at = {k: j for j, k in enumerate(zip(less.seed.tolist(), less.seating.tolist()))}
    idx = [at.get(k, -1) for k in zip(t.seed.tolist(), t.seating.tolist())]
    missing = sum(1 for j in idx if j < 0)
    if missing or len(at) != len(idx):
        raise ValueError(f"--less: the tables are not the same games ({missing} of {len(idx)} games not in --less, "
                         f"which has {len(at)}); table both on the same seeds")
    return x - y[np.array(idx)]


def _per_deal(x: np.ndarray, seed: np.ndarray) -> dict[str, Any]:
    _, inv = np.unique(seed, return_inverse=True)
    deal = np.bincount(inv, x) / np.bincount(inv)
    e = estimate95(deal.tolist())
    return {"mean": e["mean"], "ci95": e["ci95"], "deals": int(deal.size), "games": int(x.size)}


def lead_report(t: Table, agent: str, over: str, less: Optional[Table] = None,
                less_agent: Optional[str] = None) -> dict[str, Any]:
    """``{"agent", "over", "less", "all", "table_order", "reversed_order"}``: each ``{"mean", "ci95",
    "deals", "games"}``, points a game with a 95% interval over the deals (``reversed_order`` is None
    below 3 players, where there is no reversed seating)."""
    x = leads(t, agent, over, less, less_agent)
    p = t.players
    rev = t.seating >= p
    out: dict[str, Any] = {"agent": agent, "over": over,
                           "less": (less_agent or default_agent(less)) if less is not None else None,
                           "all": _per_deal(x, t.seed), "table_order": _per_deal(x[~rev], t.seed[~rev]),
                           "reversed_order": _per_deal(x[rev], t.seed[rev]) if rev.any() else None}
    return out


def _fmt(e: dict[str, Any]) -> str:
    return f"{e['mean']:+.2f} ± {e['ci95']:.2f} points a game ({e['deals']} deals, {e['games']} games)"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(prog="python -m dgenv.lead", description=__doc__.split("\n\n")[0],
                                epilog="e.g. python -m dgenv.lead csv/new-s*.csv --less csv/old-s*.csv")
    p.add_argument("csv", nargs="+", help="dgeval -duplicate -csv files of one table (one a seed)")
    p.add_argument("--agent", default=None, help="the agent whose lead (default the table's first policy:)")
    p.add_argument("--over", default="search", help="over this agent (default search)")
    p.add_argument("--less", nargs="+", default=None, metavar="CSV",
                   help="the same games with another agent in --agent's place: the difference per deal")
    p.add_argument("--less-agent", default=None, help="that agent (default that table's first policy:)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = p.parse_args(argv)
    try:
        t = read_table(a.csv)
        less = read_table(a.less) if a.less else None
        r = lead_report(t, a.agent or default_agent(t), a.over, less, a.less_agent)
    except (OSError, ValueError) as e:
        print(f"dgenv.lead: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, indent=2))
        return 0
    head = f"{r['agent']} less {r['over']}" + (f", less {r['less']}'s on the same games" if r["less"] else "")
    print(f"{head}: {_fmt(r['all'])}")
    print(f"  the table's order ({','.join(t.agents)}): {_fmt(r['table_order'])}")
    if r["reversed_order"] is not None:
        print(f"  the reversed order: {_fmt(r['reversed_order'])}")
    return 0


if __name__ == "__main__":
    from ._cli import run

    run(main)
