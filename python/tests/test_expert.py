"""Expert iteration (``--preset expert``, dgenv.expert): a tiny run end to end, and its resume.

Needs bin/dgteach and bin/dgeval (``dgenv.imitate.find_dgteach`` builds dgteach with go when
missing; dgeval comes from ``make build``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from dgenv.expert import (  # noqa: E402
    _Stop, bias_of, bias_r2, correct_bias, curve_table, fit_bias, heldout_gain, mix_return, q_losses, run_expert,
)
from dgenv.model import PolicyNet  # noqa: E402
from dgenv.policy import read_meta  # noqa: E402
from dgenv.train import PRESETS, TrainConfig, config_from_args  # noqa: E402


def tiny(out: Path, **kw) -> TrainConfig:
    c = dict(PRESETS["expert"])
    c.update(out=str(out), exit_iterations=2, exit_games=2, exit_games0=3, exit_epochs0=1, exit_shard_games=1,
             epochs=2, teach_worlds=1, hidden=(16,), batch_size=32, exit_start="", exit_eval="random,random,random:16",
             teach_workers=1, progress=False, tensorboard=False, plot=False, ckpt_every_s=1e9, exit_window=2)
    c.update(kw)
    return TrainConfig(**c)


def weights(out: Path, i: int) -> dict:
    return torch.load(str(out / f"iter-{i:03d}" / "final.pt"), weights_only=True)["state_dict"]


def results(out: Path) -> list:
    rows = json.loads((out / "summary.json").read_text())["curve"]
    return [{k: v for k, v in r.items() if k not in ("minutes", "train_minutes")} for r in rows]


def test_expert_run_resumes_where_it_was_stopped_bit_for_bit(tmp_path):
    a = tmp_path / "a"
    s = run_expert(tiny(a))
    assert s["iterations"] == 2 and Path(s["policy"]).name == "exit-1.onnx"
    rows = results(a)
    assert [r["iteration"] for r in rows] == [0, 1]
    assert all(r["records"] > 0 and r["held_out"] > 0 for r in rows)
    [ev] = rows[1]["evals"]
    assert ev["table"] == "policy:exit-1,random,random,random" and ev["games"] == 16
    assert (a / "curve.csv").read_text().count("\n") == 3  # header and one row per iteration
    # iteration 1 played the table with iteration 0's network in the first seat
    meta = json.loads((a / "data" / "iter-001" / "meta.json").read_text())
    assert meta["table"] == ["policy:exit-0", "search", "heuristic", "random"]

    # the curve's table: a row per iteration, the network's score difference in it
    table = curve_table(a).splitlines()
    assert len(table) == 2 and table[1].startswith("| 1 | ") and f"{ev['diff']['policy:exit-1'][0]:+.2f}" in table[1]
    assert heldout_gain(a, 0, a / "policies" / "exit-0.onnx", a / "policies" / "exit-1.onnx") is None  # no shard 19
    shutil.copyfile(a / "data" / "iter-000" / "shard-00000.npz", tmp_path / "shard-00019.npz")
    (a / "data" / "iter-000" / "shard-00019.npz").symlink_to(tmp_path / "shard-00019.npz")
    n, g, r, ci = heldout_gain(a, 0, a / "policies" / "exit-0.onnx", a / "policies" / "exit-0.onnx")
    assert n > 0 and g == r and ci == 0.0
    (a / "data" / "iter-000" / "shard-00019.npz").unlink()

    # the same run, killed four times: after generating (and one shard lost), at the first
    # batch of an iteration (nothing saved), one batch after a saved state, and later with
    # the last saved state behind (an epoch's end or that batch); each rerun continues
    b = tmp_path / "b"
    stops = [("generate", 0, None, 1e9), ("train", 1, 0, 1e9), ("train", 1, 5, 0.0), ("train", 1, 40, 1e9)]

    def hook_for(phase: str, it: int, after: int):
        def hook(p: str, i: int, n: int) -> None:
            if p == phase and i == it and (after is None or n > after):
                raise _Stop()
        return hook

    for phase, it, after, every in stops:
        with pytest.raises(_Stop):
            run_expert(tiny(b, ckpt_every_s=every), hook=hook_for(phase, it, after))
        if phase == "generate":
            (b / "data" / "iter-000" / "shard-00001.npz").unlink()
    assert (b / "iter-001" / "state.pt").exists() and not (b / "iter-001" / "final.pt").exists()
    run_expert(tiny(b))
    for i in (0, 1):
        wa, wb = weights(a, i), weights(b, i)
        assert wa.keys() == wb.keys()
        for k in wa:
            assert torch.equal(wa[k], wb[k]), f"iteration {i} weight {k} differs after resuming"
    assert results(b) == rows

    # a finished run rerun does nothing more; one with other settings is refused
    assert results(b) == results(Path(run_expert(tiny(b))["out"]))
    with pytest.raises(ValueError, match="differs in lr"):
        run_expert(tiny(b, lr=5e-4))
    # a field that a run's config.json predates reads as its default there
    c = json.loads((b / "config.json").read_text())
    del c["reward"], c["q_mse"]
    (b / "config.json").write_text(json.dumps(c))
    with pytest.raises(ValueError, match="differs in q_mse"):
        run_expert(tiny(b))
    c["q_mse"] = 0.05
    (b / "config.json").write_text(json.dumps(c))
    assert results(Path(run_expert(tiny(b))["out"])) == rows
    # more iterations are a budget: allowed, and the run goes on from where it is
    assert run_expert(tiny(b, exit_iterations=3))["iterations"] == 3


def test_q_losses_centred_regression():
    mask = torch.tensor([[True, True, False, True]])
    q = torch.tensor([[3.0, -1.0, 0.0, 5.0]])
    ce, mse = q_losses(q + 7.0, mask, q, tau=1.0)  # logits = q + a constant: no regression error
    assert float(mse[0]) == pytest.approx(0.0, abs=1e-5)
    _, mse2 = q_losses(q / 2.0, mask, q, tau=2.0)  # tau scales the logits to points
    assert float(mse2[0]) == pytest.approx(0.0, abs=1e-5)
    lg = torch.tensor([[0.0, 0.0, 9.0, 0.0]])  # uniform over the legal cards; the illegal logit does not count
    _, mse3 = q_losses(lg, mask, q, tau=1.0)
    legal = torch.tensor([3.0, -1.0, 5.0])
    assert float(mse3[0]) == pytest.approx(float(legal.var(unbiased=False)), rel=1e-5)
    assert float(ce[0]) > 0


def test_mix_return_moves_only_the_played_cards_value():
    q = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = mix_return(q, torch.tensor([2, 0]), torch.tensor([-7.0, 10.0]), 0.25)
    assert torch.equal(out, torch.tensor([[1.0, 2.0, 0.75 * 3.0 - 0.25 * 7.0], [0.75 * 4.0 + 2.5, 5.0, 6.0]]))
    assert q[0, 2] == 3.0  # not in place
    assert torch.equal(mix_return(q, torch.tensor([1, 1]), torch.tensor([9.0, 9.0]), 1.0)[:, 1], torch.tensor([9.0, 9.0]))


def test_expert_run_with_the_returns_mixed_in(tmp_path):
    s = run_expert(tiny(tmp_path, exit_iterations=1, ret_mix=0.5, exit_eval="random,random,random:8", tau=4.0))
    assert s["iterations"] == 1 and s["curve"][0]["records"] > 0
    # the exported network says what a logit is worth: the soft targets' temperature, in points
    assert read_meta(s["policy"]).logit_scale == 4.0


def test_fit_bias_carries_the_played_cards_outcomes_to_the_cards_not_played():
    # ret - q is +4 on card 0 and -4 on card 1 where feature 0 is set, 0 elsewhere and on card 2;
    # each decision's played card is drawn at random: the model must tell the cards apart by state
    g = torch.Generator().manual_seed(3)
    n = 4000
    x = (torch.rand(n, 4, generator=g) < 0.5).float()
    played = torch.randint(0, 3, (n,), generator=g)
    q = torch.randn(n, 3, generator=g)
    on = x[:, 0] == 1
    shift = torch.where(on & (played == 0), 4.0, torch.where(on & (played == 1), -4.0, 0.0))
    ret = q.gather(1, played[:, None]).squeeze(1) + shift + 0.5 * torch.randn(n, generator=g)
    tr = {"obs": x, "q": q, "played": played, "ret": ret, "mask": torch.ones(n, 3, dtype=torch.bool)}
    start = PolicyNet(4, (32,), num_actions=3)
    b = bias_of(fit_bias(start, tr, seed=5, batch_size=64, device=torch.device("cpu"), epochs=8, lr=3e-3), tr)
    assert b.shape == (n, 3)
    assert b[on, 0].mean() > 3 and b[on, 1].mean() < -3 and b[on, 2].abs().mean() < 1
    assert b[~on].abs().mean() < 1
    assert bias_r2(b, tr) > 0.8
    # the same seed fits the same model; the correction moves every legal card, not the illegal ones
    b2 = bias_of(fit_bias(start, tr, seed=5, batch_size=64, device=torch.device("cpu"), epochs=8, lr=3e-3), tr)
    assert torch.equal(b, b2)
    mask = torch.tensor([[True, True, False]])
    out = correct_bias(torch.zeros(1, 3), mask, torch.tensor([[1.0, -2.0, 5.0]]), 0.5)
    assert torch.equal(out, torch.tensor([[0.5, -1.0, 0.0]]))


def test_expert_run_with_the_bias_model_resumes_bit_for_bit(tmp_path):
    kw = dict(exit_iterations=2, bias_mix=1.0, ret_mix=0.5, exit_eval="")
    a = run_expert(tiny(tmp_path / "a", **kw))
    assert a["iterations"] == 2
    for i in (0, 1):
        assert (tmp_path / "a" / f"iter-{i:03d}" / "bias.pt").exists()
        assert "bias_r2" in json.loads((tmp_path / "a" / f"iter-{i:03d}" / "train.json").read_text())
    # stopped in iteration 1's fit after its bias model was saved, with a state saved, then rerun
    b = tmp_path / "b"

    def hook(p: str, i: int, n: int) -> None:
        if p == "train" and i == 1 and n > 3:
            raise _Stop()
    with pytest.raises(_Stop):
        run_expert(tiny(b, ckpt_every_s=0.0, **kw), hook=hook)
    assert (b / "iter-001" / "bias.pt").exists() and (b / "iter-001" / "state.pt").exists()
    run_expert(tiny(b, **kw))
    for i in (0, 1):
        wa, wb = weights(tmp_path / "a", i), weights(b, i)
        for k in wa:
            assert torch.equal(wa[k], wb[k]), f"iteration {i} weight {k} differs after resuming"
    with pytest.raises(ValueError, match="--bias-mix"):
        run_expert(tiny_duel(tmp_path / "d", bias_mix=0.5))


def test_expert_preset_flags():
    c = config_from_args(["--preset", "expert", "--exit-eval", "search,search,search:200", "--q-mse", "0.1"])
    assert c.algo == "expert" and c.exit_eval == "search,search,search:200" and c.q_mse == 0.1
    assert replace(c, exit_iterations=5).hidden == (512, 256, 256)


def test_expert_run_continued_from_another_runs_iteration(tmp_path):
    a = tmp_path / "a"
    rows = results(Path(run_expert(tiny(a))["out"]))
    before = {p: p.stat().st_mtime_ns for p in a.rglob("*")}
    # continued from a's iteration 1 in another --out with a's settings: a's own iteration 1, bit for bit,
    # its labels read from a (iteration 0's, in the window) and nothing of a written
    c = tmp_path / "c"
    s = run_expert(tiny(c, exit_from=f"{a}:1"))
    assert s["iterations"] == 1 and Path(s["policy"]) == c / "policies" / "exit-1.onnx"
    assert results(c) == rows[1:]
    for k, v in weights(a, 1).items():
        assert torch.equal(v, weights(c, 1)[k]), f"weight {k} differs from the run continued"
    assert not (c / "data" / "iter-000").exists() and not (c / "iter-000").exists()
    assert {p: p.stat().st_mtime_ns for p in a.rglob("*")} == before
    assert json.loads((c / "data" / "iter-001" / "meta.json").read_text())["table"][0] == "policy:exit-0"
    # with more epochs: its own fit from a's network, one more iteration on its own labels
    d = tmp_path / "d"
    s = run_expert(tiny(d, exit_from=f"{a}:1", epochs=3, exit_iterations=3))
    assert [r["iteration"] for r in s["curve"]] == [1, 2]
    assert s["curve"][0]["records"] == rows[1]["records"] and s["curve"][0]["batches"] == 3 * rows[1]["batches"] // 2
    assert any(not torch.equal(v, weights(d, 1)[k]) for k, v in weights(a, 1).items())
    # a run that has not got that far, or a spec that is not RUN:K, is refused with what is missing
    with pytest.raises(ValueError, match="has not finished iteration 2"):
        run_expert(tiny(tmp_path / "e", exit_from=f"{a}:3"))
    for bad in (str(a), f"{a}:0", f"{a}:x"):
        with pytest.raises(ValueError, match="want RUN:K"):
            run_expert(tiny(tmp_path / "f", exit_from=bad))
    assert not (tmp_path / "e").exists() and not (tmp_path / "f").exists()
    # a continuation of a continuation: c's iteration 2 from c (its labels of iteration 0 are a's),
    # which is a's own iteration 2 once a goes on
    g = tmp_path / "g"
    assert [r["iteration"] for r in run_expert(tiny(g, exit_from=f"{c}:2", exit_iterations=3))["curve"]] == [2]
    assert results(Path(run_expert(tiny(a, exit_iterations=3))["out"]))[2] == results(g)[0]
    for k, v in weights(a, 2).items():
        assert torch.equal(v, weights(g, 2)[k])
    # and from an earlier iteration than a continuation began with (g's iteration 0 is a's, its network
    # not among g's policies): a's iteration 1 again
    assert not (g / "policies" / "exit-0.onnx").exists()
    assert results(Path(run_expert(tiny(tmp_path / "h", exit_from=f"{g}:1"))["out"])) == rows[1:]
    c2 = config_from_args(["--preset", "expert", "--exit-from", "/r/expert-p4:20", "--epochs", "6"])
    assert c2.exit_from == "/r/expert-p4:20" and c2.epochs == 6


# --- the duel (--preset duel-expert): any game through --game ---

import numpy as np  # noqa: E402

from dgenv.expert import game_params  # noqa: E402
from dgenv.policy import onnx_forward  # noqa: E402


def tiny_duel(out: Path, preset: str = "duel-expert-values", **kw) -> TrainConfig:
    c = dict(PRESETS[preset])
    c.update(out=str(out), exit_iterations=2, exit_games=2, exit_games0=3, exit_shard_games=1, epochs=2, teach_worlds=1,
             batch_size=32, exit_eval="heuristic:8;random:4", teach_workers=1, progress=False, tensorboard=False,
             plot=False, ckpt_every_s=1e9, exit_window=2)
    c.update(kw)
    return TrainConfig(**c)


def stop_at(phase: str, it: int, after):
    def hook(p: str, i: int, n: int) -> None:
        if p == phase and i == it and (after is None or n > after):
            raise _Stop()
    return hook


def test_duel_expert_run_plays_both_roles_and_resumes_bit_for_bit(tmp_path):
    a = tmp_path / "a"
    s = run_expert(tiny_duel(a))
    assert s["iterations"] == 2 and Path(s["policy"]).name == "exit-1.onnx"
    rows = results(a)
    # the network against the search, which dgteach rotates a seat per game: both roles labelled by the search's values
    for i, first in ((0, "policy:start"), (1, "policy:exit-0")):
        meta = json.loads((a / "data" / f"iter-{i:03d}" / "meta.json").read_text())
        assert meta["table"] == [first, "search"] and meta["game"]["name"] == "duel" and meta["worlds"] == 1
    z = np.load(a / "data" / "iter-000" / "shard-00000.npz")
    assert set(z["seat"].tolist()) == {0, 1}
    m = z["mask"].astype(bool)
    assert (m.sum(1) > 1).all() and np.abs(z["q"][m]).max() <= 1.0 and (z["q"][~m] == 0).all()
    assert read_meta(s["policy"]).game == "duel" and read_meta(s["policy"]).logit_scale == 1.0  # points per logit: the card game's, without a prior
    # each table's evaluation has the network's record in each seat (Goliath 0, David 1), in curve.csv and the table
    ev = rows[1]["evals"]
    assert [e["table"] for e in ev] == ["policy:exit-1,heuristic", "policy:exit-1,random"]
    for e in ev:
        sa, sb = e["by_seat"]["policy:exit-1@0"], e["by_seat"]["policy:exit-1@1"]
        assert sa[2] + sa[3] + sa[4] == sb[2] + sb[3] + sb[4] == e["games"] // 2
    head = (a / "curve.csv").read_text().splitlines()[0].split(",")
    assert {"heuristic|net seat 0", "heuristic|net seat 1", "random|net seat 0", "random|net seat 1"} <= set(head)
    table = curve_table(a).splitlines()
    assert len(table) == 2 and table[1].startswith("| 1 | ") and table[1].count(" ± ") == 4
    m0, c0, w, d, lo = ev[0]["by_seat"]["policy:exit-1@0"]
    assert f"{m0:+.2f} ± {c0:.2f} ({w}-{d}-{lo})" in table[1]

    # killed after generating (a shard lost), at an iteration's first batch, and after a saved state; rerun: the same run
    b = tmp_path / "b"
    for (phase, it, after), every in ((("generate", 0, None), 1e9), (("train", 0, 0), 1e9), (("train", 1, 3), 0.0)):
        with pytest.raises(_Stop):
            run_expert(tiny_duel(b, ckpt_every_s=every), hook=stop_at(phase, it, after))
        if phase == "generate":
            (b / "data" / "iter-000" / "shard-00001.npz").unlink()
    assert (b / "iter-001" / "state.pt").exists() and not (b / "iter-001" / "final.pt").exists()
    run_expert(tiny_duel(b))
    for i in (0, 1):
        wa, wb = weights(a, i), weights(b, i)
        assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa), f"iteration {i} differs"
    assert results(b) == rows


def test_duel_expert_warm_start_is_the_start_policy(tmp_path):
    # at learning rate 0 iteration 0's network is --exit-start's (policies/duel.onnx) with --exit-warm, not without
    obs = None
    for warm in (True, False):
        out = tmp_path / str(warm)
        s = run_expert(tiny_duel(out, exit_iterations=1, lr=0.0, exit_warm=warm, exit_eval="random:2"))
        if obs is None:
            obs = np.load(out / "data" / "iter-000" / "shard-00000.npz")["obs"].astype(np.float32)
        start, got = onnx_forward(str(out / "policies" / "start.onnx"), obs), onnx_forward(s["policy"], obs)
        assert np.allclose(start, got, atol=1e-4) == warm
        assert (s["curve"][0]["val_keep"] == 1.0) == warm  # the held-out share of the start policy's choices kept
    with pytest.raises(ValueError, match="give --exit-start"):
        run_expert(tiny_duel(tmp_path / "c", exit_start=""))
    with pytest.raises(ValueError, match="--ret-mix"):
        run_expert(tiny_duel(tmp_path / "d", ret_mix=0.5))
    with pytest.raises(ValueError, match="want k=<integer>"):
        run_expert(tiny_duel(tmp_path / "e", game_params="max_rounds"))
    assert not any((tmp_path / x).exists() for x in "cde")


def test_duel_expert_preset_flags():
    c = config_from_args(["--preset", "duel-expert-values", "--exit-eval", "search:800", "--teach-worlds", "64"])
    assert (c.algo, c.game, c.teacher, c.exit_start, c.exit_warm) == ("expert", "duel", "search", "policies/duel.onnx", True)
    assert not c.augment and not c.features and c.exit_eval == "search:800" and c.teach_worlds == 64 and c.exit_prior
    g = config_from_args(["--preset", "duel-expert"])
    assert (g.teacher, g.teach_table, g.teach_worlds, g.q_mse, g.exit_prior, g.tau) == (
        "search:policy:{policy}", "policy:{policy},search", 0, 0.0, True, 0.1)
    assert game_params("max_rounds=50, x=2") == {"max_rounds": 50, "x": 2} and game_params("") == {}


def test_q_losses_with_a_prior_improve_it_by_the_values():
    mask = torch.tensor([[True, True, False, True]])
    q = torch.tensor([[0.03, -0.01, 0.0, 0.05]])
    prior = torch.tensor([[2.0, -1.0, 7.0, 0.5]])
    tau = 0.01
    # the optimum: the prior's logits plus q / tau (plus a constant); the target is their softmax over the legal actions
    ce, mse = q_losses(prior + q / tau + 4.0, mask, q, tau, prior=prior)
    assert float(mse[0]) == pytest.approx(0.0, abs=1e-9)
    p = torch.softmax((prior + q / tau)[0, [0, 1, 3]], 0)
    assert float(ce[0]) == pytest.approx(float(-(p * p.log()).sum()), rel=1e-5)
    # the prior alone misses by the values' spread; without a prior, the plain targets
    _, mse2 = q_losses(prior, mask, q, tau, prior=prior)
    assert float(mse2[0]) == pytest.approx(float(q[0, [0, 1, 3]].var(unbiased=False)), rel=1e-4)
    ce0, _ = q_losses(prior, mask, q, tau)
    assert torch.equal(ce0, q_losses(prior, mask, q, tau, prior=None)[0])
    with pytest.raises(ValueError, match="--exit-prior: needs the start policy"):
        run_expert(TrainConfig(**{**PRESETS["duel-expert-values"], "exit_start": "", "exit_warm": False, "out": "/nonexistent/x"}))


def test_duel_expert_labels_by_the_search_the_network_guides(tmp_path):
    # --preset duel-expert: the teacher is search:policy:<the network before>, whose choices label (q 1 on the choice),
    # at the table policy:<that network>,search rotated; iteration 0's is the start policy (policies/duel.onnx)
    a = tmp_path / "a"
    s = run_expert(tiny_duel(a, "duel-expert", exit_games=1, exit_games0=1, teach_worlds=0, exit_eval="random:2"))
    assert s["iterations"] == 2
    for i, net in ((0, "start"), (1, "exit-0")):
        meta = json.loads((a / "data" / f"iter-{i:03d}" / "meta.json").read_text())
        assert meta["teacher"] == f"search:policy:{net}" and meta["table"] == [f"policy:{net}", "search"]
        z = np.load(a / "data" / f"iter-{i:03d}" / "shard-00000.npz")
        q, m = z["q"], z["mask"].astype(bool)
        assert (q.sum(1) == 1).all() and (q[np.arange(len(q)), z["action"]] == 1).all() and m[q == 1].all()
    with pytest.raises(ValueError, match="--teacher {policy}: needs the start policy"):
        run_expert(tiny_duel(tmp_path / "b", "duel-expert", exit_start="", exit_warm=False, exit_prior=False))


def test_duel_expert_rollout_labels_the_networks_role_by_whole_games_of_the_table(tmp_path):
    # --exit-rollouts on the duel (--preset duel-expert-rollout): dgteach -teacher rollout plays each legal action in
    # the true state, then the game to its end by --rollout-table, so each value is a mean of whole games' results
    # (+2 won, -2 lost, 0 drawn, env.ZeroSum's units, as ret); only the network's table position is labelled, and
    # dgteach rotates the table so that position plays Goliath in even games and David in odd ones
    a = tmp_path / "a"
    s = run_expert(tiny_duel(a, "duel-expert-rollout", exit_rollouts=2, exit_games=2, exit_games0=2, exit_eval="random:2"))
    assert s["iterations"] == 2
    for i, net in ((0, "start"), (1, "exit-0")):
        d = a / "data" / f"iter-{i:03d}"
        meta = json.loads((d / "meta.json").read_text())
        assert (meta["teacher"], meta["rollouts"], meta["label_seats"], meta["game"]["name"]) == ("rollout", 2, "0", "duel")
        assert meta["table"] == [f"policy:{net}", "search"] and meta["rollout_table"] == [f"policy:{net}", f"policy:{net}"]
        for f in sorted(d.glob("shard-*.npz")):
            k = int(f.stem.split("-")[1])
            z = np.load(f)
            m = z["mask"].astype(bool)
            assert len(z["seat"]) > 0 and (z["seat"] == k % 2).all()
            # two playouts of +2, 0 or -2: a value is a multiple of 1 in [-2, 2]; actions differ somewhere
            assert (np.abs(z["q"][m]) <= 2.0).all() and np.array_equal(z["q"][m], np.round(z["q"][m])) and (z["q"][~m] == 0).all()
            assert (z["q"].max(1) > z["q"].min(1)).any()
    c = config_from_args(["--preset", "duel-expert-rollout"])
    assert (c.game, c.exit_rollouts, c.label_seats, c.exit_prior, c.exit_start) == ("duel", 4, "0", True, "policies/duel.onnx")
    with pytest.raises(ValueError, match="--rollout-policy: give --exit-rollouts too"):
        run_expert(tiny_duel(tmp_path / "b", rollout_table="policy:{policy},search"))
    assert not (tmp_path / "b").exists()


def test_decision_gains_judge_the_played_card_and_each_policy_on_the_same_decisions(tmp_path, capsys):
    import subprocess

    import numpy as np

    from dgenv.expert import decision_gains, main
    from dgenv.imitate import find_dgteach
    from dgenv.policy import onnx_forward

    # search at every seat, no exploration: each seat plays the teacher's own choice, the best label
    d = tmp_path / "teach"
    subprocess.run([str(find_dgteach()), "-table", "search,search,search,search", "-worlds", "2", "-eps", "0",
                    "-games", "2", "-shard-games", "1", "-seed", "5", "-workers", "1", "-quiet", "-out", str(d)], check=True)
    zs = [np.load(f) for f in sorted(d.glob("shard-*.npz"))]
    q = np.concatenate([z["q"] for z in zs]).astype(np.float64)
    mask = np.concatenate([z["mask"] for z in zs]).astype(bool)
    obs = np.concatenate([z["obs"] for z in zs]).astype(np.float32)
    mean = (q * mask).sum(1) / mask.sum(1)
    best = np.where(mask, q, -np.inf).max(1) - mean
    nets = [Path(__file__).resolve().parents[2] / "policies" / f"{n}.onnx" for n in ("expert", "imitate-search")]
    rows = decision_gains(d, nets)
    assert [r["name"] for r in rows] == ["played", "expert", "imitate-search"]
    assert rows[0]["decisions"] == len(q) > 50
    assert rows[0]["gain"] == pytest.approx(best.mean())  # the teacher's seat played its best label
    gains = []
    for r, p in zip(rows[1:], nets):
        a = np.where(mask, onnx_forward(str(p), obs), -np.inf).argmax(1)
        assert mask[np.arange(len(a)), a].all()
        g = q[np.arange(len(q)), a] - mean
        gains.append(g)
        assert r["gain"] == pytest.approx(g.mean())
        assert r["vs_played"][0] == pytest.approx(g.mean() - best.mean())
        assert r["vs_played"][0] <= 1e-9 and r["vs_played"][1] > 0  # nothing beats the best label on its own labels
    assert "vs_first" not in rows[1]
    assert rows[2]["vs_first"][0] == pytest.approx((gains[1] - gains[0]).mean())

    assert main(["--gains", str(d), str(nets[0])]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith(f"| played | {len(q):,} | {best.mean():.3f} |") and out[3].startswith("| expert |")
    with pytest.raises(SystemExit):
        main(["--gains", str(tmp_path)])  # no shards: a clear error, not a traceback
    assert "no dgteach shards" in capsys.readouterr().err
    old = tmp_path / "old"  # shards of a dgteach from before "played": the held-out gain still works, --gains says why not
    old.mkdir()
    shutil.copyfile(d / "meta.json", old / "meta.json")
    with np.load(d / "shard-00000.npz") as z:
        np.savez(old / "shard-00000.npz", **{k: z[k] for k in z.files if k != "played"})
    with pytest.raises(ValueError, match="without the played cards"):
        decision_gains(old, nets)
    with pytest.raises(SystemExit):
        main([])  # neither a run nor --gains


def test_step_gain_pairs_an_iterations_network_with_the_one_before_on_the_next_labels(tmp_path, capsys):
    import subprocess

    import numpy as np

    from dgenv.expert import main, step_gain
    from dgenv.imitate import find_dgteach
    from dgenv.policy import onnx_forward

    # a run's layout by hand: exit-0 (here the committed expert) made from start (imitate-search), iteration 1's labels
    run = tmp_path / "run"
    (run / "policies").mkdir(parents=True)
    repo = Path(__file__).resolve().parents[2] / "policies"
    shutil.copyfile(repo / "expert.onnx", run / "policies" / "exit-0.onnx")
    assert step_gain(run, 0) is None  # no start network, no labels yet
    shutil.copyfile(repo / "imitate-search.onnx", run / "policies" / "start.onnx")
    assert step_gain(run, 0) is None
    d = run / "data" / "iter-001"
    subprocess.run([str(find_dgteach()), "-table", "policy:exit-0,search,heuristic,random", "-worlds", "2",
                    "-policies", str(run / "policies"), "-games", "2", "-shard-games", "1", "-seed", "3",
                    "-workers", "1", "-quiet", "-out", str(d)], check=True)
    zs = [np.load(f) for f in sorted(d.glob("shard-*.npz"))]
    q = np.concatenate([z["q"] for z in zs]).astype(np.float64)
    mask = np.concatenate([z["mask"] for z in zs]).astype(bool)
    obs = np.concatenate([z["obs"] for z in zs]).astype(np.float32)
    mean = (q * mask).sum(1) / mask.sum(1)

    def gain(name: str) -> np.ndarray:
        a = np.where(mask, onnx_forward(str(repo / f"{name}.onnx"), obs), -np.inf).argmax(1)
        return q[np.arange(len(q)), a] - mean

    diff = gain("expert") - gain("imitate-search")
    assert abs(diff.mean()) > 1e-6  # the two networks disagree: the test can tell the order apart
    n, m, ci = step_gain(run, 0)
    assert n == len(q) > 50 and m == pytest.approx(diff.mean()) and ci > 0
    assert step_gain(run, 1) is None  # exit-1 and iteration 2's labels are not there

    # the curve with --steps: the step in iteration 0's row
    (run / "iter-000").mkdir()
    (run / "iter-000" / "eval.json").write_text(json.dumps({"iteration": 0, "records": 10, "held_out": 2, "val_gain": 0.5, "evals": []}))
    assert main([str(run), "--steps"]) == 0
    row = capsys.readouterr().out.strip()
    assert row.startswith("| 0 | 10 | 2 | 0.500 |  | ") and f"{m:+.3f} ± {ci:.3f} ({n:,})" in row
    with pytest.raises(SystemExit):
        main(["--gains", str(d), str(repo / "expert.onnx"), "--steps"])  # --steps is about a run
    assert "--steps: give a run directory" in capsys.readouterr().err


def test_expert_rollout_labels_the_networks_seat_by_the_tables_own_values(tmp_path):
    # --exit-rollouts: dgteach -teacher rollout labels the decisions of --label-seats (the network's table position),
    # its playouts by the generation table with search played by the network; no worlds
    s = run_expert(tiny(tmp_path, exit_start="policies/imitate-search.onnx", exit_rollouts=1, label_seats="0", deals=1,
                        exit_iterations=2, exit_eval="random,random,random:8", tau=4.0))
    assert s["iterations"] == 2
    for i, net in ((0, "start"), (1, "exit-0")):
        d = tmp_path / "data" / f"iter-{i:03d}"
        meta = json.loads((d / "meta.json").read_text())
        assert (meta["teacher"], meta["worlds"], meta["rollouts"], meta["label_seats"]) == ("rollout", 1, 1, "0")
        assert meta["table"] == [f"policy:{net}", "search", "heuristic", "random"]
        assert meta["rollout_table"] == [f"policy:{net}", f"policy:{net}", "heuristic", "random"]
        for f in sorted(d.glob("shard-*.npz")):
            k = int(f.stem.split("-")[1])  # one game a shard: game k seats table position 0 at seat -k mod 4
            seats = np.load(f)["seat"]
            assert len(seats) > 0 and (seats == (-k) % 4).all()
    c = config_from_args(["--preset", "expert-rollout"])
    assert (c.exit_rollouts, c.label_seats, c.exit_start, c.exit_warm, c.vf_coef) == (2, "0", "policies/expert-27.onnx", True, 0.0)
    for kw in (dict(rollout_table="heuristic,heuristic,heuristic,heuristic"), dict(rollout_worlds=8)):
        with pytest.raises(ValueError, match="--rollout-policy: give --exit-rollouts too"):
            run_expert(tiny(tmp_path / "b", **kw))
        assert not (tmp_path / "b").exists()


def test_expert_rollout_labels_both_orders_of_the_table(tmp_path):
    # --teach-orders 2 (dgteach -orders 2): of every 8 games at 4 players, the last 4 seat the table in its reversed
    # order, so the labelled position 0 sits at seat k mod 4 of game k there (at -k mod 4 in the first 4)
    s = run_expert(tiny(tmp_path, exit_start="policies/imitate-search.onnx", exit_rollouts=1, label_seats="0", deals=1,
                        teach_table="policy:{policy},heuristic,heuristic,random",
                        rollout_table="policy:{policy},heuristic,heuristic,random", teach_orders=2,
                        exit_iterations=1, exit_games0=8, exit_eval="", tau=4.0))
    assert s["iterations"] == 1
    d = tmp_path / "data" / "iter-000"
    assert json.loads((d / "meta.json").read_text())["orders"] == 2
    fs = sorted(d.glob("shard-*.npz"))
    assert len(fs) == 8
    for f in fs:
        k = int(f.stem.split("-")[1])
        seats = np.load(f)["seat"]
        assert len(seats) > 0 and (seats == (k % 4 if k % 8 >= 4 else (-k) % 4)).all()
    with pytest.raises(ValueError, match="--teach-orders 3: want 1"):  # before anything is written
        run_expert(tiny(tmp_path / "b", exit_start="policies/imitate-search.onnx", exit_rollouts=1, teach_orders=3))
    assert not (tmp_path / "b").exists()


def test_expert_rollout_with_a_cheaper_search_in_its_seat(tmp_path):
    # --rollout-table with search itself in the rollouts, and --rollout-worlds its worlds (dgteach -rollout-worlds)
    s = run_expert(tiny(tmp_path, exit_start="policies/imitate-search.onnx", exit_rollouts=1, label_seats="0", deals=1,
                        rollout_table="policy:{policy},search,heuristic,random", rollout_worlds=2,
                        exit_iterations=1, exit_eval="random,random,random:8", tau=4.0))
    assert s["iterations"] == 1
    meta = json.loads((tmp_path / "data" / "iter-000" / "meta.json").read_text())
    assert meta["rollout_table"] == ["policy:start", "search", "heuristic", "random"]
    assert (meta["rollout_worlds"], meta["rollouts"], meta["worlds"]) == (2, 1, 1)
    with pytest.raises(ValueError, match="--rollout-worlds -1: must be >= 0"):  # before anything is written
        run_expert(tiny(tmp_path / "d", exit_start="policies/imitate-search.onnx", exit_rollouts=1, rollout_worlds=-1))
    assert not (tmp_path / "d").exists()
    with pytest.raises(RuntimeError, match="-rollout-worlds 2: no bot"):  # dgteach refuses a table with no search
        run_expert(tiny(tmp_path / "c", exit_start="policies/imitate-search.onnx", exit_rollouts=1, deals=1,
                        rollout_table="policy:{policy},heuristic,heuristic,random", rollout_worlds=2))


def test_expert_top_two_labels_in_sampled_worlds_fit_a_later_card_network(tmp_path):
    # --rollout-sampled --rollout-top 2 --rollout-policy: dgteach values only the two cards the table's network ranks
    # highest, in worlds drawn from what the seat knows; --exit-policies puts that network in the run's policies;
    # the fit centres the two values (the other legal cards 0) and, with --exit-skip-leads, trains on no lead
    from dgenv.expert import _load_window

    repo = Path(__file__).resolve().parents[2]
    cfg = tiny(tmp_path, players=3, deals=1, exit_start=str(repo / "policies" / "expert-p3.onnx"), exit_warm=True, exit_prior=True,
               exit_policies=(str(repo / "policies" / "expert-p3-c3.onnx"),), teach_table="policy:expert-p3-c3,heuristic,heuristic",
               exit_rollouts=2, rollout_sampled=True, rollout_top=2, rollout_policy="expert-p3-c3",
               rollout_table="policy:{policy},policy:{policy},heuristic", label_seats="0", teach_eps=0.0, q_mse=0.0,
               exit_skip_leads=True, exit_iterations=1, exit_games0=4, exit_eval="")
    s = run_expert(cfg)
    assert s["iterations"] == 1 and (tmp_path / "policies" / "expert-p3-c3.onnx").exists()
    d = tmp_path / "data" / "iter-000"
    meta = json.loads((d / "meta.json").read_text())
    assert (meta["rollout_top"], meta["rollout_policy"], meta["rollout_sampled"]) == (2, "expert-p3-c3", True)
    assert meta["rollout_table"] == ["policy:start", "policy:start", "heuristic"]
    z = [np.load(f) for f in sorted(d.glob("shard-*.npz"))]
    valued = np.concatenate([x["valued"] for x in z]).astype(bool)
    obs = np.concatenate([x["obs"] for x in z])
    assert (valued.sum(1) == 2).all()
    o = {x["name"]: x["offset"] for x in meta["obs"]["sections"]}["trick_position"]
    later = int((obs[:, o] == 0).sum())
    assert 0 < later < len(obs)
    train = json.loads((tmp_path / "iter-000" / "train.json").read_text())
    assert train["records"] + train["held_out"] == later
    _, tr, va = _load_window(cfg, tmp_path, 0)
    q = torch.cat([tr["q"], va["q"]])
    assert (torch.cat([tr["obs"], va["obs"]])[:, o] == 0).all()
    assert ((q != 0).sum(1) <= 2).all() and q.sum(1).abs().max() < 1e-4  # the two values centred, 0 elsewhere
    for kw, why in [(dict(rollout_top=2), "give both"), (dict(rollout_policy="x"), "give both"),
                    (dict(rollout_top=2, rollout_policy="x", q_mse=0.05), "need every legal card's value"),
                    (dict(exit_policies=("policies/nosuch.onnx",)), "no such policy file"),
                    (dict(rollout_sampled=True, exit_rollouts=0), "give --exit-rollouts too")]:
        with pytest.raises(ValueError, match=why):
            run_expert(tiny(tmp_path / "bad", **{"exit_rollouts": 1, "q_mse": 0.0, **kw}))
    assert not (tmp_path / "bad").exists()  # refused before anything is written
    c = config_from_args(["--preset", "expert-p3-later"])
    assert (c.players, c.exit_start, c.exit_policies, c.teach_table, c.rollout_table) == (
        3, "policies/expert-p3.onnx", ("policies/expert-p3-c3.onnx",), "policy:expert-p3-c3,search,heuristic",
        "policy:{policy},policy:{policy},heuristic")
    assert (c.exit_rollouts, c.rollout_sampled, c.rollout_top, c.rollout_policy, c.exit_skip_leads, c.q_mse, c.tau) == (
        16, True, 2, "expert-p3-c3", True, 0.0, 1.0)
    # the same step at 5 and 6 players: the commands of docs/training.md "Session 65" and "Session 67" as presets,
    # differing from expert-p3-later only in the player count's networks, table, seed, games and tau
    base = asdict(c)
    for name, n, seed, games, table in [
            ("expert-p5-later", 5, 66, 4800, "heuristic,random,heuristic"),
            ("expert-p6-later", 6, 69, 3600, "heuristic,random,heuristic,random")]:
        p = config_from_args(["--preset", name])
        diff = {k: v for k, v in asdict(p).items() if base[k] != v}
        assert diff == dict(
            name=name, players=n, teach_seed=seed, exit_games=games, tau=3.0,
            exit_start=f"policies/expert-p{n}.onnx", exit_policies=(f"policies/expert-p{n}-c3.onnx",),
            teach_table=f"policy:expert-p{n}-c3,search,{table}", rollout_policy=f"expert-p{n}-c3",
            rollout_table=f"policy:{{policy}},policy:{{policy}},{table}")
        assert all(Path(__file__).resolve().parents[2].joinpath(f).is_file() for f in (p.exit_start, *p.exit_policies))


def test_an_averaged_prior_is_fitted_on_and_bad_views_are_refused(tmp_path):
    # --exit-prior-views 3: the targets improve the start averaged over 3 colour renamings (the file
    # export --colour-average 3 writes: test_colour_average.py); the fit runs and reports how often it keeps that prior's choice
    start = Path(__file__).resolve().parents[2] / "policies" / "expert-p4.onnx"
    a = tmp_path / "a"
    s = run_expert(tiny(a, exit_iterations=1, exit_start=str(start), exit_warm=True, exit_prior=True, exit_prior_views=3))
    assert s["iterations"] == 1 and Path(s["policy"]).name == "exit-0.onnx"
    hist = torch.load(str(a / "iter-000" / "state.pt"), weights_only=True)["hist"]
    assert hist and all(0.0 <= h["val_keep"] <= 1.0 for h in hist)
    for kw, why in [(dict(exit_prior=True, exit_prior_views=6), "want 1 to 5"),
                    (dict(exit_prior=True, exit_prior_views=0), "want 1 to 5"),
                    (dict(exit_prior=False, exit_prior_views=3), "give --exit-prior true")]:
        with pytest.raises(ValueError, match=why):
            run_expert(tiny(tmp_path / "bad", exit_start=str(start), exit_warm=True, **kw))
    assert not (tmp_path / "bad").exists()  # refused before anything is written
