"""Match statistics, computed exactly as the Go side (``env.MatchResult``) computes them.

``bin/dgeval`` and :mod:`dgenv.evaluate`'s Python backend report the same
figures for the same games: :func:`summarize` mirrors ``Summarize`` (per
agent name: total per game, total minus the mean of the other seats, share
of the win, each a mean with a normal 95% interval; seats held by one name
are pooled per game into one sample) and :func:`ratings` mirrors ``Ratings``
(Bradley-Terry fitted by minorization-maximization to every pairwise
comparison of totals within each game, a tie counting half, with a prior of
one draw against every other agent, on the Elo scale with mean 1500). The
test suite checks both against ``dgeval -json`` on the games of its ``-csv``.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["estimate95", "summarize", "ratings"]


def estimate95(xs: Sequence[float]) -> dict[str, float]:
    """``{"mean", "ci95"}``: the sample mean and 1.96 standard errors (inf for one sample, nan for none)."""
    a = np.asarray(xs, dtype=np.float64)
    if a.size == 0:
        return {"mean": float("nan"), "ci95": float("nan")}
    m = float(a.sum() / a.size)
    if a.size < 2:
        return {"mean": m, "ci95": float("inf")}
    ss = float(((a - m) ** 2).sum())
    return {"mean": m, "ci95": 1.96 * math.sqrt(ss / (a.size - 1) / a.size)}


def summarize(agents: Sequence[str], scores: Any) -> list[dict[str, Any]]:
    """Per-name statistics of games ``scores[k][i]`` (agent ``agents[i]``'s total in game k), in first-seen order."""
    sc = np.asarray(scores, dtype=np.int64).reshape(-1, len(agents))
    p = len(agents)
    order = list(dict.fromkeys(agents))
    tot = sc.sum(axis=1)
    best = sc.max(axis=1)
    nbest = (sc == best[:, None]).sum(axis=1)
    out = []
    for name in order:
        idx = [i for i, a in enumerate(agents) if a == name]
        s = sc[:, idx].astype(np.float64)
        d = s - (tot[:, None] - s) / (p - 1)
        w = np.where(sc[:, idx] == best[:, None], 1.0 / nbest[:, None], 0.0)
        out.append({
            "name": name, "seats": len(idx),
            "score": estimate95(s.mean(axis=1)), "score_diff": estimate95(d.mean(axis=1)), "win_rate": estimate95(w.mean(axis=1)),
        })
    return out


def ratings(agents: Sequence[str], scores: Any, iters: int = 500) -> dict[str, float]:
    """Bradley-Terry ratings on the Elo scale (mean 1500), as ``MatchResult.Ratings``."""
    names = list(dict.fromkeys(agents))
    ix = [names.index(a) for a in agents]
    m = len(names)
    wins = np.zeros((m, m))
    sc = np.asarray(scores, dtype=np.int64).reshape(-1, len(agents))
    for i in range(len(agents)):
        for j in range(len(agents)):
            a, b = ix[i], ix[j]
            if i == j or a == b:
                continue
            wins[a, b] += float((sc[:, i] > sc[:, j]).sum()) + 0.5 * float((sc[:, i] == sc[:, j]).sum())
    s = [1.0] * m
    for _ in range(iters):
        for i in range(m):
            num = den = 0.0
            for j in range(m):
                if i == j:
                    continue
                num += wins[i, j] + 0.5
                den += (wins[i, j] + wins[j, i] + 1) / (s[i] + s[j])
            if den > 0:
                s[i] = num / den
    logs = [400 * math.log10(x) for x in s]
    mean = sum(logs) / m
    return {n: 1500 + logs[i] - mean for i, n in enumerate(names)}
