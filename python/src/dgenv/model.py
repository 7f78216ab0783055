"""The torch policy/value network trained by :mod:`dgenv.train`, its checkpoints and ONNX export.

:class:`PolicyNet` is an MLP over the float32 observation: ``obs * scale`` (a
constant per element, 1/max of its section, so counts and totals sit in
[0, 1]), hidden dense layers with ReLU or Tanh, a policy head of 90 logits and
a value head on the same trunk, optionally with :class:`CardHead` (one small MLP
shared by every card over the card's own features) added to the logits. Masking
happens outside: illegal logits are set to a large negative before the softmax
(:func:`masked_logits`).

Checkpoints are ``torch.save`` dicts of tensors and plain values, read back with
``torch.load(weights_only=True)`` (no arbitrary objects). They are for
resuming training; what is served is the ONNX file of :func:`export_onnx`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn

from .policy import NUM_ACTIONS, CardHeadArrays, Layer, PolicyMeta, build_onnx, save_onnx

__all__ = ["PolicyNet", "CardFeatures", "CardHead", "card_features", "card_head_config", "masked_logits", "obs_scale", "save_checkpoint", "load_checkpoint", "export_onnx", "NEG"]

NEG = -1e9  # what illegal logits become before the softmax


def obs_scale(sections: Sequence[Any], size: int) -> np.ndarray:
    """Per-element ``1 / min(max, 16)`` of each observation section (1 where max <= 1).

    Counts (prize counts, tricks left) land in [0, 1]; the deal counters and
    the two bytes of the totals, whose declared maxima are far above what a
    normal game reaches, land in about [0, 4] instead of near 0.

    Args:
        sections: :class:`~dgenv.client.Section` objects or dicts with
            ``offset``, ``shape`` and ``max``.
        size: D.
    """
    s = np.ones(size, dtype=np.float32)
    for sec in sections:
        get: Callable[..., Any] = sec.get if isinstance(sec, Mapping) else lambda k, d=None, _s=sec: getattr(_s, k, d)
        off = int(get("offset"))
        n = int(np.prod(get("shape")))
        mx = float(get("max", 1) or 1)
        if mx > 1:
            s[off : off + n] = 1.0 / min(mx, 16.0)
    return s


class CardFeatures(nn.Module):
    vals: torch.Tensor  # buffers (register_buffer), typed for mypy
    deck: torch.Tensor

    """Affine card features computed from the raw observation (optional network input).

    Every feature is linear in the observation (plus a constant), so a first
    dense layer over ``[obs * scale, features(obs)]`` folds exactly into one
    ``Gemm`` over the raw observation at export time (:meth:`PolicyNet.layers`):
    the ONNX graph and its format do not change. They give the network, without
    having to discover it card by card, what the rules are about: the unseen
    cards (deck less hand, prize piles and trick), how many unseen and trick
    cards lie below and above each value, per-colour counts and value sums of
    the hand, the unseen cards and each prize pile, and the value of each card
    in the trick.

    Args:
        players: P.
        offsets: observation offsets of the ``hand``, ``current_trick`` and ``prizes`` sections.
        colours: C, the card colours (the last dimension of ``prize_counts``).
        values: V, the values of a colour (``hand``'s size / C).
        deck_values: the values 1..deck_values of each colour in play (the
            ``max`` of ``prize_counts``: every card of a colour taken by one seat).
        The last three default to the card game's layout of checkpoints written
        before they were recorded (5 colours of 18 values, 3P in play);
        :func:`card_features` reads them from a session's spec.
    """

    def __init__(
        self,
        players: int,
        offsets: Mapping[str, int],
        colours: Optional[int] = None,
        values: Optional[int] = None,
        deck_values: Optional[int] = None,
    ) -> None:
        super().__init__()
        self.P = int(players)
        self.off = {k: int(offsets[k]) for k in ("hand", "current_trick", "prizes")}
        self.C = int(colours) if colours is not None else 5
        self.V = int(values) if values is not None else 18
        self.A = self.C * self.V
        in_play = int(deck_values) if deck_values is not None else 3 * self.P
        vals = torch.arange(1, self.V + 1, dtype=torch.float32)
        self.register_buffer("vals", vals)
        self.register_buffer("deck", (vals <= in_play).float().expand(self.C, self.V).clone())
        self.size = self.A + 6 * self.V + 4 * self.C + self.P * self.C + self.P

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, P, o, A, C, V = x.shape[0], self.P, self.off, self.A, self.C, self.V
        H = x[:, o["hand"] : o["hand"] + A].reshape(B, C, V)
        T = x[:, o["current_trick"] : o["current_trick"] + P * A].reshape(B, P, C, V)
        Z = x[:, o["prizes"] : o["prizes"] + P * A].reshape(B, P, C, V)
        U = self.deck - H - T.sum(1) - Z.sum(1)
        u_v, t_v = U.sum(1), T.sum((1, 2))  # per value, any colour
        u_c, t_c = u_v.cumsum(1), t_v.cumsum(1)
        u_lt, u_gt = u_c - u_v, u_c[:, -1:] - u_c
        t_lt, t_gt = t_c - t_v, t_c[:, -1:] - t_c
        v = self.vals
        return torch.cat(
            [
                U.reshape(B, A),
                u_v / 4, u_lt / 16, u_gt / 16, t_v, t_lt, t_gt,
                H.sum(2) / 4, (H * v).sum(2) / 32, U.sum(2) / 8, (U * v).sum(2) / 64,
                ((Z * v).sum(3) / 32).reshape(B, P * C),
                (T * v).sum((2, 3)) / 18,
            ],
            dim=1,
        )


def card_features(spec: Any) -> Optional[dict[str, Any]]:
    """:class:`CardFeatures`' configuration for a session's :class:`~dgenv.Spec`, read from its
    sections; None when the game's observation lacks the sections it needs."""
    try:
        hand, trick, prizes, counts = (spec.obs.section(n) for n in ("hand", "current_trick", "prizes", "prize_counts"))
    except KeyError:
        return None
    colours = int(counts.shape[-1])
    if colours <= 0 or hand.size % colours:
        return None
    return {
        "players": int(trick.shape[0]),
        "offsets": {"hand": hand.offset, "current_trick": trick.offset, "prizes": prizes.offset},
        "colours": colours,
        "values": hand.size // colours,
        "deck_values": int(counts.max),
    }


_HEAD_SECTIONS = ("hand", "current_trick", "prizes", "voids", "lead_colour")


def card_head_config(spec: Any, units: int) -> Optional[dict[str, Any]]:
    """:class:`CardHead`'s configuration (``units`` hidden units) for a session's
    :class:`~dgenv.Spec`, or for the ``obs`` sections of a teach file's meta (dicts);
    None when the game's observation lacks the sections it needs."""
    if isinstance(spec, (list, tuple)):
        secs: dict[str, Any] = {str(s["name"]): s for s in spec}
        get: Callable[[str, str], Any] = lambda n, k: secs[n].get(k)  # noqa: E731
    else:
        get = lambda n, k: getattr(spec.obs.section(n), k, None)  # noqa: E731
    try:
        offsets = {n: int(get(n, "offset")) for n in _HEAD_SECTIONS}
        players, colours = (int(x) for x in get("voids", "shape"))
        hand = int(np.prod(get("hand", "shape")))
        deck = int(get("prize_counts", "max") or 0)
    except (KeyError, TypeError, ValueError):
        return None
    if colours <= 0 or hand % colours:
        return None
    return {"units": int(units), "players": players, "offsets": offsets, "colours": colours,
            "values": hand // colours, "deck_values": deck or 3 * players}


class CardHead(nn.Module):
    """An action-conditioned head: one small MLP shared by every card, added to the policy's logits.

    ``logit_a += w2 . relu(Wf f_a + E[value(a)] + Wp h + b) + b2[value(a)]``, where ``h``
    is the trunk's last hidden layer and ``f_a`` the card's own features: how many unseen,
    trick and own-hand cards lie below, at and above its value (all colours, and its
    colour), its colour's counts and value sums in the hand, among the unseen cards, in
    the trick and in each seat's prize pile, each seat's void in its colour, and whether
    its colour was led. Every feature is linear in the observation, so the head exports
    exactly to the policy format's operators (:meth:`arrays`): one ``Gemm`` from the
    observation to every card's hidden units, one from ``h`` to the shared part, a
    ``Gather`` that repeats it for every card, ``Add``, ``Relu`` and a block ``Gemm`` to
    the 90 logits. ``w2`` starts at zero: a head added to a trained network leaves its
    logits as they were.

    Args:
        units: hidden units of the shared MLP.
        players: P.
        offsets: observation offsets of ``hand``, ``current_trick``, ``prizes``, ``voids``
            and ``lead_colour``.
        colours, values: C and V (the card id is ``colour * V + value - 1``).
        deck_values: the values 1..deck_values of each colour in play.
        trunk: width of the trunk's last hidden layer.
    """

    vals: torch.Tensor  # buffers, typed for mypy
    deck: torch.Tensor
    vidx: torch.Tensor

    def __init__(self, units: int, players: int, offsets: Mapping[str, int], colours: int, values: int,
                 deck_values: int, trunk: int) -> None:
        super().__init__()
        self.units, self.P, self.C, self.V = int(units), int(players), int(colours), int(values)
        self.A = self.C * self.V
        self.off = {k: int(offsets[k]) for k in _HEAD_SECTIONS}
        vals = torch.arange(1, self.V + 1, dtype=torch.float32)
        self.register_buffer("vals", vals)
        self.register_buffer("deck", (vals <= int(deck_values)).float().expand(self.C, self.V).clone())
        self.register_buffer("vidx", torch.arange(self.A) % self.V)
        self.nf = 24 + 3 * self.P
        self.wf = nn.Linear(self.nf, self.units)
        self.emb = nn.Parameter(torch.zeros(self.V, self.units))
        self.wp = nn.Linear(int(trunk), self.units, bias=False)
        nn.init.normal_(self.wp.weight, std=0.01)
        self.w2 = nn.Parameter(torch.zeros(self.units))
        self.b2 = nn.Parameter(torch.zeros(self.V))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, A, nf]``: every card's features from raw observations ``[B, D]``."""
        B, P, C, V, A, o = x.shape[0], self.P, self.C, self.V, self.A, self.off
        H = x[:, o["hand"] : o["hand"] + A].reshape(B, C, V)
        T = x[:, o["current_trick"] : o["current_trick"] + P * A].reshape(B, P, C, V)
        Z = x[:, o["prizes"] : o["prizes"] + P * A].reshape(B, P, C, V)
        voids = x[:, o["voids"] : o["voids"] + P * C].reshape(B, P, C)
        lead = x[:, o["lead_colour"] : o["lead_colour"] + C]
        Tc = T.sum(1)
        U = self.deck - H - Tc - Z.sum(1)
        v = self.vals

        def below_at_above(M: torch.Tensor) -> list[torch.Tensor]:  # M [B, C, V] -> 3 x [B, C, V] (all colours) + 2 (its colour)
            by_v = M.sum(1)
            cum = by_v.cumsum(1)
            lt, gt = cum - by_v, cum[:, -1:] - cum
            ccum = M.cumsum(2)
            clt, cgt = ccum - M, ccum[:, :, -1:] - ccum
            return [t[:, None, :].expand(B, C, V) for t in (lt, by_v, gt)] + [clt, cgt]

        def per_colour(t: torch.Tensor) -> torch.Tensor:  # [B, C] -> [B, C, V]
            return t[:, :, None].expand(B, C, V)

        fs = [f / s for f, s in zip(below_at_above(U), (16, 4, 16, 8, 8))]
        fs += [f / s for f, s in zip(below_at_above(Tc), (2, 2, 2, 2, 2))]
        fs += [f / s for f, s in zip(below_at_above(H), (8, 4, 8, 8, 8))]
        fs += [per_colour(H.sum(2) / 4), per_colour((H * v).sum(2) / 32), per_colour(U.sum(2) / 8),
               per_colour((U * v).sum(2) / 64), per_colour(Tc.sum(2)), per_colour((Tc * v).sum(2) / 18),
               per_colour(lead)]
        fs += [per_colour(Z[:, p].sum(2) / 4) for p in range(P)]
        fs += [per_colour((Z[:, p] * v).sum(2) / 32) for p in range(P)]
        fs += [per_colour(voids[:, p]) for p in range(P)]
        fs += [v.expand(B, C, V) / V, self.deck.expand(B, C, V)]
        return torch.stack(fs, dim=3).reshape(B, A, self.nf)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """``[B, A]`` logits to add, from raw observations ``x`` and the trunk's last layer ``h``."""
        u = self.wf(self.features(x)) + self.emb[self.vidx] + self.wp(h)[:, None, :]
        return torch.relu(u) @ self.w2 + self.b2[self.vidx]

    def arrays(self, obs_size: int) -> CardHeadArrays:
        """The head as the export's constants (:class:`~dgenv.policy.CardHeadArrays`): the
        features' affine map folded into the first layer by probing it with the zero
        observation and each unit vector (float64 sums, stored float32)."""
        D, Hn = int(obs_size), self.units
        f0, lin = _affine(self.features, D)  # [A, nf], [D, A, nf]
        with torch.no_grad():
            wf = self.wf.weight.double().numpy()  # [H, nf]
            cards = np.flatnonzero(self.deck.reshape(self.A).numpy() > 0)  # the others are never legal
            f0, lin = f0[cards], lin[:, cards]
            g_w = np.einsum("dak,jk->ajd", lin, wf).reshape(cards.size * Hn, D)
            emb = self.emb.double().numpy()[self.vidx.numpy()[cards]]  # [K, H]
            g_b = (f0 @ wf.T + self.wf.bias.double().numpy() + emb).reshape(cards.size * Hn)
            return CardHeadArrays(
                cards=cards.astype(np.int64), g_weight=g_w.astype(np.float32), g_bias=g_b.astype(np.float32),
                p_weight=self.wp.weight.numpy().astype(np.float32), w2=self.w2.numpy().astype(np.float32),
                b2=self.b2.numpy()[self.vidx.numpy()].astype(np.float32))


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits with illegal actions (``mask`` False) set to a large negative."""
    return torch.where(mask, logits, torch.full_like(logits, NEG))


class PolicyNet(nn.Module):
    scale: torch.Tensor  # a buffer (register_buffer), typed for mypy
    _fold_first: Callable[..., tuple[np.ndarray, np.ndarray]]  # set below the class

    """MLP actor-critic over the observation of the seat to act.

    Args:
        obs_size: D.
        hidden: sizes of the hidden layers (e.g. ``(256, 256)``).
        activation: ``"relu"`` or ``"tanh"``.
        scale: ``[D]`` constants multiplied into the observation (default ones).
        num_actions: the spec's ``num_actions`` (90 for the card game).
        features: :func:`card_features` of the session's spec (``{"players": P, "offsets":
            {"hand": .., "current_trick": .., "prizes": ..}, "colours", "values", "deck_values"}``)
            to add :class:`CardFeatures` to the input of the first layer; None for none.
        card_head: :func:`card_head_config` (``{"units", "players", "offsets", "colours",
            "values", "deck_values"}``) to add a :class:`CardHead` to the logits; None for none.
    """

    def __init__(
        self,
        obs_size: int,
        hidden: Sequence[int] = (256, 256),
        activation: str = "relu",
        scale: Optional[np.ndarray] = None,
        num_actions: int = NUM_ACTIONS,
        features: Optional[Mapping[str, Any]] = None,
        card_head: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__()
        if activation not in ("relu", "tanh"):
            raise ValueError(f"activation {activation!r}: want relu or tanh")
        self.obs_size = int(obs_size)
        self.hidden = tuple(int(h) for h in hidden)
        self.activation = activation
        self.num_actions = int(num_actions)
        sc = np.ones(obs_size, np.float32) if scale is None else np.asarray(scale, np.float32).reshape(obs_size)
        self.register_buffer("scale", torch.from_numpy(sc.copy()))
        self.features_cfg: Optional[dict[str, Any]] = None if features is None else {
            "players": int(features["players"]), "offsets": {k: int(v) for k, v in features["offsets"].items()},
            **{k: int(features[k]) for k in ("colours", "values", "deck_values") if features.get(k) is not None},
        }
        self.feat = None if self.features_cfg is None else CardFeatures(**self.features_cfg)
        layers: list[nn.Module] = []
        d = self.obs_size + (0 if self.feat is None else self.feat.size)
        act = nn.ReLU if activation == "relu" else nn.Tanh
        for h in self.hidden:
            lin = nn.Linear(d, h)
            nn.init.orthogonal_(lin.weight, np.sqrt(2))
            nn.init.zeros_(lin.bias)
            layers += [lin, act()]
            d = h
        self.trunk = nn.Sequential(*layers)
        self.pi = nn.Linear(d, self.num_actions)
        nn.init.orthogonal_(self.pi.weight, 0.01)
        nn.init.zeros_(self.pi.bias)
        self.v = nn.Linear(d, 1)
        nn.init.orthogonal_(self.v.weight, 1.0)
        nn.init.zeros_(self.v.bias)
        self.card_head_cfg: Optional[dict[str, Any]] = None if card_head is None else {
            "units": int(card_head["units"]), "players": int(card_head["players"]),
            "offsets": {k: int(v) for k, v in card_head["offsets"].items()},
            **{k: int(card_head[k]) for k in ("colours", "values", "deck_values")},
        }
        self.head = None if self.card_head_cfg is None else CardHead(**self.card_head_cfg, trunk=d)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits [B, num_actions], value [B])`` of raw float32 observations ``[B, D]``."""
        h = self.trunk(self._input(obs))
        return self._logits(obs, h), self.v(h).squeeze(-1)

    def _logits(self, obs: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.pi(h) if self.head is None else self.pi(h) + self.head(obs, h)

    def _input(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs * self.scale
        return x if self.feat is None else torch.cat([x, self.feat(obs)], dim=1)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Unmasked logits only (what the ONNX export computes)."""
        return self._logits(obs, self.trunk(self._input(obs)))

    def config(self) -> dict[str, Any]:
        """Constructor arguments (without the scale, which is a buffer)."""
        return {
            "obs_size": self.obs_size,
            "hidden": list(self.hidden),
            "activation": self.activation,
            "num_actions": self.num_actions,
            "features": self.features_cfg,
            "card_head": self.card_head_cfg,
        }

    @classmethod
    def from_config(cls, c: Mapping[str, Any]) -> "PolicyNet":
        """A network of :meth:`config`'s arguments (fresh weights)."""
        return cls(c["obs_size"], c["hidden"], c["activation"], num_actions=c["num_actions"],
                   features=c.get("features"), card_head=c.get("card_head"))

    def with_card_head(self, card_head: Mapping[str, Any], replace: bool = False) -> "PolicyNet":
        """This network with a new :class:`CardHead` (its ``w2`` at zero: the same logits as
        without one); ``replace`` drops a head it has, otherwise that is an error."""
        if self.head is not None and not replace:
            raise ValueError("the network has a card head already")
        net = PolicyNet.from_config({**self.config(), "card_head": card_head})
        own = {k: v for k, v in self.state_dict().items() if not k.startswith("head.")}
        missing, unexpected = net.load_state_dict(own, strict=False)
        if unexpected or any(not k.startswith("head.") for k in missing):
            raise ValueError(f"with_card_head: weights do not carry over ({missing}, {unexpected})")
        return net

    def layers(self) -> list[Layer]:
        """The actor's dense layers as numpy :class:`~dgenv.policy.Layer` objects."""
        out = []
        lins = [m for m in self.trunk if isinstance(m, nn.Linear)]
        for i, lin in enumerate(lins):
            w = lin.weight.detach().cpu().numpy()
            b = lin.bias.detach().cpu().numpy()
            if i == 0 and self.feat is not None:
                w, b = self._fold_first(w, b)
            out.append(Layer(w, b, self.activation))
        out.append(Layer(self.pi.weight.detach().cpu().numpy(), self.pi.bias.detach().cpu().numpy(), None))
        return out


def _affine(fn: Callable[[torch.Tensor], torch.Tensor], size: int) -> tuple[np.ndarray, np.ndarray]:
    """An affine map of the observation as ``(fn(0), [fn(e_d) - fn(0) for every unit vector e_d])``
    (float64): how the features fold into the weights that read them."""
    with torch.no_grad():
        f = fn(torch.cat([torch.zeros(1, size), torch.eye(size)])).double().numpy()
    return f[0], f[1:] - f[0]


def _fold(net: PolicyNet, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First layer over ``[obs * scale, F obs + f0]`` as one layer over the raw obs (float64 sums)."""
    D = net.obs_size
    f0, lin = _affine(net.feat, D)  # type: ignore[arg-type]
    F = lin.T  # [E, D]
    w64 = w.astype(np.float64)
    wa, wb = w64[:, :D], w64[:, D:]
    weff = wa * net.scale.detach().cpu().numpy().astype(np.float64)[None, :] + wb @ F
    beff = b.astype(np.float64) + wb @ f0
    return weff.astype(np.float32), beff.astype(np.float32)


PolicyNet._fold_first = _fold


def save_checkpoint(path: Union[str, Path], net: PolicyNet, meta: PolicyMeta, extra: Optional[Mapping[str, Any]] = None) -> Path:
    """Save weights, network config and game metadata (tensors and plain values only)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    d = {
        "format": "dgenv-checkpoint-v1",
        "config": net.config(),
        "state_dict": net.state_dict(),
        "meta": meta.props(),
        "extra": dict(extra or {}),
    }
    tmp = p.with_name(p.name + ".tmp")
    torch.save(d, tmp)
    tmp.replace(p)
    return p


def load_checkpoint(path: Union[str, Path]) -> tuple[PolicyNet, PolicyMeta, dict[str, Any]]:
    """Load a checkpoint of :func:`save_checkpoint`: ``(net, meta, extra)``.

    Uses ``torch.load(weights_only=True)``: tensors and plain containers only.
    """
    d = torch.load(str(path), map_location="cpu", weights_only=True)
    if d.get("format") != "dgenv-checkpoint-v1":
        raise ValueError(f"{path}: not a dgenv checkpoint")
    cfg = d["config"]
    net = PolicyNet.from_config(cfg)
    net.load_state_dict(d["state_dict"])
    net.eval()
    return net, PolicyMeta.from_props(d["meta"]), dict(d.get("extra") or {})


def export_onnx(net: PolicyNet, meta: PolicyMeta, path: Union[str, Path], description: str = "") -> Path:
    """Write ``net``'s actor (obs -> logits) as a "dgenv policy v1" ONNX file."""
    if description:
        meta = PolicyMeta(**{**meta.__dict__, "description": description})
    scale = net.scale.detach().cpu().numpy()
    if net.feat is not None:  # the scale is folded into the first layer with the features
        scale = np.ones_like(scale)
    head = None if net.head is None else net.head.arrays(net.obs_size)
    model = build_onnx(net.layers(), meta, None if np.all(scale == 1) else scale, head=head)
    return save_onnx(model, path)
