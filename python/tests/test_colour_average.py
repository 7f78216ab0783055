"""dgenv.policy.colour_average: a card-game policy averaged over colour renamings.

The averaged file is one ONNX graph (Gather views of the observation, the
original weights shared by every view): numpy's reference forward, the Go
runtime the server serves it with and the definition (the mean over the
renamed positions of the original's logits, mapped back) agree.
"""

from __future__ import annotations

import subprocess
import sys
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest

from dgenv import policy as pol

from conftest import random_positions, served_act

REPO = Path(__file__).resolve().parents[2]
EXPERT_P4 = REPO / "policies" / "expert-p4.onnx"


def _positions(players: int = 4, n: int = 64, steps: int = 25) -> tuple[np.ndarray, np.ndarray]:
    return random_positions(players, n, steps, seed=11, rng_seed=1)[1:]


@pytest.mark.parametrize("k", [1, 3, 5])
def test_the_mean_over_renamed_positions(k):
    obs, _ = _positions()
    m = pol.colour_average(EXPERT_P4, k)
    meta = pol.check_policy(m)
    po, pa = pol.colour_permutations(meta.obs_layout, meta.obs_size)
    order = list(permutations(range(5)))
    want = np.zeros((len(obs), 90), np.float64)
    for s in range(k):
        j = order.index(tuple((c + s) % 5 for c in range(5)))
        view = pol.onnx_forward(EXPERT_P4, obs[:, po[j]])  # the renamed position's logits ...
        want += view[:, np.argsort(pa[j])]  # ... on the real cards
    np.testing.assert_allclose(pol.onnx_forward(m, obs), want / k, rtol=0, atol=1e-5)
    # the views differ (the network is not exactly colour-symmetric): the average is not the original
    if k > 1:
        assert np.abs(pol.onnx_forward(m, obs) - pol.onnx_forward(EXPERT_P4, obs)).max() > 1e-3
    # the weights are stored once: the file is the original's size, plus the index maps
    assert len(m.SerializeToString()) < EXPERT_P4.stat().st_size + k * 8 * (874 + 90) + 4096


def test_served_by_the_go_runtime(tmp_path):
    """The server loads the averaged file and its logits are numpy's (and a decision picks a legal card)."""
    pdir = tmp_path / "pols"
    pdir.mkdir()
    pol.save_onnx(pol.colour_average(EXPERT_P4, 5), pdir / "c5.onnx")
    obs, mask = _positions(n=32, steps=12)
    got, acts = served_act(pdir, "c5", obs, mask)
    np.testing.assert_allclose(got, pol.onnx_forward(pdir / "c5.onnx", obs), rtol=0, atol=1e-4)
    assert mask[np.arange(len(acts)), acts].all()


def test_cli_and_refusals(tmp_path):
    out = tmp_path / "c3.onnx"
    r = subprocess.run([sys.executable, "-m", "dgenv.export", "--colour-average", "3", "--description", "mine",
                        str(EXPERT_P4), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert pol.read_meta(out).description == "mine"
    obs, _ = _positions(n=8, steps=5)
    np.testing.assert_array_equal(pol.onnx_forward(out, obs), pol.onnx_forward(pol.colour_average(EXPERT_P4, 3), obs))
    for args, why in [(["--colour-average", "3", str(out)], "already averaged"),
                      (["--colour-average", "3", str(REPO / "policies" / "duel.onnx")], "only the card game"),
                      (["--colour-average", "6", str(EXPERT_P4)], "want 2 to 5"),
                      (["--colour-average", "3", str(REPO / "README.md")], "not an ONNX file")]:
        r = subprocess.run([sys.executable, "-m", "dgenv.export", *args, str(tmp_path / "x.onnx")],
                           capture_output=True, text=True)
        assert r.returncode == 2 and why in r.stderr, r.stderr
        assert not (tmp_path / "x.onnx").exists()
    with pytest.raises(ValueError, match="want 1 to 5"):
        pol.colour_average(EXPERT_P4, 0)


def test_check_policy_refuses_a_gather_the_runtime_does_not_run():
    from onnx import numpy_helper

    m = pol.colour_average(EXPERT_P4, 2)
    g = next(n for n in m.graph.node if n.op_type == "Gather")
    g.attribute[0].i = 0  # axis 0: the batch
    with pytest.raises(ValueError, match="axis 1"):
        pol.check_policy(m)
    m = pol.colour_average(EXPERT_P4, 2)
    idx = next(t for t in m.graph.initializer if t.name == next(n for n in m.graph.node if n.op_type == "Gather").input[1])
    idx.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(idx).astype(np.float32), idx.name))
    with pytest.raises(ValueError, match="int32 or int64"):
        pol.check_policy(m)


@pytest.mark.parametrize("count", [3, 4, 5, 6])
def test_committed_averaged_networks_are_the_commands_output(count):
    """policies/expert-pN-c3.onnx is what the documented command writes from policies/expert-pN.onnx."""
    committed = (REPO / "policies" / f"expert-p{count}-c3.onnx").read_bytes()
    assert committed == pol.colour_average(REPO / "policies" / f"expert-p{count}.onnx", 3).SerializeToString()


@pytest.mark.parametrize("k", [1, 3, 5])
def test_the_fits_averaged_prior_is_the_averaged_file(k):
    """--exit-prior-views K: the prior the expert fit improves on is the file export --colour-average K writes."""
    import torch

    from dgenv.expert import ViewAverage
    from dgenv.warmstart import net_from_onnx

    obs, _ = _positions()
    net, meta = net_from_onnx(EXPERT_P4)
    net.eval()
    prior = ViewAverage(net, *(torch.from_numpy(x) for x in pol.colour_views(meta.obs_layout, meta.obs_size, k)))
    with torch.no_grad():
        got = prior(torch.from_numpy(obs))[0].numpy()
    np.testing.assert_allclose(got, pol.onnx_forward(pol.colour_average(EXPERT_P4, k), obs), rtol=0, atol=1e-4)
