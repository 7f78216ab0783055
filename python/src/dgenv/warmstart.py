"""A training network from a served policy file: PPO continued from an ONNX actor.

A policy file (:func:`dgenv.model.export_onnx`) keeps only the actor:
``logits = L_n(...act(L_1(obs * scale)))``. Continuing PPO from it needs the
:class:`~dgenv.model.PolicyNet` it came from; :func:`net_from_onnx` rebuilds it
with the file's weights, scale and activation, and a new value head (the file
has none). That head starts knowing nothing, so a run started this way fits it
first with the actor held fixed (``--value-warmup`` updates of
:mod:`dgenv.train`), before its advantages steer the policy.

``python -m dgenv.train --init policies/duel.onnx ...`` calls it for any
``--init`` ending in ``.onnx``. Files whose first layer was folded from card
features (``--features true``) come back as a plain MLP over the raw
observation with the same outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

import numpy as np
import torch

from .model import PolicyNet
from .policy import PolicyMeta, check_policy, load_onnx

__all__ = ["net_from_onnx"]


def net_from_onnx(path: Union[str, Path]) -> tuple[PolicyNet, PolicyMeta]:
    """The :class:`PolicyNet` whose actor is the policy file ``path``, and its metadata.

    The logits equal the file's for every observation (up to float32
    rounding); the value head is newly initialised.

    Raises:
        ValueError: the file is not a dgenv policy, or its graph is not the
            Mul/Gemm/activation chain :func:`dgenv.policy.build_onnx` writes.
    """
    from onnx import numpy_helper

    model = load_onnx(path)
    meta = check_policy(model)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes = list(model.graph.node)
    scale = None
    if nodes and nodes[0].op_type == "Mul":
        scale = inits[nodes[0].input[1]].astype(np.float32).reshape(meta.obs_size)
        nodes = nodes[1:]
    gemms = [n for n in nodes if n.op_type == "Gemm"]
    acts = {n.op_type for n in nodes if n.op_type not in ("Gemm",)}
    if not gemms or len(nodes) != 2 * len(gemms) - 1 or len(acts) > 1 or not acts <= {"Relu", "Tanh"}:
        raise ValueError(f"{path}: not a dense chain of the form dgenv.policy.build_onnx writes ({[n.op_type for n in model.graph.node]})")
    for n in gemms:
        attrs = {a.name: a for a in n.attribute}
        if "transB" not in attrs or attrs["transB"].i != 1 or ("transA" in attrs and attrs["transA"].i != 0):
            raise ValueError(f"{path}: Gemm {n.name} is not x @ W.T + b")
    ws = [inits[n.input[1]].astype(np.float32) for n in gemms]
    bs = [inits[n.input[2]].astype(np.float32) for n in gemms]
    activation = "tanh" if acts == {"Tanh"} else "relu"
    net = PolicyNet(meta.obs_size, [w.shape[0] for w in ws[:-1]], activation, scale=scale, num_actions=meta.num_actions)
    lins = [m for m in net.trunk if isinstance(m, torch.nn.Linear)] + [net.pi]
    with torch.no_grad():
        for lin, w, b in zip(lins, ws, bs):
            if tuple(lin.weight.shape) != w.shape:
                raise ValueError(f"{path}: layer of shape {w.shape}, the chain wants {tuple(lin.weight.shape)}")
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
    net.eval()
    return net, meta
