"""dgenv.policy.split_lead: one card-game graph, one policy on the observer's leads and another on its later cards.

The graph is a ``Where`` on the observation's ``trick_position``: numpy's
reference forward, the Go runtime the server serves it with (which computes
only the branch a decision takes) and the definition agree.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from dgenv import policy as pol

from conftest import random_positions, served_act

REPO = Path(__file__).resolve().parents[2]
LEAD = REPO / "policies" / "expert-p3-c3.onnx"
LATER = REPO / "policies" / "imitate-search-p3.onnx"


def _positions(n: int = 48, steps: int = 20) -> tuple[np.ndarray, np.ndarray]:
    return random_positions(3, n, steps, seed=12, rng_seed=2)[1:]


def _leads(obs: np.ndarray) -> np.ndarray:
    sec = next(s for s in pol.read_meta(LEAD).obs_layout if s["name"] == "trick_position")
    return obs[:, int(sec["offset"])] == 1


def test_lead_policy_on_leads_later_policy_elsewhere():
    obs, _ = _positions()
    leads = _leads(obs)
    assert 0 < leads.sum() < len(obs)
    m = pol.split_lead(LEAD, LATER)
    meta = pol.check_policy(m)
    lead = pol.read_meta(LEAD)
    assert (meta.players, meta.obs_layout, meta.logit_scale) == (lead.players, lead.obs_layout, lead.logit_scale)
    assert "expert-p3-c3.onnx on leads, imitate-search-p3.onnx on later cards" in meta.description
    want = np.where(leads[:, None], pol.onnx_forward(LEAD, obs), pol.onnx_forward(LATER, obs))
    np.testing.assert_array_equal(pol.onnx_forward(m, obs), want)
    # both policies' weights are in it once: the file is about the two files' sizes
    assert len(m.SerializeToString()) < LEAD.stat().st_size + LATER.stat().st_size + 4096


def test_served_by_the_go_runtime(tmp_path):
    """The server loads the split file; its logits are numpy's, and its decisions legal."""
    pdir = tmp_path / "pols"
    pdir.mkdir()
    pol.save_onnx(pol.split_lead(LEAD, LATER), pdir / "split.onnx")
    obs, mask = _positions(n=32, steps=12)
    got, acts = served_act(pdir, "split", obs, mask)
    np.testing.assert_allclose(got, pol.onnx_forward(pdir / "split.onnx", obs), rtol=0, atol=1e-4)
    assert mask[np.arange(len(acts)), acts].all()


def test_cli_and_refusals(tmp_path):
    out = tmp_path / "split.onnx"
    r = subprocess.run([sys.executable, "-m", "dgenv.export", "--later", str(LATER), "--description", "mine", str(LEAD), str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert pol.read_meta(out).description == "mine"
    assert out.read_bytes() == pol.save_onnx(pol.split_lead(LEAD, LATER, "mine"), tmp_path / "again.onnx").read_bytes()
    for args, why in [(["--later", str(REPO / "policies" / "expert-p4.onnx"), str(LEAD)], "differ in players"),
                      (["--later", str(LATER), str(REPO / "policies" / "duel.onnx")], "only the card game has tricks"),
                      (["--later", str(REPO / "README.md"), str(LEAD)], "not an ONNX file"),
                      (["--later", str(LATER), "--colour-average", "3", str(LEAD)], "one at a time")]:
        r = subprocess.run([sys.executable, "-m", "dgenv.export", *args, str(tmp_path / "x.onnx")], capture_output=True, text=True)
        assert r.returncode == 2 and why in r.stderr, r.stderr
        assert not (tmp_path / "x.onnx").exists()


def test_check_policy_refuses_a_condition_the_runtime_does_not_run():
    def edited(f) -> None:
        m = pol.split_lead(LEAD, LATER)
        f(m.graph)
        pol.check_policy(m)

    def data_threshold(g):
        n = next(n for n in g.node if n.op_type == "Greater")
        n.input[1] = n.input[0]

    def number_condition(g):
        n = next(n for n in g.node if n.op_type == "Where")
        n.input[0] = next(n for n in g.node if n.op_type == "Greater").input[0]

    def condition_read(g):
        cond = next(n for n in g.node if n.op_type == "Greater").output[0]
        g.node.append(helper.make_node("Add", [cond, cond], ["twice"]))

    for f, why in [(data_threshold, "float32 constant"), (number_condition, "must be a Greater's result"),
                   (condition_read, "read as a number")]:
        with pytest.raises(ValueError, match=why):
            edited(f)


@pytest.mark.parametrize("players", [3, 5])
def test_the_committed_split_network_is_expert_c3_on_leads(players):
    """policies/expert-p3-split.onnx and expert-p5-split.onnx (docs/training.md "Session 64" and
    "Session 65") are split graphs whose leads are expert-pN-c3's, to the bit, and whose later
    cards are another network's."""
    split = REPO / "policies" / f"expert-p{players}-split.onnx"
    c3 = REPO / "policies" / f"expert-p{players}-c3.onnx"
    obs = random_positions(players, 48, 20, seed=12, rng_seed=2)[1]
    sec = next(s for s in pol.read_meta(c3).obs_layout if s["name"] == "trick_position")
    leads = obs[:, int(sec["offset"])] == 1
    assert 0 < leads.sum() < len(obs)
    got, want = pol.onnx_forward(split, obs), pol.onnx_forward(c3, obs)
    np.testing.assert_array_equal(got[leads], want[leads])
    assert np.abs(got[~leads] - want[~leads]).max() > 1e-3
    assert [n.op_type for n in pol.load_onnx(split).graph.node].count("Where") == 1
    assert pol.read_meta(split).players == players
