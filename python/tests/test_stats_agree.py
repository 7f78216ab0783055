"""Python's match statistics agree with Go's (dgeval) on the same games.

The games' totals are written in the CSV that ``dgeval -csv`` writes and
summarised by ``dgeval -scores`` (Go's env.MatchResult); the figures Python
reports for the same totals must be the same.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from dgenv.evaluate import find_dgeval
from dgenv.train import seat0_stats


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


def test_seat0_statistics_agree_with_dgeval(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    # Small totals, so that ties (for the best total too) are frequent.
    scores = rng.integers(0, 4, size=(400, 4))
    assert ((scores == scores.max(axis=1, keepdims=True)).sum(axis=1) > 1).sum() > 50
    agents = ["learner", "bot", "bot", "bot"]
    go = {a["name"]: a for a in _dgeval_summary(tmp_path, agents, scores)["agents"]}["learner"]
    py = seat0_stats(scores)
    np.testing.assert_allclose(py["score"], [go["score"]["mean"], go["score"]["ci95"]], rtol=1e-9)
    np.testing.assert_allclose(py["diff"], [go["score_diff"]["mean"], go["score_diff"]["ci95"]], rtol=1e-9)
    np.testing.assert_allclose(py["win_rate"], [go["win_rate"]["mean"], go["win_rate"]["ci95"]], rtol=1e-9)
    # The old rule (0.5 for any tie) differs on these games: the test can fail.
    me, best_other = scores[:, 0], scores[:, 1:].max(axis=1)
    old = np.where(me > best_other, 1.0, np.where(me == best_other, 0.5, 0.0)).mean()
    assert abs(old - go["win_rate"]["mean"]) > 1e-3
