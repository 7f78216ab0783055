"""Writes parity.onnx and parity.json for the Go parity test.

A 4-player MLP in the dgenv policy v1 format (Gemm with transB=1 as torch's
nn.Linear stores weights, an input scale by Mul, ReLU and Tanh) with fixed
random weights, and the logits numpy computes for a few observations. Run:
    python env/policy/testdata/make_parity.py
"""
import json
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).parent
# The engine's 4-player layout (obs.NewLayout(4)), name/offset/shape.
LAYOUT = [
    ("hand", 0, [90]), ("current_trick", 90, [4, 90]), ("prize_counts", 450, [4, 5]),
    ("prizes", 470, [4, 90]), ("voids", 830, [4, 5]), ("lead_colour", 850, [5]),
    ("leader", 855, [4]), ("trick_position", 859, [4]), ("tricks_left", 863, [1]),
    ("deal_index", 864, [1]), ("deals_left", 865, [1]), ("totals", 866, [4, 2]),
]
D, H, A = 874, 32, 90

rng = np.random.default_rng(7)
scale = (rng.random(D, dtype=np.float32) * 0.5 + 0.5).astype(np.float32)
w1 = (rng.standard_normal((H, D)) * 0.1).astype(np.float32)  # [out, in], transB=1
b1 = (rng.standard_normal(H) * 0.1).astype(np.float32)
w2 = (rng.standard_normal((H, H)) * 0.2).astype(np.float32).T.copy()  # [in, out] for MatMul
b2 = (rng.standard_normal(H) * 0.1).astype(np.float32)
w3 = (rng.standard_normal((H, A)) * 0.3).astype(np.float32)  # [in, out], Gemm transB=0
b3 = (rng.standard_normal(A) * 0.1).astype(np.float32)

nodes = [
    helper.make_node("Mul", ["obs", "scale"], ["x0"]),
    helper.make_node("Gemm", ["x0", "w1", "b1"], ["h1"], transB=1, alpha=1.0, beta=1.0),
    helper.make_node("Relu", ["h1"], ["a1"]),
    helper.make_node("MatMul", ["a1", "w2"], ["h2"]),
    helper.make_node("Add", ["h2", "b2"], ["h2b"]),
    helper.make_node("Tanh", ["h2b"], ["a2"]),
    helper.make_node("Gemm", ["a2", "w3", "b3"], ["logits"], alpha=0.5, beta=2.0),
]
inits = [numpy_helper.from_array(a, n) for n, a in
         [("scale", scale), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("b3", b3)]]
graph = helper.make_graph(
    nodes, "parity",
    [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", D])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", A])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
meta = {
    "dgenv.format": "policy-v1",
    "dgenv.game": json.dumps({"players": 4, "deals": 4, "first_dealer": 0}),
    "dgenv.obs_layout": json.dumps([{"name": n, "offset": o, "shape": s} for n, o, s in LAYOUT]),
    "dgenv.obs_size": str(D),
    "dgenv.num_actions": str(A),
    "dgenv.description": "parity test model",
}
for k, v in meta.items():
    model.metadata_props.append(onnx.StringStringEntryProto(key=k, value=v))
onnx.checker.check_model(model)
onnx.save(model, HERE / "parity.onnx")

obs = (rng.random((5, D)) < 0.08).astype(np.uint8)
obs[:, 863] = rng.integers(0, 16, 5)
x = obs.astype(np.float32) * scale
h = np.maximum(x @ w1.T + b1, 0)
h = np.tanh(h @ w2 + b2)
logits = 0.5 * (h @ w3) + 2.0 * b3
json.dump({"obs": obs.tolist(), "logits": logits.astype(np.float32).tolist()},
          open(HERE / "parity.json", "w"))
print("wrote parity.onnx and parity.json")
