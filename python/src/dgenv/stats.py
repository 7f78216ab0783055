"""Match statistics, computed by the Go engine (``env.MatchResult``) through ``libdgenv``.

``bin/dgeval`` and :mod:`dgenv.evaluate`'s Python backend report the same
figures for the same games because both are the same Go code:
:func:`summarize` is ``Summarize`` (per agent name: total per game, total
minus the mean of the other seats, share of the win, each a mean with a
normal 95% interval; seats held by one name are pooled per game into one
sample), :func:`ratings` is ``Ratings`` (Bradley-Terry fitted by
minorization-maximization to every pairwise comparison of totals within
each game, a tie counting half, with a prior of one draw against every
other agent, on the Elo scale with mean 1500) and :func:`estimate95` is
``Estimate95``. The library is loaded (and, in a source checkout, built) on
first use, as for :func:`dgenv.local`.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

import numpy as np

from . import _capi

__all__ = ["estimate95", "summarize", "ratings", "match_stats"]


def estimate95(xs: Sequence[float]) -> dict[str, float]:
    """``{"mean", "ci95"}``: the sample mean and 1.96 standard errors (inf for one sample, nan for none)."""
    a = np.ascontiguousarray(xs, dtype=np.float64).reshape(-1)
    out = np.empty(2, dtype=np.float64)
    lib = _capi.lib()
    err = _capi.errbuf()
    _capi.check(lib.dg_estimate95(a.ctypes.data if a.size else None, a.nbytes, out.ctypes.data, out.nbytes,
                                  err, _capi.ERRCAP), err)
    return {"mean": float(out[0]), "ci95": float(out[1])}


def match_stats(agents: Sequence[str], scores: Any) -> dict[str, Any]:
    """``{"games", "agents", "ratings"}`` of games ``scores[k][i]`` (agent ``agents[i]``'s total in game k):
    dgeval -json's ``agents`` (:func:`summarize`) and ``ratings`` (:func:`ratings`), from one call.

    A figure that is not finite (the interval of a single game, anything of
    none) is ``inf`` or ``nan`` here, where dgeval's JSON writes null.

    Raises:
        BadRequest: fewer than two agents, or scores that are not whole games of ``len(agents)`` seats.
    """
    names = [str(a) for a in agents]
    sc = np.ascontiguousarray(scores, dtype=np.int64).reshape(-1)  # the engine checks it is whole games
    raw = json.dumps(names).encode()
    lib = _capi.lib()
    err = _capi.errbuf()
    ptr = sc.ctypes.data if sc.size else None
    out = _capi.call_json(lib.dg_match_stats, raw, len(raw), ptr, sc.nbytes, errbuf=err)
    # Go's map comes back in key order: the agents' first-seen order, as in "agents".
    out["ratings"] = {a["name"]: float(out["ratings"][a["name"]]) for a in out["agents"]}
    games = int(out["games"])
    for a in out["agents"]:
        for k in ("score", "score_diff", "win_rate"):
            a[k] = _finite_or_not(a[k], games)
    return out


def _finite_or_not(e: dict[str, Optional[float]], n: int) -> dict[str, float]:
    """An estimate from the JSON, its nulls back to what :func:`estimate95` gives for ``n`` samples."""
    mean = float("nan") if e["mean"] is None else float(e["mean"])
    ci = e["ci95"]
    if ci is None:
        ci = float("inf") if n == 1 else float("nan")
    return {"mean": mean, "ci95": float(ci)}


def summarize(agents: Sequence[str], scores: Any) -> list[dict[str, Any]]:
    """Per-name statistics of games ``scores[k][i]`` (agent ``agents[i]``'s total in game k), in first-seen order:
    ``{"name", "seats", "score", "score_diff", "win_rate"}``, each figure an :func:`estimate95`."""
    return list(match_stats(agents, scores)["agents"])


def ratings(agents: Sequence[str], scores: Any) -> dict[str, float]:
    """Bradley-Terry ratings on the Elo scale (mean 1500), as ``MatchResult.Ratings``."""
    return dict(match_stats(agents, scores)["ratings"])
