"""The torch policy/value network trained by :mod:`dgenv.train`, its checkpoints and ONNX export.

:class:`PolicyNet` is an MLP over the float32 observation: ``obs * scale`` (a
constant per element, 1/max of its section, so counts and totals sit in
[0, 1]), hidden dense layers with ReLU or Tanh, a policy head of 90 logits and
a value head on the same trunk. Masking happens outside: illegal logits are
set to a large negative before the softmax (:func:`masked_logits`).

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

from .policy import NUM_ACTIONS, Layer, PolicyMeta, build_onnx, save_onnx

__all__ = ["PolicyNet", "CardFeatures", "card_features", "masked_logits", "obs_scale", "save_checkpoint", "load_checkpoint", "export_onnx", "NEG"]

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
    """

    def __init__(
        self,
        obs_size: int,
        hidden: Sequence[int] = (256, 256),
        activation: str = "relu",
        scale: Optional[np.ndarray] = None,
        num_actions: int = NUM_ACTIONS,
        features: Optional[Mapping[str, Any]] = None,
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

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits [B, num_actions], value [B])`` of raw float32 observations ``[B, D]``."""
        h = self.trunk(self._input(obs))
        return self.pi(h), self.v(h).squeeze(-1)

    def _input(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs * self.scale
        return x if self.feat is None else torch.cat([x, self.feat(obs)], dim=1)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Unmasked logits only (what the ONNX export computes)."""
        return self.pi(self.trunk(self._input(obs)))

    def config(self) -> dict[str, Any]:
        """Constructor arguments (without the scale, which is a buffer)."""
        return {
            "obs_size": self.obs_size,
            "hidden": list(self.hidden),
            "activation": self.activation,
            "num_actions": self.num_actions,
            "features": self.features_cfg,
        }

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


def _fold(net: PolicyNet, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First layer over ``[obs * scale, F obs + f0]`` as one layer over the raw obs (float64 sums)."""
    D = net.obs_size
    with torch.no_grad():
        probe = torch.cat([torch.zeros(1, D), torch.eye(D)])
        f = net.feat(probe).double().numpy()  # type: ignore[misc]
    f0 = f[0]
    F = (f[1:] - f0).T  # [E, D]
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
    net = PolicyNet(cfg["obs_size"], cfg["hidden"], cfg["activation"], num_actions=cfg["num_actions"],
                    features=cfg.get("features"))
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
    model = build_onnx(net.layers(), meta, None if np.all(scale == 1) else scale)
    return save_onnx(model, path)
