"""dgenv.model.CardHead: an action-conditioned head, one small MLP shared by every card.

Its card features are counted here again from the positions themselves; a
network with a head exports to the policy format's operators, and torch,
numpy's reference forward, the colour average and the Go runtime the server
serves it with agree; a head added to a trained network changes none of its
logits until it is fitted; ``--card-head`` fits one in an expert run.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dgenv  # noqa: E402
from dgenv import _wire  # noqa: E402
from dgenv import policy as pol  # noqa: E402
from dgenv.model import CardHead, PolicyNet, card_head_config, export_onnx, load_checkpoint, save_checkpoint  # noqa: E402

from conftest import random_legal, random_positions  # noqa: E402


def _positions(players: int, n: int = 32, steps: int = 30):
    return random_positions(players, n, steps, seed=5, rng_seed=2)


def _net(spec, units: int = 8, seed: int = 0) -> PolicyNet:
    """A small network with a card head whose weights are all random (w2 too: the head counts)."""
    torch.manual_seed(seed)
    net = PolicyNet(spec.obs.size, (32, 24), card_head=card_head_config(spec, units))
    with torch.no_grad():
        for p in net.head.parameters():
            p.normal_(0.0, 0.5)
    return net.eval()


@pytest.mark.parametrize("players", [3, 5])
def test_card_features_count_the_cards(players):
    spec, obs, _ = _positions(players, n=8, steps=40)
    cfg = card_head_config(spec, 4)
    assert cfg["players"] == players and cfg["deck_values"] == 3 * players
    head = CardHead(**cfg, trunk=1)
    f = head.features(torch.from_numpy(obs)).numpy()  # [N, 90, nf]
    sec = {s.name: s for s in spec.obs.sections}

    def plane(name):
        s = sec[name]
        return obs[:, s.offset : s.offset + s.size].reshape(len(obs), *s.shape)

    hand, trick, prizes = plane("hand"), plane("current_trick"), plane("prizes")
    voids, lead = plane("voids"), plane("lead_colour")
    in_deck = np.array([(a % 18) + 1 <= 3 * players for a in range(90)])
    unseen = in_deck[None] - hand - trick.sum(1) - prizes.sum(1)
    assert unseen.min() == 0 and unseen.max() == 1  # every card in play is in one place
    value, colour = np.arange(90) % 18 + 1, np.arange(90) // 18
    P = players
    for r in range(0, len(obs), 37):
        for a in range(90):
            lower, same, higher = value < value[a], value == value[a], value > value[a]
            mine = colour == colour[a]
            want = [
                unseen[r][lower].sum() / 16, unseen[r][same].sum() / 4, unseen[r][higher].sum() / 16,
                unseen[r][lower & mine].sum() / 8, unseen[r][higher & mine].sum() / 8,
                *(trick[r].sum(0)[m].sum() / 2 for m in (lower, same, higher, lower & mine, higher & mine)),
                hand[r][lower].sum() / 8, hand[r][same].sum() / 4, hand[r][higher].sum() / 8,
                hand[r][lower & mine].sum() / 8, hand[r][higher & mine].sum() / 8,
                hand[r][mine].sum() / 4, (hand[r] * value)[mine].sum() / 32,
                unseen[r][mine].sum() / 8, (unseen[r] * value)[mine].sum() / 64,
                trick[r].sum(0)[mine].sum(), (trick[r].sum(0) * value)[mine].sum() / 18,
                lead[r][colour[a]],
                *(prizes[r][p][mine].sum() / 4 for p in range(P)),
                *((prizes[r][p] * value)[mine].sum() / 32 for p in range(P)),
                *(voids[r][p][colour[a]] for p in range(P)),
                value[a] / 18, float(in_deck[a]),
            ]
            np.testing.assert_allclose(f[r, a], want, rtol=0, atol=1e-6, err_msg=f"row {r} card {a}")


def test_export_is_the_network_and_the_colour_average_of_it(tmp_path):
    spec, obs, mask = _positions(3)
    net = _net(spec)
    meta = pol.PolicyMeta.from_spec(spec)
    path = export_onnx(net, meta, tmp_path / "h.onnx")
    pol.check_policy(path)
    with torch.no_grad():
        want = net.logits(torch.from_numpy(obs)).numpy()
    got = pol.onnx_forward(path, obs)
    # the cards out of play (values above 9 at 3 players) have no units: never legal, so never compared
    np.testing.assert_allclose(got[mask], want[mask], rtol=0, atol=1e-4)
    assert np.abs(got[mask] - net.pi(net.trunk(net._input(torch.from_numpy(obs)))).detach().numpy()[mask]).max() > 0.1
    ops = {n.op_type for n in pol.load_onnx(path).graph.node}
    assert ops <= pol.ALLOWED_OPS and "Gather" in ops
    # the colour average of a network with a head: the mean over the renamed positions
    po, pa = pol.colour_permutations(meta.obs_layout, meta.obs_size)
    from itertools import permutations

    order = list(permutations(range(5)))
    avg = pol.onnx_forward(pol.colour_average(path, 3), obs)
    mean = sum(pol.onnx_forward(path, obs[:, po[j]])[:, np.argsort(pa[j])]
               for j in (order.index(tuple((c + s) % 5 for c in range(5))) for s in range(3))) / 3
    np.testing.assert_allclose(avg, mean, rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="already averaged"):
        pol.colour_average(pol.colour_average(path, 2), 2)


def test_served_by_the_go_runtime(tmp_path):
    """The server loads a network with a head (and its colour average); its logits are numpy's on every card."""
    spec, obs, mask = _positions(3, n=16, steps=14)
    pdir = tmp_path / "pols"
    pdir.mkdir()
    path = export_onnx(_net(spec, units=16, seed=3), pol.PolicyMeta.from_spec(spec), pdir / "h.onnx")
    pol.save_onnx(pol.colour_average(path, 3), pdir / "hc3.onnx")
    with dgenv.serve(args=["--policies", str(pdir)]) as srv:
        for name in ("h", "hc3"):
            ans = srv._request("POST", f"/v1/policies/{name}/act",
                               {"obs": _wire.encode_tensor(np.ascontiguousarray(obs.astype(np.uint8))),
                                "mask": _wire.encode_tensor(np.ascontiguousarray(mask.view(np.uint8))), "logits": True})
            got = _wire.decode_tensor(ans["logits"]).astype(np.float32).reshape(len(obs), 90)
            np.testing.assert_allclose(got, pol.onnx_forward(pdir / f"{name}.onnx", obs), rtol=0, atol=1e-4)
            acts = np.asarray(_wire.decode_tensor(ans["actions"])).reshape(-1)
            assert mask[np.arange(len(acts)), acts].all()


def test_a_head_added_to_a_trained_network_keeps_its_logits_and_round_trips(tmp_path):
    spec, obs, _ = _positions(3, n=8, steps=10)
    torch.manual_seed(1)
    base = PolicyNet(spec.obs.size, (32, 24)).eval()
    net = base.with_card_head(card_head_config(spec, 8)).eval()
    x = torch.from_numpy(obs)
    with torch.no_grad():
        assert torch.equal(net.logits(x), base.logits(x))
    with pytest.raises(ValueError, match="already"):
        net.with_card_head(card_head_config(spec, 8))
    with torch.no_grad():
        net.head.w2.fill_(0.3)
    save_checkpoint(tmp_path / "c.pt", net, pol.PolicyMeta.from_spec(spec))
    back, _, _ = load_checkpoint(tmp_path / "c.pt")
    assert back.config()["card_head"] == net.config()["card_head"]
    with torch.no_grad():
        assert torch.equal(back.logits(x), net.logits(x))


def test_card_head_config_needs_the_card_sections():
    class NoCards:
        class obs:
            @staticmethod
            def section(name):
                raise KeyError(name)

    assert card_head_config(NoCards, 8) is None
    assert card_head_config([{"name": "board", "offset": 0, "shape": [64]}], 8) is None


def test_expert_run_fits_a_card_head_and_a_bias_model_with_one(tmp_path):
    from test_expert import tiny, weights

    from dgenv.expert import run_expert

    run_expert(tiny(tmp_path / "a", exit_iterations=2, card_head=4, bias_head=6, bias_mix=1.0, ret_mix=0.5, exit_eval=""))
    for i in (0, 1):
        w = weights(tmp_path / "a", i)
        assert float(w["head.w2"].abs().sum()) > 0  # fitted, not left at zero
        bias, _, _ = load_checkpoint(tmp_path / "a" / f"iter-{i:03d}" / "bias.pt")
        # the bias model has its own head (6 units, not the policy's 4), fitted from zero
        assert bias.head is not None and bias.head.units == 6 and float(bias.head.w2.detach().abs().sum()) > 0
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert cfg["card_head"] == 4 and cfg["bias_head"] == 6
    net, meta, _ = load_checkpoint(tmp_path / "a" / "iter-001" / "final.pt")
    assert net.head is not None and net.config()["card_head"]["units"] == 4
    # the run's exported policy is the network with its head
    spec_obs = np.zeros((1, meta.obs_size), np.float32)
    with torch.no_grad():
        want = net.logits(torch.from_numpy(spec_obs)).numpy()
    got = pol.onnx_forward(tmp_path / "a" / "policies" / "exit-1.onnx", spec_obs)
    live = np.array([(a % 18) + 1 <= 3 * meta.players for a in range(90)])
    np.testing.assert_allclose(got[:, live], want[:, live], rtol=0, atol=1e-4)


def test_a_card_head_learns_at_its_own_rate_in_the_fit_and_in_the_bias_model():
    from dgenv.expert import _param_groups, fit_bias

    spec, obs, mask = _positions(3, n=8, steps=20)
    torch.manual_seed(4)
    net = PolicyNet(spec.obs.size, (32, 24)).eval()
    groups = _param_groups(net.with_card_head(card_head_config(spec, 8)), 1e-3, 30.0)
    assert [g["lr"] for g in groups] == [1e-3, 3e-2] and [g["lr_mult"] for g in groups] == [1.0, 30.0]
    rng = np.random.default_rng(0)
    t = {"obs": torch.from_numpy(obs), "mask": torch.from_numpy(mask),
         "q": torch.from_numpy(rng.normal(size=mask.shape).astype(np.float32)),
         "played": torch.from_numpy(random_legal(mask, rng)),
         "ret": torch.from_numpy(rng.normal(size=len(obs)).astype(np.float32) * 5)}
    w2 = {}
    for head_lr in (1.0, 30.0):
        bias = fit_bias(net, t, seed=1, batch_size=32, device=torch.device("cpu"), epochs=1,
                        head=card_head_config(spec, 8), head_lr=head_lr)
        w2[head_lr] = float(bias.head.w2.detach().abs().mean())
    assert w2[30.0] > 5 * w2[1.0] > 0


def test_card_head_flags_are_refused_where_they_would_be_ignored(tmp_path):
    from test_expert import tiny, tiny_duel

    from dgenv.expert import run_expert

    for name, cfg, why in [
        ("duel", tiny_duel(tmp_path / "duel", card_head=8), r"--card-head, --bias-head: the card game's only \(duel"),
        ("duelb", tiny_duel(tmp_path / "duelb", bias_head=8), r"the card game's only"),
        ("nomix", tiny(tmp_path / "nomix", bias_head=8), r"--bias-head: the head of --bias-mix's bias model; give --bias-mix"),
        ("neg", tiny(tmp_path / "neg", card_head=-1), r"--card-head -1, --bias-head 0: units, want >= 0"),
    ]:
        with pytest.raises(ValueError, match=why):
            run_expert(cfg)
        assert not (tmp_path / name).exists(), f"{name}: refused after writing"  # refused before anything is written
