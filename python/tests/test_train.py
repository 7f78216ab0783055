"""dgenv.train / export / policy / evaluate: a tiny end-to-end run, the ONNX format, parity.

Everything here takes seconds: a 2-update PPO run with 8 envs and a 32-unit
network against the shared server, its export, the numpy reference forward
against torch, and evaluations of the exported file. The tests that need the
Go side to load policies (dgeval -policies, dgserver serving "policy:<name>"
opponents and POST /v1/policies/{name}/act) skip only when the binaries do
not offer it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import dgenv
from dgenv import policy as pol
from dgenv.model import PolicyNet, export_onnx, load_checkpoint, obs_scale
from dgenv._trainutil import Potential as _Potential
from dgenv.train import PRESETS, TrainConfig, _gae, config_from_args, mean_ci, train

from conftest import random_legal


def _tiny(tmp: Path, url: str, **kw) -> TrainConfig:
    c = dict(PRESETS["tiny"])
    c.update(out=str(tmp), server=url, seed=3, plot=True)
    c.update(kw)
    return TrainConfig(**c)


@pytest.fixture(scope="module")
def tiny_run(server, tmp_path_factory) -> dict:
    """A 2-update run against the heuristic bot, shared by the tests below."""
    out = tmp_path_factory.mktemp("tiny")
    rows: list[dict] = []
    s = train(_tiny(out, server.url), on_update=rows.append)
    s["rows"] = rows
    return s


def test_tiny_run_writes_everything(tiny_run):
    out = Path(tiny_run["out"])
    assert tiny_run["updates"] == 2 and len(tiny_run["rows"]) == 2
    assert tiny_run["steps"] == 2 * 8 * 8
    for f in ("config.json", "metrics.csv", "eval.csv", "curve.png", "summary.json", "policy.onnx", "checkpoints/final.pt"):
        assert (out / f).is_file(), f
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = (out / "metrics.csv").read_text().splitlines()
    assert len(lines) == 3 and lines[0].startswith("update,step,")
    ev = (out / "eval.csv").read_text().splitlines()
    assert len(ev) == 1 + 2 and "heuristic" in ev[-1]  # final evaluation vs random and heuristic
    for r in tiny_run["final_eval"]:
        assert r["games"] == 8 and len(r["score"]) == 2 and 0 < r["score"][0] < 400
    for r in tiny_run["rows"]:
        assert np.isfinite([r["pg_loss"], r["v_loss"], r["entropy"]]).all()


def test_export_matches_torch_and_metadata(tiny_run, make):
    path = Path(tiny_run["onnx"])
    meta = pol.check_policy(path)
    env = make(players=4, num_envs=16, seed=5, learner_seats=[0], opponent="random")
    assert meta.players == 4 and meta.deals == 4 and meta.first_dealer == 0
    assert meta.obs_size == env.obs_size == 874 and meta.num_actions == 90
    assert [dict(s) for s in meta.obs_layout] == [
        {"name": s.name, "offset": s.offset, "shape": list(s.shape)} for s in env.spec.obs.sections
    ]
    m = pol.load_onnx(path)
    props = {p.key: p.value for p in m.metadata_props}
    assert props["dgenv.format"] == "policy-v1"
    assert json.loads(props["dgenv.game"]) == {"players": 4, "deals": 4, "first_dealer": 0}
    assert props["dgenv.obs_size"] == "874" and props["dgenv.num_actions"] == "90"
    assert [i.name for i in m.graph.input] == ["obs"] and [o.name for o in m.graph.output] == ["logits"]
    assert {n.op_type for n in m.graph.node} <= pol.ALLOWED_OPS

    net, _, _ = load_checkpoint(tiny_run["checkpoint"])
    b = env.reset()
    rng = np.random.default_rng(0)
    obs = [b.obs]
    for _ in range(30):  # observations from the middle of games too
        b = env.step(random_legal(b.mask, rng))
        obs.append(b.obs)
    x = np.concatenate(obs).astype(np.float32)
    with torch.no_grad():
        want = net.logits(torch.from_numpy(x)).numpy()
    got = pol.onnx_forward(path, x)
    assert got.shape == (x.shape[0], 90) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    # greedy legal action from the ONNX policy is always legal
    a = pol.OnnxPolicy(path).act(b.obs, b.mask)
    assert b.mask[np.arange(len(a)), a].all()
    a = pol.OnnxPolicy(path).act(b.obs, b.mask, rng=np.random.default_rng(1))
    assert b.mask[np.arange(len(a)), a].all()


def test_export_cli_and_tanh(tmp_path, tiny_run):
    from dgenv.export import export_checkpoint, main, verify_export

    out = tmp_path / "p.onnx"
    assert main([tiny_run["checkpoint"], str(out)]) == 0
    assert pol.read_meta(out).players == 4
    # a tanh network with two hidden layers, exported and checked the same way
    net = PolicyNet(874, (16, 8), "tanh", scale=np.full(874, 0.5, np.float32))
    meta = pol.read_meta(out)
    p2 = export_onnx(net, meta, tmp_path / "t.onnx", description="tanh test")
    assert pol.read_meta(p2).description == "tanh test"
    assert {n.op_type for n in pol.load_onnx(p2).graph.node} == {"Mul", "Gemm", "Tanh"}
    assert verify_export(net, p2) <= 1e-5
    assert export_checkpoint(tiny_run["checkpoint"], tmp_path / "again.onnx").is_file()


def test_logit_scale_metadata(tmp_path, tiny_run):
    """dgenv.logit_scale: written only when not 1 (older files unchanged), read back, bad values refused."""
    import dataclasses

    meta = pol.read_meta(tiny_run["onnx"])
    assert meta.logit_scale == 1.0 and "dgenv.logit_scale" not in meta.props()
    net = PolicyNet(874, (8,))
    scaled = dataclasses.replace(meta, logit_scale=4.0)
    assert scaled.props()["dgenv.logit_scale"] == "4.0"
    assert pol.read_meta(export_onnx(net, scaled, tmp_path / "s.onnx")).logit_scale == 4.0
    for bad in ("0", "-2", "nan", "inf", "1001", "four"):
        with pytest.raises(ValueError, match="logit_scale"):
            pol.PolicyMeta.from_props({**meta.props(), "dgenv.logit_scale": bad})


def test_card_features_fold_into_the_first_gemm(tiny_run, make, tmp_path):
    from dgenv.model import CardFeatures

    env = make(players=4, num_envs=16, seed=9, learner_seats=[0], opponent="heuristic")
    offs = {s.name: s.offset for s in env.spec.obs.sections}
    feats = {"players": 4, "offsets": {k: offs[k] for k in ("hand", "current_trick", "prizes")}}
    torch.manual_seed(0)
    net = PolicyNet(874, (32, 16), scale=obs_scale(env.spec.obs.sections, 874), features=feats)
    meta = pol.read_meta(tiny_run["onnx"])
    path = export_onnx(net, meta, tmp_path / "f.onnx")
    assert [n.op_type for n in pol.load_onnx(path).graph.node] == ["Gemm", "Relu", "Gemm", "Relu", "Gemm"]
    b = env.reset()
    rng = np.random.default_rng(0)
    xs = []
    for _ in range(40):
        b = env.step(random_legal(b.mask, rng))
        xs.append(b.obs)
    x = np.concatenate(xs).astype(np.float32)
    with torch.no_grad():
        want = net.logits(torch.from_numpy(x)).numpy()
        f = CardFeatures(4, feats["offsets"])(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(pol.onnx_forward(path, x), want, rtol=0, atol=1e-5)
    # the unseen cards: the deck (values 1..12 for 4 players) less hand, trick and prize piles
    unseen = f[:, :90].reshape(-1, 5, 18)
    assert unseen.min() >= 0 and unseen[:, :, 12:].max() == 0
    seen = env.section(x, "hand") + env.section(x, "current_trick").sum(1) + env.section(x, "prizes").sum(1)
    np.testing.assert_array_equal(unseen.reshape(-1, 90) + seen, np.tile(np.arange(90) % 18 < 12, (len(x), 1)))
    # a checkpoint keeps the features
    from dgenv.model import save_checkpoint

    save_checkpoint(tmp_path / "f.pt", net, meta)
    net2, _, _ = load_checkpoint(tmp_path / "f.pt")
    with torch.no_grad():
        np.testing.assert_array_equal(net2.logits(torch.from_numpy(x)).numpy(), want)


def test_onnx_forward_other_ops_and_refusals(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    D = 10
    w = rng.standard_normal((D, 90)).astype(np.float32)
    b = rng.standard_normal(90).astype(np.float32)
    meta = pol.PolicyMeta(3, 3, 0, ({"name": "x", "offset": 0, "shape": [D]},), D)

    def model(nodes, op_out="logits"):
        g = helper.make_graph(
            nodes, "g",
            [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", D])],
            [helper.make_tensor_value_info(op_out, TensorProto.FLOAT, ["batch", 90])],
            initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
        )
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        helper.set_model_props(m, meta.props())
        return m

    m = model([
        helper.make_node("MatMul", ["obs", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["a"]),
        helper.make_node("Tanh", ["a"], ["t"]),
        helper.make_node("Identity", ["t"], ["logits"]),
    ])
    onnx.checker.check_model(m)
    assert pol.check_policy(m).obs_size == D
    x = rng.integers(0, 3, (5, D)).astype(np.float32)
    np.testing.assert_allclose(pol.onnx_forward(m, x), np.tanh(x @ w + b), atol=1e-6)
    with pytest.raises(ValueError, match="not allowed"):
        pol.check_policy(model([helper.make_node("MatMul", ["obs", "w"], ["mm"]), helper.make_node("Sigmoid", ["mm"], ["logits"])]))
    with pytest.raises(ValueError, match="outputs"):
        pol.check_policy(model([helper.make_node("MatMul", ["obs", "w"], ["value"])], op_out="value"))
    bad = model([helper.make_node("MatMul", ["obs", "w"], ["logits"])])
    del bad.metadata_props[:]
    with pytest.raises(ValueError, match="dgenv.format"):
        pol.check_policy(bad)


def test_selfplay_tiny(server, tmp_path):
    s = train(_tiny(tmp_path, server.url, opponent="self", updates=3, snapshot_every=1, pool_size=2, final_eval_games=4, features=True,
                    eval_opponents=("random",)))
    assert s["updates"] == 3 and s["steps"] >= 3 * 64
    assert pol.check_policy(s["onnx"]).players == 4


def test_zero_evaluation_games_skip_the_evaluations(server, tmp_path):
    """--eval-games 0 and --final-eval-games 0 train and checkpoint without evaluating (dgeval refuses 0 games)."""
    s = train(_tiny(tmp_path, server.url, updates=3, eval_every_s=0.0, eval_games=0, final_eval_games=0))
    out = Path(s["out"])
    assert s["updates"] == 3 and s["final_eval"] == []
    assert sorted(p.name for p in (out / "checkpoints").glob("update_*.pt")) == ["update_00001.pt", "update_00002.pt"]
    assert not (out / "checkpoints" / "best.pt").exists()  # best is chosen by an evaluation
    assert not (out / "eval.csv").exists() and (out / "policy.onnx").is_file()
    with pytest.raises(ValueError, match="--final-eval-games -1"):
        train(_tiny(tmp_path / "neg", server.url, final_eval_games=-1))


def test_three_players_and_points(server, tmp_path):
    s = train(_tiny(tmp_path, server.url, players=3, reward="points", shaping=False, updates=1, plot=False,
                    eval_opponents=("random",)))
    m = pol.check_policy(s["onnx"])
    assert m.players == 3 and m.obs_size == 680


def test_potential_is_the_deal_score(make):
    env = make(players=4, num_envs=1, seed=1, learner_seats=[0], opponent="random")
    pot = _Potential(env.spec, "zero_sum")
    obs = np.zeros((1, env.obs_size), np.float32)
    pr = env.section(obs, "prizes")  # [1, 4, 90] view
    # rulebook example (Dennis): red 4/10/11, yellow 8, green 5/9, blue 2/3/6/10/12, purple 10/12 = 52
    for c, vals in enumerate([[4, 10, 11], [8], [5, 9], [2, 3, 6, 10, 12], [10, 12]]):
        for v in vals:
            pr[0, 0, c * 18 + v - 1] = 1
    pr[0, 1, 0 * 18 + 12 - 1] = 1  # seat 1: red 12 -> 12 points
    assert pot(obs)[0] == pytest.approx(52 - 12 / 3)
    assert _Potential(env.spec, "points")(obs)[0] == pytest.approx(52)


def test_gae_over_interleaved_chains():
    rng = np.random.default_rng(0)
    env = np.array([0, 1, 0, 0, 1, 2, 1, 0])
    buf = {
        "env": env,
        "rew": rng.standard_normal(8).astype(np.float32),
        "val": rng.standard_normal(8).astype(np.float32),
        "nval": rng.standard_normal(8).astype(np.float32),
        "done": np.array([0, 0, 1, 0, 0, 0, 1, 0], bool),
    }
    g, lam = 0.9, 0.8
    adv, ret = _gae(buf, g, lam)
    want = np.zeros(8)
    for e in np.unique(env):
        idx = np.flatnonzero(env == e)
        nxt = 0.0
        for k in reversed(range(len(idx))):
            i = idx[k]
            d = buf["rew"][i] + g * buf["nval"][i] * (1 - buf["done"][i]) - buf["val"][i]
            nxt = d + (g * lam * (1 - buf["done"][i]) * nxt if k + 1 < len(idx) else 0.0)
            want[i] = nxt
    np.testing.assert_allclose(adv, want, atol=1e-5)
    np.testing.assert_allclose(ret, adv + buf["val"], atol=1e-6)


def test_cli_config_and_mean_ci():
    c = config_from_args(["--preset", "beat-heuristic", "--hidden", "64,32", "--minutes", "3", "--progress", "false"])
    assert c.hidden == (64, 32) and c.minutes == 3.0 and c.progress is False and c.opponent.startswith("heuristic") and c.features
    m, h = mean_ci([1.0, 3.0])
    assert m == 2.0 and h == pytest.approx(1.96 * np.sqrt(2) / np.sqrt(2))


def test_evaluate_python_backend(server, tiny_run, tmp_path):
    from dgenv.evaluate import evaluate, write_results

    agents = [f"policy:{tiny_run['onnx']}", "heuristic", "heuristic", "heuristic"]
    res = evaluate(agents, games=16, seed=4, backend="python", server=server.url, progress=False)
    again = evaluate(agents, games=16, seed=4, backend="python", server=server.url, progress=False)
    assert res["agents"] == again["agents"]  # reproducible from the seed
    assert res["games"] == 16 and [a["name"] for a in res["agents"]] == ["policy:policy", "heuristic"]
    p, h = res["agents"]
    assert p["seats"] == 1 and h["seats"] == 3
    # every game's diffs sum to zero over the table
    assert p["score_diff"]["mean"] + 3 * h["score_diff"]["mean"] == pytest.approx(0, abs=1e-6)
    paths = write_results(res, tmp_path)
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"
    assert "policy:policy" in paths["csv"].read_text()


# --- needs the Go side: policies in dgeval and dgserver -------------------------------


def _dgeval_with_policies():
    from dgenv.evaluate import _dgeval_supports_policies, find_dgeval

    exe = find_dgeval()
    if exe is None or not exe.is_file() or not _dgeval_supports_policies(exe):
        pytest.skip("dgeval cannot load policies (-policies) yet")
    return exe


def test_evaluate_dgeval_backend(tiny_run, tmp_path):
    from dgenv.evaluate import main

    exe = _dgeval_with_policies()
    pdir = tmp_path / "pols"
    pdir.mkdir()
    (pdir / "tiny.onnx").write_bytes(Path(tiny_run["onnx"]).read_bytes())
    out = tmp_path / "res"
    assert main(["--agents", "policy:tiny,heuristic,random,heuristic", "--policies", str(pdir), "--games", "40",
                 "--seed", "2", "--out", str(out), "--quiet", "--dgeval", str(exe), "--backend", "dgeval"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["backend"] == "dgeval" and {a["name"] for a in res["agents"]} == {"policy:tiny", "heuristic", "random"}
    assert (out / "results.png").is_file() and (out / "results.csv").is_file()


def _server_policy_flag() -> str:
    exe = dgenv.find_server()
    h = subprocess.run([str(exe), "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    if "--policies" not in h:
        pytest.skip("dgserver has no --policies option yet")
    return "--policies"


def test_server_plays_and_serves_the_policy(tiny_run, tmp_path):
    flag = _server_policy_flag()
    pdir = tmp_path / "pols"
    pdir.mkdir()
    (pdir / "tiny.onnx").write_bytes(Path(tiny_run["onnx"]).read_bytes())
    net, _, _ = load_checkpoint(tiny_run["checkpoint"])
    with dgenv.serve(args=[flag, str(pdir)]) as srv:
        env = srv.make(players=4, num_envs=8, seed=1, learner_seats=[0], opponent="policy:tiny")
        b = env.reset()
        rng = np.random.default_rng(0)
        done = 0
        for _ in range(70):  # one whole game (60 learner turns) and more
            b = env.step(random_legal(b.mask, rng))
            done += int(b.done.sum())
        assert done >= 8
        env.close()
        # the server's inference of the policy against torch
        raw = srv.make(players=4, num_envs=32, seed=2, obs_dtype=None)
        b = raw.reset()
        for _ in range(20):
            b = raw.step(random_legal(b.mask, rng))
        from dgenv import _wire

        ans = srv._request(
            "POST", "/v1/policies/tiny/act",
            {"obs": _wire.encode_tensor(np.ascontiguousarray(b.obs)),
             "mask": _wire.encode_tensor(np.ascontiguousarray(b.mask.view(np.uint8))), "logits": True},
        )
        raw.close()
    x = np.asarray(b.obs, np.float32)
    with torch.no_grad():
        want = net.logits(torch.from_numpy(x)).numpy()
    got = _wire.decode_tensor(ans["logits"]).astype(np.float32).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    np.testing.assert_allclose(got, pol.onnx_forward(pdir / "tiny.onnx", x), rtol=0, atol=1e-4)
    acts = np.asarray(_wire.decode_tensor(ans["actions"])).reshape(-1)
    assert b.mask[np.arange(len(acts)), acts].all()
    # greedy: the best legal logit (ties within float noise aside)
    best = np.where(b.mask, want, -np.inf).max(axis=1)
    assert (want[np.arange(len(acts)), acts] >= best - 1e-4).all()


# --- imitation of search (bin/dgteach + --preset imitate), fine-tuning, shared statistics ---


@pytest.fixture(scope="module")
def imitate_run(tmp_path_factory) -> dict:
    """A few batches of the imitate preset on 2 games of search labels (2 worlds), generated by bin/dgteach."""
    out = tmp_path_factory.mktemp("imitate")
    c = dict(PRESETS["imitate"])
    c.update(out=str(out), data=str(out / "teach"), teach_games=2, teach_worlds=2, hidden=(32,), epochs=2, batch_size=64,
             final_eval_games=8, eval_opponents=("random",), progress=False, tensorboard=False, minutes=5.0, seed=5)
    rows: list[dict] = []
    s = train(TrainConfig(**c), on_update=rows.append)
    s["rows"] = rows
    return s


def test_imitate_preset_trains_exports_and_evaluates(imitate_run):
    from dgenv.imitate import load_teach

    out = Path(imitate_run["out"])
    for f in ("config.json", "metrics.csv", "eval.csv", "curve.png", "summary.json", "policy.onnx",
              "checkpoints/final.pt", "checkpoints/best.pt", "teach/meta.json"):
        assert (out / f).is_file(), f
    assert len(imitate_run["rows"]) == 2  # one held-out check per epoch
    for r in imitate_run["rows"]:
        assert np.isfinite([r["train_ce"], r["val_ce"], r["val_regret"]]).all() and 0 <= r["val_agree"] <= 1
        assert r["val_regret"] >= 0
    m = pol.check_policy(imitate_run["onnx"])
    assert m.players == 4 and m.obs_size == 874
    [ev] = imitate_run["final_eval"]
    assert ev["opponent"] == "random" and ev["games"] == 8 and 0 < ev["score"][0] < 400
    meta, arr, shard = load_teach(out / "teach")
    n = arr["action"].size
    assert meta["players"] == 4 and meta["worlds"] == 2 and n > 300  # 2 games: 240 decisions each, most with a choice
    assert arr["obs"].shape == (n, 874) and arr["mask"].shape == arr["q"].shape == (n, 90)
    rows = np.arange(n)
    assert arr["mask"][rows, arr["action"]].all()  # search's card is legal
    assert (arr["mask"].sum(1) >= 2).all()  # forced moves are not recorded
    assert (arr["q"][~arr["mask"]] == 0).all()
    qm = np.where(arr["mask"], arr["q"], -np.inf)
    np.testing.assert_array_equal(qm[rows, arr["action"]], qm.max(1))  # no prior: the choice is the best value
    # the observation is the acting seat's: its hand section holds every legal card
    assert (arr["obs"][:, :90][arr["mask"]] == 1).all()
    # deal outcomes: points minus the others' mean, not all zero, within a deal's range
    assert np.abs(arr["ret"]).max() < 120 and (arr["ret"] != 0).mean() > 0.5


def test_dgteach_data_does_not_depend_on_workers(tmp_path):
    from dgenv.imitate import find_dgteach

    exe = find_dgteach()
    outs = []
    for w in (1, 2):
        d = tmp_path / f"w{w}"
        subprocess.run([str(exe), "-players", "3", "-table", "search,heuristic,random", "-games", "4", "-shard-games", "2",
                        "-worlds", "2", "-seed", "9", "-workers", str(w), "-out", str(d), "-quiet"], check=True)
        outs.append(d)
    for f in ("shard-00000.npz", "shard-00001.npz"):
        a, b = np.load(outs[0] / f), np.load(outs[1] / f)
        for k in ("obs", "mask", "q", "action", "played", "ret", "seat"):
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{f}:{k}")
    bad = subprocess.run([str(exe), "-players", "4", "-table", "search,random", "-out", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "2 bots for 4 players" in bad.stderr


def test_finetune_preset_starts_from_imitation_with_a_mixed_pool(server, imitate_run, tmp_path):
    c = dict(PRESETS["finetune"])
    c.update(out=str(tmp_path), server=server.url, init=imitate_run["checkpoint"], opponent="random,heuristic,self",
             num_envs=12, rollout_steps=4, updates=3, snapshot_every=1, eval_games=8, final_eval_games=8,
             eval_opponents=("random",), progress=False, tensorboard=False, plot=False, seed=6)
    rows: list[dict] = []
    s = train(TrainConfig(**c), on_update=rows.append)
    assert s["updates"] == 3 and len(rows) == 3
    assert {"train_diff_random", "train_diff_heuristic", "train_diff_self"} <= set(rows[-1])
    assert pol.check_policy(s["onnx"]).obs_size == 874
    # it started from the imitation weights, not from scratch
    net0, _, _ = load_checkpoint(imitate_run["checkpoint"])
    net1, _, _ = load_checkpoint(s["checkpoint"])
    assert net1.hidden == net0.hidden == (32,)


def test_python_statistics_equal_dgeval(tmp_path):
    """dgenv.stats on the games of dgeval -csv gives dgeval -json's figures."""
    import csv

    from dgenv.evaluate import find_dgeval
    from dgenv.stats import ratings, summarize

    exe = find_dgeval()
    assert exe is not None
    agents = ["heuristic", "random", "heuristic", "random"]  # a name at two seats: pooled per game
    js, cs = tmp_path / "r.json", tmp_path / "r.csv"
    subprocess.run([str(exe), "-agents", ",".join(agents), "-games", "64", "-duplicate", "-seed", "3",
                    "-json", str(js), "-csv", str(cs), "-quiet"], check=True, capture_output=True)
    go = json.loads(js.read_text())
    rows = list(csv.reader(open(cs)))[1:]
    scores = np.array([[int(x) for x in r[2:]] for r in rows])
    assert scores.shape == (64, 4)  # 8 duplicate sets of 2 x 4 seatings
    py = summarize(agents, scores)
    assert [a["name"] for a in py] == [a["name"] for a in go["agents"]]
    for p, g in zip(py, go["agents"]):
        assert p["seats"] == g["seats"]
        for k in ("score", "score_diff", "win_rate"):
            assert p[k]["mean"] == pytest.approx(g[k]["mean"], abs=1e-9), k
            assert p[k]["ci95"] == pytest.approx(g[k]["ci95"], abs=1e-9), k
    r = ratings(agents, scores)
    for n, v in go["ratings"].items():
        assert r[n] == pytest.approx(v, abs=1e-6)


def test_colour_permutations_relabel_a_position_consistently(imitate_run):
    """Renaming the colours keeps the hand equal to the legal cards' superset, the search values on
    the legal cards, the deal score (the value target) unchanged, and the inverse undoes it."""
    from dgenv.imitate import colour_permutations, load_teach, potential

    meta, arr, _ = load_teach(Path(imitate_run["out"]) / "teach")
    secs, D = meta["obs"]["sections"], meta["obs_size"]
    po, pa = colour_permutations(secs, D)
    assert po.shape == (120, D) and pa.shape == (120, 90)
    np.testing.assert_array_equal(po[0], np.arange(D))  # the identity comes first
    off = {s["name"]: s["offset"] for s in secs}
    for k in (1, 33, 119):
        o, m, q = arr["obs"][:, po[k]], arr["mask"][:, pa[k]], arr["q"][:, pa[k]]
        assert (o[:, :90][m] == 1).all() and (q[~m] == 0).all()
        np.testing.assert_allclose(potential(o, 4, off["prizes"]), potential(arr["obs"], 4, off["prizes"]))
        np.testing.assert_array_equal(o[:, np.argsort(po[k])], arr["obs"])
        # a card keeps its value; only its colour changes
        assert all(pa[k][j] % 18 == j % 18 for j in range(90))


def test_evaluate_policy_in_process(server, tiny_run):
    from dgenv import connect
    from dgenv.train import evaluate_policy

    net, _, _ = load_checkpoint(tiny_run["checkpoint"])
    with connect(server.url) as c:
        r = evaluate_policy(c, net, "random", 8, seed=3)
        again = evaluate_policy(c, net, "random", 8, seed=3)
    assert r == again and r["games"] == 8 and 0 < r["score"][0] < 400
    # the policy's difference is its score minus the opponents' mean, game by game
    assert r["diff"][0] == pytest.approx(r["score"][0] - r["opp_score"][0])
    assert 0 <= r["win_rate"][0] <= 1


# --- another game: the duel's preset, its policy file, served and evaluated (issue 14) ---


@pytest.fixture(scope="module")
def duel_run(server, tmp_path_factory) -> dict:
    """The duel preset for 2 updates on a few envs: both roles against the heuristic and random."""
    out = tmp_path_factory.mktemp("duel")
    c = dict(PRESETS["duel"])
    c.update(out=str(out), server=server.url, seed=5, num_envs=16, rollout_steps=8, updates=2, hidden=(32,),
             final_eval_games=20, eval_every_s=1e9, progress=False, tensorboard=False, plot=False)
    return train(TrainConfig(**c))


def test_duel_preset_trains_both_roles_and_exports_a_duel_policy(duel_run):
    s = duel_run
    assert s["game"] == "duel" and s["players"] == 2 and s["updates"] == 2
    m = pol.check_policy(s["onnx"])
    assert (m.game, m.players, m.num_actions, m.obs_size, m.params) == ("duel", 2, 117, 461, {"max_rounds": 100})
    assert json.loads(m.props()["dgenv.game"]) == {"name": "duel", "max_rounds": 100}
    assert pol.read_meta(s["onnx"]) == m
    for r in s["final_eval"]:  # duplicate: each role as often, its record by seat
        seats = {b["seat"]: b for b in r["by_seat"]}
        assert set(seats) == {0, 1} and seats[0]["games"] == seats[1]["games"] == r["games"] // 2
        assert all(b["wins"] + b["draws"] + b["losses"] == b["games"] for b in seats.values())


def test_duel_policy_is_served_evaluated_and_acts_in_process(duel_run, tmp_path):
    from dgenv.evaluate import evaluate

    pdir = tmp_path / "pols"
    pdir.mkdir()
    (pdir / "d.onnx").write_bytes(Path(duel_run["onnx"]).read_bytes())
    net, _, _ = load_checkpoint(duel_run["checkpoint"])
    with dgenv.serve(args=["--policies", str(pdir)]) as srv:
        (info,) = srv.policies()
        assert info["game"] == {"name": "duel", "max_rounds": 100} and info["num_actions"] == 117
        assert "policy:d" in srv.game("duel").raw["bots"] and "policy:d" not in srv.game().raw["bots"]
        env = srv.make(game="duel", num_envs=8, seed=1, learner_seats=[1], opponent="policy:d")
        b = env.reset()
        rng = np.random.default_rng(0)
        done = 0
        for _ in range(400):
            b = env.step(random_legal(b.mask, rng))
            done += int(b.done.sum())
        assert done >= 8
        env.close()
        with pytest.raises(dgenv.BadRequest, match="policy:d"):  # a duel bot, not the card game's
            srv.make(players=4, num_envs=1, learner_seats=[0], opponent="policy:d")
        raw = srv.make(game="duel", num_envs=16, seed=2, obs_dtype=None)
        b = raw.reset()
        for _ in range(10):
            b = raw.step(random_legal(b.mask, rng))
        acts, got = srv.act("d", b.obs, b.mask, logits=True)
        raw.close()
    x = np.asarray(b.obs, np.float32)
    with torch.no_grad():
        want = net.logits(torch.from_numpy(x)).numpy()
    assert got.shape == (16, 117)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    assert b.mask[np.arange(len(acts)), acts].all()
    # in process: the same policy, the same actions
    loc = dgenv.local(policies=pdir)
    got_local = loc.act("d", b.obs, b.mask)
    np.testing.assert_array_equal(got_local, acts)
    with pytest.raises(ValueError, match=r"want \(16, 117\)"):
        loc.act("d", b.obs, b.mask[:, :90])
    # dgeval plays it in both roles, and evaluate() refuses it at a card table
    res = evaluate(["policy:d", "random"], games=20, game="duel", policies=str(pdir), backend="dgeval", progress=False)
    assert {(r["name"], r["seat"]) for r in res["by_seat"]} == {("policy:d", 0), ("policy:d", 1), ("random", 0), ("random", 1)}
    with pytest.raises(ValueError, match="plays duel"):
        evaluate(["policy:d", "random", "random"], games=3, policies=str(pdir), backend="dgeval", progress=False)


def test_duel_potential_is_the_wound_balance(server):
    env = server.make(game="duel", num_envs=2, seed=1, learner_seats=[0], opponent="random")
    try:
        pot = _Potential.for_spec(env.spec, "zero_sum")
        pub = env.spec.obs.section("public").offset
        obs = np.zeros((2, env.obs_size), np.float32)
        obs[0, pub + 2], obs[0, pub + 3] = 1, 2  # one wound taken, two dealt
        obs[1, pub + 2] = 2
        # a win is +2 with zero_sum (1 - (-1)), +1 with points: a wound a third of it
        np.testing.assert_allclose(pot(obs), [2 / 3, -4 / 3], rtol=1e-6)
        np.testing.assert_allclose(_Potential.for_spec(env.spec, "points")(obs), [1 / 3, -2 / 3], rtol=1e-6)
        np.testing.assert_allclose(pot(obs.astype(np.uint8)), [2 / 3, -4 / 3], rtol=1e-6)  # the wire's dtype
        assert pot(env.reset().obs).tolist() == [0.0, 0.0]  # nobody is wounded at the start
    finally:
        env.close()


def test_duel_imitate_preset_learns_from_heuristic_demonstrations(tmp_path):
    """The duel-imitate preset end to end, small: bin/dgteach -game duel demonstrations,
    the fit, the export (a duel policy) and dgeval's evaluation in both roles."""
    c = dict(PRESETS["duel-imitate"])
    c.update(out=str(tmp_path / "run"), data=str(tmp_path / "teach"), teach_games=6, hidden=(32,), updates=30,
             batch_size=256, final_eval_games=8, eval_opponents=("random",), progress=False, tensorboard=False,
             plot=False)
    s = train(TrainConfig(**c))
    meta = json.loads((tmp_path / "teach" / "meta.json").read_text())
    assert meta["game"] == {"name": "duel", "max_rounds": 100} and meta["teacher"] == "heuristic"
    m = pol.check_policy(s["onnx"])
    assert (m.game, m.num_actions, m.players) == ("duel", 117, 2)
    assert s["records"] > 100 and 0.0 <= s["last"]["val_agree"] <= 1.0
    (r,) = s["final_eval"]
    assert {b["seat"] for b in r["by_seat"]} == {0, 1}
    with pytest.raises(ValueError, match="labels of duel"):
        train(TrainConfig(**{**c, "game": "david_goliath", "out": str(tmp_path / "x")}))
