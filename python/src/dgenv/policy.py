"""Trained policies as ONNX files ("dgenv policy v1"): build, check, run with numpy.

A policy file is what the Go server loads to play ``"opponent": "policy:<name>"``
and what :mod:`dgenv.evaluate` plays. It holds no pickle, no Python: one ONNX
graph from the raw observation to the game's unmasked logits (90 for the card
game, 117 for the duel), plus metadata.

The format, exactly:

* one graph input ``"obs"``: float32 ``[batch, D]`` (first dim symbolic), the raw
  uint8 observation of the seat to act converted to float32 (no scaling: the
  graph scales inside, with a ``Mul`` by a constant);
* one graph output ``"logits"``: float32 ``[batch, A]`` (A the game's actions), unmasked (the consumer
  sets illegal actions to -inf before argmax / softmax);
* nodes only from ``Gemm`` (alpha, beta, transA=0, transB 0 or 1), ``MatMul``,
  ``Add``, ``Mul``, ``Relu``, ``Tanh``, ``Identity``, ``Gather`` (axis 1,
  constant int32/int64 indices: a row's columns in a new order, as
  :func:`colour_average` writes, or repeated, as a card head's export
  writes: :class:`CardHeadArrays`), and ``Greater`` (of a value and a float32
  constant) read only as the condition of a ``Where`` (one policy's logits
  or another's, as :func:`split_lead` writes; the Go runtime computes only
  the branch a one-column condition takes); weights are float32
  initializers, and an initializer used by several nodes is one weight;
* ``metadata_props``: ``dgenv.format = "policy-v1"``, ``dgenv.game`` (JSON
  ``{"name", ...parameters}`` as a session's ``game`` takes it, e.g.
  ``{"name": "duel", "max_rounds": 100}``; without ``"name"``, the card game:
  ``{"players", "deals", "first_dealer"}``), ``dgenv.obs_layout`` (JSON list of
  ``{"name", "offset", "shape"}`` in the session spec's order), ``dgenv.obs_size``
  (``"D"``), ``dgenv.num_actions`` (``"A"``), ``dgenv.players`` (seats),
  optionally ``dgenv.description`` and ``dgenv.logit_scale`` (points per
  logit, :attr:`PolicyMeta.logit_scale`; 1 when absent). The loader checks the layout and the action
  count against the named game's.

This module needs ``numpy`` and ``onnx`` (the ``train`` extra), not torch.
:func:`onnx_forward` is a pure-numpy reference evaluator of such a graph, used
to check exports against torch and the Go server's inference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from .spec import DEFAULT_GAME, ObsSpec

__all__ = [
    "FORMAT",
    "ALLOWED_OPS",
    "NUM_ACTIONS",
    "PolicyMeta",
    "Layer",
    "CardHeadArrays",
    "build_onnx",
    "save_onnx",
    "load_onnx",
    "read_meta",
    "check_policy",
    "onnx_forward",
    "colour_permutations",
    "colour_views",
    "colour_average",
    "split_lead",
    "OnnxPolicy",
    "masked_argmax",
]

FORMAT = "policy-v1"
NUM_ACTIONS = 90
ALLOWED_OPS = frozenset({"Gemm", "MatMul", "Add", "Mul", "Relu", "Tanh", "Identity", "Gather", "Greater", "Where"})
OPSET = 13
IR_VERSION = 8

PathLike = Union[str, Path]


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("dgenv.policy needs the onnx package: pip install 'dgenv[train]'") from e
    return onnx


@dataclass(frozen=True)
class PolicyMeta:
    """What a policy file says about the game it plays.

    Attributes:
        players: seats per table (the card game: 3..6; the duel: 2).
        deals: the card game's deals per game (0 for other games).
        first_dealer: the card game's first dealer (0 for other games).
        obs_layout: sections as ``{"name", "offset", "shape"}`` dicts, in spec order.
        obs_size: D, elements of one observation.
        num_actions: A, the game's actions (90 for the card game).
        description: free text (may be empty).
        game: the registered game's name (``"david_goliath"``, ``"duel"``...).
        params: the parameters of a game other than the card game (the card
            game's are ``players``, ``deals`` and ``first_dealer``).
        logit_scale: points of the game's score per unit of logit
            (``dgenv.logit_scale``, written when not 1): the temperature of
            the search values the policy was fitted to (``--tau``), so that
            ``logit_scale * logit`` estimates an action's value up to a
            constant. The guided search ``search:policy:<name>`` weighs the
            logits by it.
    """

    players: int
    deals: int
    first_dealer: int
    obs_layout: tuple[Mapping[str, Any], ...]
    obs_size: int
    num_actions: int = NUM_ACTIONS
    description: str = ""
    game: str = DEFAULT_GAME
    params: Mapping[str, int] = field(default_factory=dict, compare=False)
    logit_scale: float = 1.0

    @classmethod
    def from_spec(cls, spec: Any, deals: Optional[int] = None, first_dealer: int = 0, description: str = "") -> "PolicyMeta":
        """Build from a session :class:`~dgenv.client.Spec` (or its wire dict: ``players``,
        ``num_actions``, ``obs`` and optionally ``game``). ``deals`` and ``first_dealer`` are
        the card game's (by default the session's, else as many deals as players)."""
        if isinstance(spec, Mapping):
            g = dict(spec.get("game") or {})
            game = str(g.pop("name", "") or DEFAULT_GAME)
            players, num_actions = int(spec["players"]), int(spec["num_actions"])
            obs = ObsSpec.from_wire(spec["obs"], num_actions)
        else:
            game, g = spec.game, dict(spec.params)
            players, num_actions, obs = spec.players, spec.num_actions, spec.obs
        card = game == DEFAULT_GAME
        n_deals, dealer = 0, 0  # other games have neither
        if card:
            n_deals = int(deals if deals is not None else g.get("deals") or players)
            dealer = int(first_dealer or g.get("first_dealer") or 0)
        return cls(
            players=players,
            deals=n_deals,
            first_dealer=dealer,
            obs_layout=tuple({"name": s.name, "offset": s.offset, "shape": list(s.shape)} for s in obs.sections),
            obs_size=obs.size,
            num_actions=num_actions,
            description=description,
            game=game,
            params={} if card else {k: int(v) for k, v in g.items()},
        )

    def game_spec(self) -> dict[str, Any]:
        """The game as a session's ``game`` takes it: ``{"name", ...parameters}``."""
        if self.game == DEFAULT_GAME:
            return {"name": self.game, "players": self.players, "deals": self.deals, "first_dealer": self.first_dealer}
        return {"name": self.game, **self.params}

    def props(self) -> dict[str, str]:
        """The ``metadata_props`` key/value strings of the format."""
        if self.game == DEFAULT_GAME:  # without "name", as files of the card game always were
            game = {"players": self.players, "deals": self.deals, "first_dealer": self.first_dealer}
        else:
            game = self.game_spec()
        p = {
            "dgenv.format": FORMAT,
            "dgenv.game": json.dumps(game, separators=(",", ":")),
            "dgenv.players": str(self.players),
            "dgenv.obs_layout": json.dumps(
                [{"name": s["name"], "offset": int(s["offset"]), "shape": [int(x) for x in s["shape"]]} for s in self.obs_layout],
                separators=(",", ":"),
            ),
            "dgenv.obs_size": str(self.obs_size),
            "dgenv.num_actions": str(self.num_actions),
        }
        if self.description:
            p["dgenv.description"] = self.description
        if self.logit_scale != 1.0:  # absent means 1: files written before the key stay byte for byte
            p["dgenv.logit_scale"] = repr(float(self.logit_scale))
        return p

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> "PolicyMeta":
        """Parse ``metadata_props``; ValueError when the format is not policy-v1."""
        if props.get("dgenv.format") != FORMAT:
            raise ValueError(f"dgenv.format is {props.get('dgenv.format')!r}, want {FORMAT!r}")
        try:
            game = dict(json.loads(props["dgenv.game"]))
            layout = json.loads(props["dgenv.obs_layout"])
            name = str(game.pop("name", DEFAULT_GAME) or DEFAULT_GAME)
            card = name == DEFAULT_GAME
            return cls(
                players=int(game["players"]) if card else int(props.get("dgenv.players", 0)),
                deals=int(game["deals"]) if card else 0,
                first_dealer=int(game.get("first_dealer", 0)) if card else 0,
                obs_layout=tuple(layout),
                obs_size=int(props["dgenv.obs_size"]),
                num_actions=int(props["dgenv.num_actions"]),
                description=props.get("dgenv.description", ""),
                game=name,
                params={} if card else {k: int(v) for k, v in game.items()},
                logit_scale=_logit_scale(props.get("dgenv.logit_scale", "1")),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"bad dgenv metadata: {e}") from e


MAX_LOGIT_SCALE = 1000.0  # the Go loader's policy.MaxLogitScale


def _logit_scale(v: str) -> float:
    """``dgenv.logit_scale``: a positive finite number up to MAX_LOGIT_SCALE, as the Go loader accepts."""
    try:
        x = float(v)
    except ValueError:
        x = float("nan")
    if not (0.0 < x <= MAX_LOGIT_SCALE):  # NaN fails too
        raise ValueError(f"dgenv.logit_scale = {v!r}: want a number in (0, {MAX_LOGIT_SCALE:g}]")
    return x


@dataclass(frozen=True)
class Layer:
    """One dense layer ``y = act(x @ weight.T + bias)`` (torch's Linear layout).

    Attributes:
        weight: ``[out, in]`` float32.
        bias: ``[out]`` float32.
        activation: ``"relu"``, ``"tanh"`` or ``None`` (the output layer).
    """

    weight: np.ndarray
    bias: np.ndarray
    activation: Optional[str] = None


@dataclass(frozen=True)
class CardHeadArrays:
    """An action-conditioned head's constants (``dgenv.model.CardHead``), added to the logits.

    With ``h`` the last hidden layer, ``H`` units and the ``K`` actions ``cards`` that have
    units (the cards in play): ``u = obs @ g_weight.T + g_bias`` (``[K * H]``, the units
    of ``cards[i]`` at ``i * H .. i * H + H - 1``), ``p = h @ p_weight.T`` (``[H]``, the
    part every card shares), and the logit of ``cards[i]`` gains ``w2 . relu(u[i] + p)``;
    every action's gains ``b2``.

    Attributes:
        cards: ``[K]`` int64 action ids, increasing.
        g_weight: ``[K * H, D]`` float32.
        g_bias: ``[K * H]`` float32.
        p_weight: ``[H, hidden]`` float32.
        w2: ``[H]`` float32.
        b2: ``[A]`` float32.
    """

    cards: np.ndarray
    g_weight: np.ndarray
    g_bias: np.ndarray
    p_weight: np.ndarray
    w2: np.ndarray
    b2: np.ndarray


def build_onnx(layers: Sequence[Layer], meta: PolicyMeta, scale: Optional[np.ndarray] = None,
               head: Optional[CardHeadArrays] = None) -> Any:
    """Build the policy graph ``logits = L_n(...act(L_1(obs * scale)))`` with onnx's helper API.

    Args:
        layers: the dense layers in order; the last one has ``meta.num_actions`` outputs and no activation.
        meta: game and observation layout written into the metadata.
        scale: optional ``[D]`` float32 multiplied into the observation first.
        head: optional action-conditioned head over the last hidden layer, added to the logits
            (``Gemm``, ``Gather``, ``Add``, ``Relu``: the format's operators).

    Returns:
        a checked ``onnx.ModelProto``.
    """
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    D = meta.obs_size
    if not layers:
        raise ValueError("no layers")
    if layers[0].weight.shape[1] != D:
        raise ValueError(f"first layer takes {layers[0].weight.shape[1]} inputs, obs_size is {D}")
    if layers[-1].weight.shape[0] != meta.num_actions or layers[-1].activation is not None:
        raise ValueError("the last layer must have num_actions outputs and no activation")
    inits = []
    nodes = []
    x = "obs"
    if scale is not None:
        s = np.asarray(scale, dtype=np.float32).reshape(D)
        inits.append(numpy_helper.from_array(s, "obs_scale"))
        nodes.append(helper.make_node("Mul", [x, "obs_scale"], ["obs_scaled"], name="scale"))
        x = "obs_scaled"
    for i, layer in enumerate(layers):
        w = np.ascontiguousarray(layer.weight, dtype=np.float32)
        b = np.ascontiguousarray(layer.bias, dtype=np.float32).reshape(w.shape[0])
        if i > 0 and w.shape[1] != layers[i - 1].weight.shape[0]:
            raise ValueError(f"layer {i} takes {w.shape[1]} inputs, layer {i - 1} gives {layers[i - 1].weight.shape[0]}")
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        inits.append(numpy_helper.from_array(b, f"b{i}"))
        last = i == len(layers) - 1
        out = ("logits" if head is None else "pi_logits") if last else f"z{i}"
        nodes.append(
            helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [out], name=f"dense{i}", alpha=1.0, beta=1.0, transA=0, transB=1)
        )
        x = out
        if not last:
            act = (layer.activation or "").lower()
            if act not in ("relu", "tanh"):
                raise ValueError(f"hidden layer {i}: activation {layer.activation!r}, want relu or tanh")
            nodes.append(helper.make_node("Relu" if act == "relu" else "Tanh", [x], [f"h{i}"], name=f"{act}{i}"))
            x = f"h{i}"
    if head is not None:
        nodes += _head_nodes(head, inits, x, "obs", len(layers) - 1, layers[-1].weight.shape[1], meta)
    graph = helper.make_graph(
        nodes,
        "dgenv_policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", D])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", meta.num_actions])],
        initializer=inits,
    )
    model = helper.make_model(
        graph, producer_name="dgenv", opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )
    helper.set_model_props(model, meta.props())
    onnx.checker.check_model(model)
    check_policy(model)
    return model


def _head_nodes(head: CardHeadArrays, inits: list[Any], logits: str, obs: str, last: int, hidden: int,
                meta: PolicyMeta) -> list[Any]:
    """The nodes of ``head`` (see :class:`CardHeadArrays`), reading the hidden layer ``h{last-1}``
    and ``obs`` and adding to ``logits``; the output is ``"logits"``."""
    from onnx import helper, numpy_helper

    A, D = meta.num_actions, meta.obs_size
    units, K = int(head.w2.shape[0]), int(head.cards.shape[0])
    if K < 1 or np.any(np.diff(head.cards) <= 0) or head.cards[0] < 0 or head.cards[-1] >= A:
        raise ValueError(f"card head cards {head.cards}: want increasing action ids below {A}")
    want = {"g_weight": (K * units, D), "g_bias": (K * units,), "p_weight": (units, hidden), "w2": (units,), "b2": (A,)}
    for k, shape in want.items():
        if tuple(getattr(head, k).shape) != shape:
            raise ValueError(f"card head {k}: shape {getattr(head, k).shape}, want {shape}")
    if last < 1:
        raise ValueError("a card head needs a hidden layer")
    blk = np.zeros((A, K * units), np.float32)  # a card's logit from its own units only
    for i, a in enumerate(head.cards):
        blk[a, i * units : (i + 1) * units] = head.w2
    consts = {"head_g_w": head.g_weight, "head_g_b": head.g_bias, "head_p_w": head.p_weight,
              "head_out_w": blk, "head_out_b": head.b2}
    inits += [numpy_helper.from_array(np.ascontiguousarray(v, dtype=np.float32), k) for k, v in consts.items()]
    inits.append(numpy_helper.from_array(np.tile(np.arange(units, dtype=np.int64), K), "head_repeat"))
    return [
        helper.make_node("Gemm", [obs, "head_g_w", "head_g_b"], ["head_u"], name="head_cards", transB=1),
        helper.make_node("Gemm", [f"h{last - 1}", "head_p_w"], ["head_p"], name="head_shared", transB=1),
        helper.make_node("Gather", ["head_p", "head_repeat"], ["head_p_all"], name="head_repeat", axis=1),
        helper.make_node("Add", ["head_u", "head_p_all"], ["head_s"], name="head_sum"),
        helper.make_node("Relu", ["head_s"], ["head_r"], name="head_relu"),
        helper.make_node("Gemm", ["head_r", "head_out_w", "head_out_b"], ["head_logits"], name="head_out", transB=1),
        helper.make_node("Add", [logits, "head_logits"], ["logits"], name="head_add"),
    ]


def save_onnx(model: Any, path: PathLike) -> Path:
    """Write ``model`` to ``path`` (parents created) and return the path."""
    onnx = _onnx()
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(p))
    return p


def load_onnx(path_or_model: Any) -> Any:
    """An ``onnx.ModelProto`` from a path, bytes, or a model (returned as is)."""
    onnx = _onnx()
    if isinstance(path_or_model, onnx.ModelProto):
        return path_or_model
    if isinstance(path_or_model, (bytes, bytearray)):
        return onnx.load_model_from_string(bytes(path_or_model))
    return onnx.load_model(str(path_or_model))


def read_meta(path_or_model: Any) -> PolicyMeta:
    """The :class:`PolicyMeta` of a policy file."""
    m = load_onnx(path_or_model)
    return PolicyMeta.from_props({p.key: p.value for p in m.metadata_props})


def _dims(vi: Any) -> list:
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in vi.type.tensor_type.shape.dim]


def check_policy(path_or_model: Any) -> PolicyMeta:
    """Check that a file follows "dgenv policy v1"; return its metadata.

    Raises:
        ValueError: naming the first thing that is not as the format says.
    """
    onnx = _onnx()
    from onnx import TensorProto

    m = load_onnx(path_or_model)
    meta = read_meta(m)
    g = m.graph
    if meta.num_actions < 1:
        raise ValueError(f"dgenv.num_actions is {meta.num_actions}, want a positive action count (the game's)")
    init_names = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name not in init_names]
    if len(inputs) != 1 or inputs[0].name != "obs":
        raise ValueError(f"graph inputs {[i.name for i in inputs]}, want ['obs']")
    if len(g.output) != 1 or g.output[0].name != "logits":
        raise ValueError(f"graph outputs {[o.name for o in g.output]}, want ['logits']")
    for vi, want in ((inputs[0], meta.obs_size), (g.output[0], meta.num_actions)):
        if vi.type.tensor_type.elem_type != TensorProto.FLOAT:
            raise ValueError(f"{vi.name}: element type is not float32")
        dims = _dims(vi)
        if len(dims) != 2 or dims[1] != want or isinstance(dims[0], int) and dims[0] > 0:
            raise ValueError(f"{vi.name}: shape {dims}, want [batch, {want}] with a symbolic batch")
    index_types = (TensorProto.INT64, TensorProto.INT32)
    indices = {n.input[1] for n in g.node if n.op_type == "Gather" and len(n.input) == 2}
    for t in g.initializer:
        if t.name in indices:
            if t.data_type not in index_types or len(t.dims) != 1:
                raise ValueError(f"initializer {t.name}: Gather's indices must be a 1-D int32 or int64 tensor")
        elif t.data_type != TensorProto.FLOAT:
            raise ValueError(f"initializer {t.name}: not float32")
    conditions = {n.output[0] for n in g.node if n.op_type == "Greater"}
    if "logits" in conditions:
        raise ValueError("the logits are a Greater's result (true/false), not numbers")
    for n in g.node:
        if n.op_type not in ALLOWED_OPS or n.domain not in ("", "ai.onnx"):
            raise ValueError(f"node {n.name or n.op_type}: op {n.domain + '.' if n.domain else ''}{n.op_type} is not allowed")
        if n.op_type == "Gather":
            a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
            if a.get("axis", 0) not in (1, -1) or len(n.input) != 2 or n.input[1] not in init_names:
                raise ValueError(f"node {n.name or 'Gather'}: Gather must take constant indices on axis 1")
            if any(n.input[1] == m.input[0] for m in g.node):
                raise ValueError(f"node {n.name or 'Gather'}: indices {n.input[1]} are used as data elsewhere")
        if n.op_type == "Greater" and (len(n.input) != 2 or n.input[1] not in init_names):
            raise ValueError(f"node {n.name or 'Greater'}: Greater must compare a value with a float32 constant")
        if n.op_type == "Where" and (len(n.input) != 3 or n.input[0] not in conditions):
            raise ValueError(f"node {n.name or 'Where'}: Where's condition must be a Greater's result")
        if n.op_type != "Where" and any(i in conditions for i in n.input):
            raise ValueError(f"node {n.name or n.op_type}: a Greater's result is read as a number (only a Where's condition may read it)")
        if n.op_type == "Gemm":
            a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
            if a.get("transA", 0) != 0 or a.get("transB", 0) not in (0, 1):
                raise ValueError(f"node {n.name}: Gemm with transA={a.get('transA', 0)} transB={a.get('transB', 0)}")
    off = 0
    for s in meta.obs_layout:
        if set(s) != {"name", "offset", "shape"} or int(s["offset"]) != off:
            raise ValueError(f"dgenv.obs_layout: bad section {s}")
        off += int(np.prod(s["shape"]))
    if off != meta.obs_size:
        raise ValueError(f"dgenv.obs_layout covers {off} elements, dgenv.obs_size is {meta.obs_size}")
    return meta


def onnx_forward(path_or_model: Any, obs: np.ndarray) -> np.ndarray:
    """Evaluate a policy graph with numpy (float32): the reference forward.

    Args:
        path_or_model: a policy file path, its bytes, or an ``onnx.ModelProto``.
        obs: ``[B, D]`` observations (any numeric dtype; converted to float32).

    Returns:
        ``[B, A]`` float32 logits.
    """
    from onnx import numpy_helper

    m = load_onnx(path_or_model)
    g = m.graph
    vals: dict[str, np.ndarray] = {}
    for t in g.initializer:
        v = numpy_helper.to_array(t)
        vals[t.name] = v if v.dtype.kind in "iu" else v.astype(np.float32, copy=False)
    vals["obs"] = np.asarray(obs, dtype=np.float32)
    if vals["obs"].ndim == 1:
        vals["obs"] = vals["obs"][None, :]
    for n in g.node:
        a = {x.name: x for x in n.attribute}
        ins = [vals[i] for i in n.input if i]
        op = n.op_type
        if op == "Gemm":
            alpha = a["alpha"].f if "alpha" in a else 1.0
            beta = a["beta"].f if "beta" in a else 1.0
            ta = a["transA"].i if "transA" in a else 0
            tb = a["transB"].i if "transB" in a else 0
            A = ins[0].T if ta else ins[0]
            B = ins[1].T if tb else ins[1]
            y = np.float32(alpha) * (A @ B)
            if len(ins) > 2:
                y = y + np.float32(beta) * ins[2]
        elif op == "MatMul":
            y = ins[0] @ ins[1]
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Mul":
            y = ins[0] * ins[1]
        elif op == "Relu":
            y = np.maximum(ins[0], np.float32(0))
        elif op == "Tanh":
            y = np.tanh(ins[0])
        elif op == "Identity":
            y = ins[0]
        elif op == "Gather":
            y = np.take(ins[0], ins[1].astype(np.int64), axis=a["axis"].i if "axis" in a else 0)
        elif op == "Greater":
            vals[n.output[0]] = ins[0] > ins[1]
            continue
        elif op == "Where":
            y = np.where(ins[0], ins[1], ins[2])
        else:
            raise ValueError(f"op {op} is not in the policy-v1 set")
        vals[n.output[0]] = np.asarray(y, dtype=np.float32)
    return vals[g.output[0].name]


def colour_permutations(sections: Sequence[Mapping[str, Any]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Index maps of the 120 permutations of the 5 colours: ``(obs_idx [120, D], act_idx [120, 90])``.

    The rules treat the colours alike (no trump, no colour order; each colour
    scores on its own), so permuting them in a position, its legal cards and
    its search values gives an equally valid labelled position:
    ``obs[:, obs_idx[k]]``, ``mask[:, act_idx[k]]``, ``q[:, act_idx[k]]`` is
    the position with colour ``c`` renamed ``perm[k][c]``, ``perm[k]`` the
    ``k``-th of ``itertools.permutations(range(5))``. Sections per card
    (``hand``, ``current_trick``, ``prizes``) and per colour
    (``prize_counts``, ``voids``, ``lead_colour``) are permuted; the rest is
    left as it is.
    """
    from itertools import permutations

    perms = list(permutations(range(5)))
    obs_idx = np.tile(np.arange(size), (len(perms), 1))
    act_idx = np.tile(np.arange(90), (len(perms), 1))
    for k, perm in enumerate(perms):
        inv = np.argsort(perm)  # new colour j came from old colour inv[j]
        card = np.array([inv[j // 18] * 18 + j % 18 for j in range(90)])
        act_idx[k] = card
        for sec in sections:
            off, shape = int(sec["offset"]), [int(x) for x in sec["shape"]]
            width = shape[-1]
            rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
            if sec["name"] in ("hand", "current_trick", "prizes") and width == 90:
                m = card
            elif sec["name"] in ("prize_counts", "voids", "lead_colour") and width == 5:
                m = inv
            else:
                continue
            for r in range(rows):
                base = off + r * width
                obs_idx[k, base : base + width] = base + m
    return obs_idx, act_idx


def colour_views(sections: Sequence[Mapping[str, Any]], size: int, views: int) -> tuple[np.ndarray, np.ndarray]:
    """The index maps of :func:`colour_average`'s ``views`` views: ``(obs_idx [K, D], back_idx [K, 90])``.

    View ``s`` renames colour ``c`` to ``(c + s) % 5`` (view 0 is the position
    itself): ``obs[:, obs_idx[s]]`` is the renamed position and
    ``logits[:, back_idx[s]]`` maps its logits back to the real cards."""
    from itertools import permutations

    order = list(permutations(range(5)))
    obs_idx, act_idx = colour_permutations(sections, size)
    ks = [order.index(tuple((c + s) % 5 for c in range(5))) for s in range(views)]
    return np.stack([obs_idx[k] for k in ks]), np.stack([np.argsort(act_idx[k]) for k in ks])


def _renamed_node(n: Any, ren: Mapping[str, str]) -> Any:
    """A copy of node ``n``, unnamed, its inputs and outputs renamed by ``ren`` (an input it lacks kept)."""
    onnx = _onnx()
    n2 = onnx.NodeProto()
    n2.CopyFrom(n)
    n2.name = ""
    del n2.input[:]
    n2.input.extend([ren.get(x, x) for x in n.input])
    del n2.output[:]
    n2.output.extend([ren[x] for x in n.output])
    return n2


def _checked(m: Any, props: Mapping[str, str]) -> Any:
    """``m`` with the metadata ``props``, checked by ``onnx.checker`` and :func:`check_policy`."""
    onnx = _onnx()
    for key, v in props.items():
        m.metadata_props.append(onnx.StringStringEntryProto(key=key, value=v))
    onnx.checker.check_model(m)
    check_policy(m)
    return m


def _card_policy(src: Any, what: str, not_card: str) -> tuple[Any, PolicyMeta]:
    """A card-game policy model and its checked metadata; ValueError (``not_card``
    with ``{game}`` filled) for another game's, and for a file that is not ONNX."""
    from google.protobuf.message import DecodeError

    try:
        m = load_onnx(src)
    except DecodeError as e:
        raise ValueError(f"{src if isinstance(src, (str, Path)) else what}: not an ONNX file ({e})") from e
    meta = check_policy(m)
    if meta.game != DEFAULT_GAME:
        raise ValueError(not_card.format(game=meta.game))
    return m, meta


def colour_average(path_or_model: Any, renamings: int = 5) -> Any:
    """A card-game policy averaged over colour renamings, still one bare network.

    The rules are colour-symmetric, but a trained network is so only
    approximately: the same position with its colours renamed gets other
    logits. The returned graph runs the policy on ``renamings`` views of the
    observation (colour ``c`` renamed ``(c + s) % 5`` for ``s`` below
    ``renamings``: the identity and the cyclic shifts), maps each view's
    logits back to the real cards and averages them. Each view is a
    ``Gather`` of the observation's columns and of the logits; the weights
    are the original's, stored once and shared by every view, so the file
    is the original's size and a decision costs ``renamings`` forward
    passes (docs/benchmarks.md).

    Args:
        path_or_model: a card-game policy file, its bytes, or a model.
        renamings: views, 1 to 5.

    Returns:
        the checked ``onnx.ModelProto`` (save it with :func:`save_onnx`).
    """
    onnx = _onnx()
    from onnx import helper, numpy_helper

    if not 1 <= renamings <= 5:
        raise ValueError(f"renamings {renamings}: want 1 to 5 (the cyclic shifts of the 5 colours)")
    m, meta = _card_policy(path_or_model, "the model", "colour_average: a {game} policy; only the card game's colours are symmetric")
    if any(n.op_type == "Gather" and n.input[0] == "obs" for n in m.graph.node):
        raise ValueError("colour_average: the policy is already averaged (it has Gather nodes on the observation)")
    obs_idx, back_idx = colour_views(meta.obs_layout, meta.obs_size, renamings)
    g = m.graph
    inits = list(g.initializer)
    taken = {t.name for t in inits} | {o for n in g.node for o in n.output} | {"obs"}

    def fresh(name: str) -> str:
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    views: list[dict[str, str]] = []  # per view: {old value name -> new}
    pre: list[Any] = []
    for s in range(renamings):
        # view 0 keeps the original's names, except its logits: the mean is the graph's output
        ren = {o: fresh(f"v{s}_{o}") if s or o == "logits" else o for n in g.node for o in n.output}
        if s == 0:
            ren["obs"] = "obs"
        else:
            idx = fresh(f"v{s}_obs_idx")
            inits.append(numpy_helper.from_array(obs_idx[s].astype(np.int64), idx))
            ren["obs"] = fresh(f"v{s}_obs")
            pre.append(helper.make_node("Gather", ["obs", idx], [ren["obs"]], axis=1))
        views.append(ren)
    nodes = pre
    for n in g.node:  # one layer of every view, then the next: the shared weights stay in the cache
        for ren in views:
            nodes.append(_renamed_node(n, ren))
    outs = [views[0]["logits"]]
    for s, ren in enumerate(views[1:], start=1):
        back = fresh(f"v{s}_act_idx")
        inits.append(numpy_helper.from_array(back_idx[s].astype(np.int64), back))
        out = fresh(f"v{s}_logits_real")
        nodes.append(helper.make_node("Gather", [ren["logits"], back], [out], axis=1))
        outs.append(out)
    acc = outs[0]
    for j, o in enumerate(outs[1:]):
        nxt = fresh(f"sum{j + 1}")
        nodes.append(helper.make_node("Add", [acc, o], [nxt]))
        acc = nxt
    scale = fresh("mean_scale")
    inits.append(numpy_helper.from_array(np.array([1.0 / renamings], dtype=np.float32), scale))
    nodes.append(helper.make_node("Mul", [acc, scale], ["logits"]))
    graph = helper.make_graph(nodes, g.name or "policy", list(g.input), list(g.output), inits)
    out_model = helper.make_model(graph, opset_imports=list(m.opset_import), ir_version=m.ir_version)
    props = {p.key: p.value for p in m.metadata_props}
    note = f"averaged over {renamings} colour renamings (dgenv.policy.colour_average)"
    props["dgenv.description"] = props["dgenv.description"] + "; " + note if props.get("dgenv.description") else note
    return _checked(out_model, props)


def split_lead(lead: Any, later: Any, description: str = "") -> Any:
    """One card-game policy graph that plays ``lead`` where the observer leads a trick and ``later`` elsewhere.

    The graph holds both policies' nodes under one input and a ``Where`` on
    the observation's ``trick_position`` (its first column: the observer
    leads): ``logits = Where(obs[:, leads] > 0.5, lead's logits, later's
    logits)``. The Go runtime computes only the branch a decision takes, so a
    decision costs one of the two policies' passes (docs/benchmarks.md);
    numpy's :func:`onnx_forward` and any ONNX runtime compute both and pick.

    Args:
        lead, later: card-game policy files, their bytes, or models, of the same
            game and observation layout (either may be colour-averaged).
        description: the result's ``dgenv.description`` (default: names both).

    Returns:
        the checked ``onnx.ModelProto`` (save it with :func:`save_onnx`);
        its metadata is ``lead``'s, its ``dgenv.logit_scale`` too.
    """
    onnx = _onnx()
    from onnx import helper, numpy_helper

    models = [_card_policy(src, f"the {what} model", f"split_lead: the {what} policy is a {{game}} policy; only the card game has tricks")
              for what, src in (("lead", lead), ("later", later))]
    (ml, a), (mf, b) = models
    for field_ in ("game", "players", "deals", "first_dealer", "obs_size", "num_actions", "obs_layout"):
        if getattr(a, field_) != getattr(b, field_):
            raise ValueError(f"split_lead: the two policies differ in {field_}: {getattr(a, field_)} and {getattr(b, field_)}")
    sec = next((s for s in a.obs_layout if s["name"] == "trick_position"), None)
    if sec is None:
        raise ValueError("split_lead: the observation has no trick_position section")
    taken = {t.name for m, _ in models for t in m.graph.initializer} | {o for m, _ in models for n in m.graph.node for o in n.output} | {"obs"}

    def fresh(name: str) -> str:
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    def renamed(m: Any, prefix: str) -> tuple[list[Any], list[Any], str]:
        names = {t.name for t in m.graph.initializer} | {o for n in m.graph.node for o in n.output}
        ren = {x: fresh(prefix + x) for x in sorted(names)}
        ren["obs"] = "obs"
        inits = []
        for t in m.graph.initializer:
            t2 = onnx.TensorProto()
            t2.CopyFrom(t)
            t2.name = ren[t.name]
            inits.append(t2)
        return [_renamed_node(n, ren) for n in m.graph.node], inits, ren["logits"]

    lead_nodes, lead_inits, lead_logits = renamed(ml, "lead_")
    later_nodes, later_inits, later_logits = renamed(mf, "later_")
    col, half, col_v, cond = fresh("leads_column"), fresh("half"), fresh("leads_value"), fresh("leads")
    extra_inits = [numpy_helper.from_array(np.array([int(sec["offset"])], np.int64), col),
                   numpy_helper.from_array(np.array([0.5], np.float32), half)]
    nodes = [helper.make_node("Gather", ["obs", col], [col_v], axis=1),
             helper.make_node("Greater", [col_v, half], [cond])]
    nodes += lead_nodes + later_nodes
    nodes.append(helper.make_node("Where", [cond, lead_logits, later_logits], ["logits"]))
    graph = helper.make_graph(nodes, "policy", list(ml.graph.input), list(ml.graph.output), lead_inits + later_inits + extra_inits)
    opset = max(13, max(o.version for o in ml.opset_import if o.domain in ("", "ai.onnx")))
    out = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ml.ir_version)
    props = {p.key: p.value for p in ml.metadata_props}
    def named(src: Any, what: str) -> str:
        return Path(src).name if isinstance(src, (str, Path)) else f"the {what} policy"
    props["dgenv.description"] = description or f"{named(lead, 'lead')} on leads, {named(later, 'later')} on later cards (dgenv.policy.split_lead)"
    return _checked(out, props)


def masked_argmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Index of the highest legal logit per row (``mask`` True = legal)."""
    return np.where(np.asarray(mask, dtype=bool), logits, -np.inf).argmax(axis=-1)


class OnnxPolicy:
    """A policy file loaded for numpy inference (no torch, no pickle).

    ``OnnxPolicy("p.onnx").act(batch.obs, batch.mask)`` picks the greedy legal
    card for every env; :meth:`logits` gives the raw outputs.

    Attributes:
        meta: the file's :class:`PolicyMeta`.
    """

    def __init__(self, path_or_model: Any) -> None:
        self.model = load_onnx(path_or_model)
        self.meta = check_policy(self.model)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """``[B, A]`` unmasked logits of raw observations ``[B, D]``."""
        return onnx_forward(self.model, obs)

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: Optional[np.random.Generator] = None) -> np.ndarray:
        """Actions ``[B]``: greedy over legal cards, or sampled from the masked softmax with ``rng``."""
        lg = self.logits(obs)
        if rng is None:
            return masked_argmax(lg, mask)
        z = np.where(mask, lg, -np.inf)
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        u = rng.random((len(p), 1))
        return np.minimum((p.cumsum(axis=1) < u).sum(axis=1), p.shape[1] - 1)
