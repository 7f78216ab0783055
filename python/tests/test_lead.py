"""``python -m dgenv.lead``: one agent's lead over another per deal, paired and by seating order.

Made-up tables check the figure against a formula written out here; a real
``dgeval -duplicate`` table checks that the lead over all games is dgeval's
own score differences (Go's Summarize) subtracted.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dgenv import lead
from dgenv.evaluate import find_dgeval


def _write(path: Path, agents: list[str], scores: np.ndarray, seeds: list[int]) -> Path:
    """A dgeval -csv file: every deal seed in ``seeds`` played in 2P seatings (P >= 3), games in order."""
    rows = ["game,deal_seed," + ",".join(f"{i}:{a}" for i, a in enumerate(agents))]
    ns = 2 * len(agents)
    assert scores.shape == (len(seeds) * ns, len(agents))
    rows += [f"{k},{seeds[k // ns]}," + ",".join(str(int(x)) for x in row) for k, row in enumerate(scores)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _ci(per_deal: np.ndarray) -> float:
    return 1.96 * per_deal.std(ddof=1) / np.sqrt(per_deal.size)


def test_three_player_lead_per_deal_and_by_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    agents = ["policy:x", "search", "heuristic"]
    a = rng.integers(40, 140, size=(4 * 6, 3))
    b = rng.integers(40, 140, size=(3 * 6, 3))
    files = [_write(tmp_path / "x-s1.csv", agents, a, [11, 12, 13, 14]), _write(tmp_path / "x-s2.csv", agents, b, [21, 22, 23])]
    r = lead.lead_report(lead.read_table(files), "policy:x", "search")
    s = np.concatenate([a, b]).astype(float)
    # at 3 players, (x - (s + h) / 2) - (s - (x + h) / 2) = 1.5 (x - s)
    g = 1.5 * (s[:, 0] - s[:, 1])
    deal = g.reshape(7, 6)
    assert r["all"]["games"] == 42 and r["all"]["deals"] == 7
    assert r["all"]["mean"] == pytest.approx(g.mean()) and r["all"]["ci95"] == pytest.approx(_ci(deal.mean(1)))
    # seatings 0-2 of each deal rotate the table's order, 3-5 its reverse
    for key, cols in (("table_order", slice(0, 3)), ("reversed_order", slice(3, 6))):
        part = deal[:, cols]
        assert r[key]["games"] == 21 and r[key]["deals"] == 7
        assert r[key]["mean"] == pytest.approx(part.mean()) and r[key]["ci95"] == pytest.approx(_ci(part.mean(1)))


def test_paired_with_another_table_on_the_same_games(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    new = rng.integers(40, 140, size=(12, 3))
    old = rng.integers(40, 140, size=(12, 3))
    t_new = lead.read_table([_write(tmp_path / "new.csv", ["policy:new", "search", "heuristic"], new, [7, 8])])
    # the other set's files in another order, and its agent another name: paired by deal seed and seating
    o1 = _write(tmp_path / "old-a.csv", ["policy:old", "search", "heuristic"], old[6:], [8])
    o2 = _write(tmp_path / "old-b.csv", ["policy:old", "search", "heuristic"], old[:6], [7])
    r = lead.lead_report(t_new, "policy:new", "search", lead.read_table([o1, o2]))
    assert r["less"] == "policy:old"
    d = 1.5 * (new[:, 0] - new[:, 1]) - 1.5 * (old[:, 0] - old[:, 1])
    assert r["all"]["mean"] == pytest.approx(d.mean()) and r["all"]["ci95"] == pytest.approx(_ci(d.reshape(2, 6).mean(1)))
    # a game missing on one side is refused, not paired with another
    short = lead.read_table([o1])
    with pytest.raises(ValueError, match="not the same games"):
        lead.lead_report(t_new, "policy:new", "search", short)
    with pytest.raises(ValueError, match="not the same games"):
        lead.lead_report(short, "policy:old", "search", t_new)


def test_seats_of_one_name_are_pooled_as_dgeval_pools_them(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    agents = ["policy:x", "random", "search", "random"]
    s = rng.integers(0, 200, size=(8, 4)).astype(float)
    r = lead.lead_report(lead.read_table([_write(tmp_path / "t.csv", agents, s, [1])]), "policy:x", "random")
    diff = s - (s.sum(1, keepdims=True) - s) / 3
    assert r["all"]["mean"] == pytest.approx((diff[:, 0] - (diff[:, 1] + diff[:, 3]) / 2).mean())
    assert r["all"]["deals"] == 1 and r["all"]["ci95"] == float("inf")  # one deal: no interval


def test_two_players_have_no_reversed_order(tmp_path: Path) -> None:
    # the duel's tables: 2 seatings a deal, both of the table's order (env.Seatings)
    p = tmp_path / "duel.csv"
    p.write_text("game,deal_seed,0:policy:duel,1:heuristic\n0,9,1,0\n1,9,0,1\n2,8,1,0\n3,8,1,0\n")
    r = lead.lead_report(lead.read_table([p]), "policy:duel", "heuristic")
    assert r["reversed_order"] is None and r["table_order"] == r["all"]
    assert r["all"]["mean"] == pytest.approx(1.0) and r["all"]["deals"] == 2  # deal 9: +2, -2; deal 8: +2, +2


@pytest.mark.parametrize("text, match", [
    ("game,deal_seed,0:a\n0,1,3\n", "want dgeval's -csv"),
    ("game,seed,0:a,1:b\n0,1,3,4\n", "want dgeval's -csv"),
    ("game,deal_seed,0:a,2:b,1:c\n0,1,3,4,5\n", "column 3 is '2:b'"),
    ("game,deal_seed,0:a,1:b,2:c\n0,1,3,4\n", "has 4 fields, want 5"),
    ("game,deal_seed,0:a,1:b,2:c\n0,1,3,x,5\n", "want integers"),
    ("game,deal_seed,0:a,1:b,2:c\n" + "".join(f"{k + 1},1,3,4,5\n" for k in range(6)), "is game 1, want 0"),
    ("game,deal_seed,0:a,1:b,2:c\n" + "".join(f"{k},1,3,4,5\n" for k in range(5)), "not whole duplicate sets of 6"),
])
def test_bad_files_are_refused_clearly(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        lead.read_table([p])


def test_bad_requests_are_refused_clearly(tmp_path: Path) -> None:
    s = np.arange(18).reshape(6, 3)
    f = _write(tmp_path / "t.csv", ["heuristic", "search", "random"], s, [1])
    t = lead.read_table([f])
    with pytest.raises(ValueError, match="no policy: agent"):
        lead.default_agent(t)
    with pytest.raises(ValueError, match="--agent policy:y: not at the table"):
        lead.leads(t, "policy:y", "search")
    with pytest.raises(ValueError, match="both search"):
        lead.leads(t, "search", "search")
    with pytest.raises(ValueError, match="repeat a deal seed"):
        lead.read_table([f, f])
    g = _write(tmp_path / "u.csv", ["heuristic", "random", "search"], s, [2])
    with pytest.raises(ValueError, match="want the first file's heuristic,search,random"):
        lead.read_table([f, g])


def test_cli_prints_the_figures_and_refuses_with_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(1)
    f = _write(tmp_path / "t.csv", ["policy:x", "search", "heuristic"], rng.integers(0, 99, size=(12, 3)), [4, 5])
    assert lead.main([str(f)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("policy:x less search: ") and "the reversed order: " in out
    assert lead.main([str(f), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["agent"] == "policy:x" and r["all"]["games"] == 12 and r["less"] is None
    assert lead.main([str(f), "--over", "random"]) == 2
    assert "--over random: not at the table" in capsys.readouterr().err
    assert lead.main([str(tmp_path / "none.csv")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_a_dgeval_table_gives_dgevals_own_score_differences(tmp_path: Path) -> None:
    exe = find_dgeval()
    assert exe is not None, "bin/dgeval is needed (go build ./cmd/dgeval)"
    csv, js = tmp_path / "t.csv", tmp_path / "t.json"
    r = subprocess.run([str(exe), "-players", "3", "-agents", "heuristic,random,random", "-games", "60", "-duplicate",
                        "-seed", "5", "-workers", "1", "-csv", str(csv), "-json", str(js), "-quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    go = {a["name"]: a["score_diff"]["mean"] for a in json.loads(js.read_text())["agents"]}
    rep = lead.lead_report(lead.read_table([csv]), "heuristic", "random")
    assert rep["all"]["games"] == 60 and rep["all"]["deals"] == 10
    assert rep["all"]["mean"] == pytest.approx(go["heuristic"] - go["random"], rel=1e-9)
    assert rep["table_order"]["games"] == rep["reversed_order"]["games"] == 30
    assert rep["all"]["mean"] == pytest.approx((rep["table_order"]["mean"] + rep["reversed_order"]["mean"]) / 2)
