"""Writes overflow.onnx: a 4-player policy whose weights are all finite but
whose logits are not (NaN), for the tests that a policy with non-finite
logits fails instead of playing the first legal action. Run:
    python env/policy/testdata/make_overflow.py

h = [sum(obs), sum(obs)] (Gemm, weights 1); logits = h @ [[3e38...], [-3e38...]]:
any observation with two or more nonzero values gives Inf + -Inf = NaN.
"""
import json
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).parent
# The engine's 4-player layout (as in make_parity.py).
LAYOUT = [
    ("hand", 0, [90]), ("current_trick", 90, [4, 90]), ("prize_counts", 450, [4, 5]),
    ("prizes", 470, [4, 90]), ("voids", 830, [4, 5]), ("lead_colour", 850, [5]),
    ("leader", 855, [4]), ("trick_position", 859, [4]), ("tricks_left", 863, [1]),
    ("deal_index", 864, [1]), ("deals_left", 865, [1]), ("totals", 866, [4, 2]),
]
D, A = 874, 90
w1 = np.ones((2, D), np.float32)  # [out, in], transB=1
b1 = np.zeros(2, np.float32)
w2 = np.stack([np.full(A, 3e38, np.float32), np.full(A, -3e38, np.float32)])  # [in, out]
b2 = np.zeros(A, np.float32)
nodes = [
    helper.make_node("Gemm", ["obs", "w1", "b1"], ["h"], transB=1),
    helper.make_node("Gemm", ["h", "w2", "b2"], ["logits"]),
]
inits = [numpy_helper.from_array(a, n) for n, a in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]]
graph = helper.make_graph(
    nodes, "overflow",
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
    "dgenv.description": "finite weights, NaN logits",
}
for k, v in meta.items():
    model.metadata_props.append(onnx.StringStringEntryProto(key=k, value=v))
onnx.checker.check_model(model)
onnx.save(model, HERE / "overflow.onnx")
print("wrote overflow.onnx")
