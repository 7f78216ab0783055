"""PPO continued from a served policy file: dgenv.warmstart and --value-warmup.

The committed duel policy is rebuilt as a training network with the same
logits; a run started from it (``--init policies/duel.onnx``) first fits the
new value head with the actor held fixed, then trains the actor.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from dgenv import policy as pol
from dgenv.model import PolicyNet, export_onnx, load_checkpoint
from dgenv.train import PRESETS, TrainConfig, config_from_args, train
from dgenv.warmstart import net_from_onnx

DUEL = Path(__file__).resolve().parents[2] / "policies" / "duel.onnx"


def _obs(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 3, (n, d)).astype(np.float32)


def test_net_from_onnx_has_the_files_logits() -> None:
    net, meta = net_from_onnx(DUEL)
    assert meta.game == "duel"
    x = _obs(64, meta.obs_size)
    want = pol.onnx_forward(str(DUEL), x)
    with torch.no_grad():
        got = net.logits(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_net_from_onnx_round_trips_tanh_and_refuses_other_graphs(tmp_path: Path) -> None:
    meta = pol.read_meta(DUEL)
    torch.manual_seed(1)
    net = PolicyNet(meta.obs_size, (16, 8), "tanh", scale=np.full(meta.obs_size, 0.5, np.float32), num_actions=meta.num_actions)
    path = export_onnx(net, meta, tmp_path / "t.onnx")
    back, _ = net_from_onnx(path)
    assert back.activation == "tanh" and back.hidden == (16, 8)
    x = _obs(8, meta.obs_size, 2)
    with torch.no_grad():
        np.testing.assert_allclose(back.logits(torch.from_numpy(x)).numpy(), net.logits(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)
    m = pol.load_onnx(path)
    act = next(n for n in m.graph.node if n.op_type == "Tanh")
    act.op_type = "Sigmoid"
    with pytest.raises(ValueError):
        net_from_onnx(m)


def _duel_run(tmp: Path, url: str, **kw) -> TrainConfig:
    c = dict(PRESETS["duel-vs-search"])
    c.update(out=str(tmp), server=url, init=str(DUEL), opponent="heuristic", num_envs=8, rollout_steps=8, updates=1,
             eval_games=4, final_eval_games=4, plot=False, progress=False, tensorboard=False, seed=5)
    c.update(kw)
    return TrainConfig(**c)


def _actor_changed(ckpt: str) -> float:
    net, _, _ = load_checkpoint(ckpt)
    x = _obs(32, net.obs_size, 4)
    with torch.no_grad():
        got = net.logits(torch.from_numpy(x)).numpy()
    return float(np.abs(got - pol.onnx_forward(str(DUEL), x)).max())


def test_value_warmup_holds_the_actor(server, tmp_path: Path) -> None:
    held = train(_duel_run(tmp_path / "held", server.url, value_warmup=1))
    assert _actor_changed(held["checkpoint"]) < 1e-3
    moved = train(_duel_run(tmp_path / "moved", server.url, value_warmup=0))
    assert _actor_changed(moved["checkpoint"]) > 1e-3


def test_duel_vs_search_preset_parses() -> None:
    c = config_from_args(["--preset", "duel-vs-search", "--minutes", "1"])
    assert c.game == "duel" and c.init == "policies/duel.onnx" and c.value_warmup > 0 and "search" in c.opponent.split(",")
