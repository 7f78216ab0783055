"""Python's match statistics agree with Go's (dgeval) on the same games.

Games played in Python (here: made-up totals with many ties) are written in
the CSV that ``dgeval -csv`` writes and summarised by ``dgeval -scores``
(Go's env.MatchResult); :mod:`dgenv.stats`, which :func:`dgenv.train.evaluate_policy`
and :mod:`dgenv.evaluate`'s Python backend report, must give the same figures
for the same totals.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dgenv.evaluate import find_dgeval
from dgenv import stats


def _dgeval_summary(tmp: Path, agents: list[str], scores: np.ndarray) -> dict:
    exe = find_dgeval()
    assert exe is not None, "bin/dgeval is needed (go build ./cmd/dgeval)"
    csv = tmp / "scores.csv"
    rows = ["game,deal_seed," + ",".join(f"{i}:{a}" for i, a in enumerate(agents))]
    rows += [f"{k},{k + 1}," + ",".join(str(int(x)) for x in row) for k, row in enumerate(scores)]
    csv.write_text("\n".join(rows) + "\n")
    out = tmp / "summary.json"
    r = subprocess.run([str(exe), "-scores", str(csv), "-json", str(out), "-quiet"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(out.read_text())


def test_python_statistics_agree_with_dgeval_scores(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    # Small totals, so that ties (for the best total too) are frequent.
    scores = rng.integers(0, 4, size=(400, 4))
    assert ((scores == scores.max(axis=1, keepdims=True)).sum(axis=1) > 1).sum() > 50
    agents = ["learner", "bot", "bot", "bot"]  # the bots' three seats are pooled per game
    go_sum = _dgeval_summary(tmp_path, agents, scores)
    go = {a["name"]: a for a in go_sum["agents"]}
    py = {a["name"]: a for a in stats.summarize(agents, scores)}
    assert set(py) == set(go) == {"learner", "bot"}
    for name in py:
        assert py[name]["seats"] == go[name]["seats"]
        for k in ("score", "score_diff", "win_rate"):
            np.testing.assert_allclose([py[name][k]["mean"], py[name][k]["ci95"]],
                                       [go[name][k]["mean"], go[name][k]["ci95"]], rtol=1e-9, err_msg=f"{name} {k}")
    pr = stats.ratings(agents, scores)
    for name, elo in go_sum["ratings"].items():
        assert abs(pr[name] - elo) < 1e-6, (name, pr[name], elo)
    # The old rule (0.5 for any tie, seat by seat) differs on these games: the test can fail.
    me, best_other = scores[:, 0], scores[:, 1:].max(axis=1)
    old = np.where(me > best_other, 1.0, np.where(me == best_other, 0.5, 0.0)).mean()
    assert abs(old - go["learner"]["win_rate"]["mean"]) > 1e-3


def test_seatings_are_dgevals() -> None:
    """The Python backend seats agents as dgeval does: dgeval's by-seat records of a
    duplicate match show each agent at each seat seatings(P) / P times."""
    import json
    import subprocess
    import tempfile

    from dgenv.evaluate import find_dgeval, seat_of, seatings

    for p in (2, 3, 4, 6):
        for r in range(seatings(p)):
            assert sorted(seat_of(i, r, p) for i in range(p)) == list(range(p))
    exe = find_dgeval()
    with tempfile.TemporaryDirectory() as td:
        out = f"{td}/m.json"
        agents = "heuristic,random,random"
        subprocess.run([str(exe), "-players", "3", "-deals", "1", "-agents", agents, "-games", "6", "-duplicate",
                        "-quiet", "-json", out], check=True, capture_output=True)
        res = json.loads(open(out).read())
    # 6 games = one set of 2 x 3 seatings: agent 0 (heuristic) once... twice at every seat
    held = {r["seat"]: r["games"] for r in res["by_seat"] if r["agent"] == 0}
    assert held == {0: 2, 1: 2, 2: 2} == {s: sum(seat_of(0, r, 3) == s for r in range(seatings(3))) for s in range(3)}


def test_the_statistics_are_the_engines_not_a_python_copy() -> None:
    """dgenv.stats holds no statistics of its own: every figure comes from libdgenv's
    dg_match_stats / dg_estimate95 (env.MatchResult), so there is one implementation."""
    import inspect

    src = inspect.getsource(stats)
    assert "dg_match_stats" in src and "dg_estimate95" in src
    for gone in ("sqrt", "log10", "argsort", ".mean(", ".std("):
        assert gone not in src, gone


def test_estimate95_edge_cases_are_go_s() -> None:
    assert stats.estimate95([]) == {"mean": pytest.approx(float("nan"), nan_ok=True), "ci95": pytest.approx(float("nan"), nan_ok=True)}
    assert stats.estimate95([3.5]) == {"mean": 3.5, "ci95": float("inf")}
    e = stats.estimate95([1.0, 2.0, 3.0])
    assert e["mean"] == 2.0 and e["ci95"] == pytest.approx(1.96 * (1 / 3) ** 0.5)
    one = stats.summarize(["a", "b"], [[1, 2]])  # one game: intervals infinite (null in dgeval's JSON)
    assert one[0]["score"] == {"mean": 1.0, "ci95": float("inf")}
    none = stats.summarize(["a", "b"], np.zeros((0, 2), np.int64))
    assert [a["name"] for a in none] == ["a", "b"] and np.isnan(none[0]["score"]["mean"])


@pytest.mark.parametrize("agents,scores,field", [
    (["solo"], [[1]], "agents"),  # a match needs two seats
    (["a", "b", "c"], [1, 2, 3, 4], "scores"),  # not whole games of three seats
])
def test_match_stats_refuses_bad_input_with_a_clear_error(agents, scores, field) -> None:
    from dgenv.errors import BadRequest

    with pytest.raises(BadRequest, match=field) as e:
        stats.summarize(agents, scores)
    assert e.value.details.get("field") == field


def test_the_c_exports_check_every_buffer_length() -> None:
    import ctypes

    from dgenv import _capi
    from dgenv.errors import BadRequest

    lib, err = _capi.lib(), _capi.errbuf()
    names = b'["a","b"]'
    sc = np.array([1, 2, 3], np.int64)  # 24 bytes: a game and a half
    buf = ctypes.create_string_buffer(1024)
    assert lib.dg_match_stats(names, len(names), sc.ctypes.data, sc.nbytes, buf, 1024, err, _capi.ERRCAP) == -1
    with pytest.raises(BadRequest, match="scores"):
        _capi.raise_error(err)
    assert lib.dg_match_stats(names, len(names), sc.ctypes.data, 12, buf, 1024, err, _capi.ERRCAP) == -1  # not whole int64s
    with pytest.raises(BadRequest, match="whole number of 8-byte"):
        _capi.raise_error(err)
    assert lib.dg_match_stats(names, len(names), None, 16, buf, 1024, err, _capi.ERRCAP) == -1  # null with a length
    with pytest.raises(BadRequest, match="null pointer"):
        _capi.raise_error(err)
    assert lib.dg_match_stats(b'{"a": 1}', 8, sc.ctypes.data, 16, buf, 1024, err, _capi.ERRCAP) == -1
    with pytest.raises(BadRequest, match="JSON list of names"):
        _capi.raise_error(err)
    # Too small an output buffer: nothing written past it, the length needed returned.
    small = ctypes.create_string_buffer(b"\xff" * 8, 8)
    n = lib.dg_match_stats(names, len(names), sc.ctypes.data, 16, small, 4, err, _capi.ERRCAP)
    assert n > 8 and small.raw[4:] == b"\xff" * 4
    xs, out = np.array([1.0, 2.0]), np.zeros(3)
    assert lib.dg_estimate95(xs.ctypes.data, xs.nbytes, out.ctypes.data, out.nbytes, err, _capi.ERRCAP) == -1
    with pytest.raises(BadRequest, match="out: 3 elements, want 2"):
        _capi.raise_error(err)
    assert out.tolist() == [0.0, 0.0, 0.0]
