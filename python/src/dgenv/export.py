"""Export a training checkpoint to a "dgenv policy v1" ONNX file.

    python -m dgenv.export runs/beat-heuristic/checkpoints/final.pt policies/mine.onnx
    python -m dgenv.export --colour-average 5 policies/mine.onnx policies/mine-c5.onnx

The graph maps the raw observation (uint8 values as float32) to 90 unmasked
logits with Mul/Gemm/Relu|Tanh nodes only; the metadata names the game and the
observation layout (see :mod:`dgenv.policy`). The export is checked with
``onnx.checker``, the format checker and, with ``--verify`` (default), against
torch on random observations (max |difference| <= 1e-5, relative to the
logits' size when it exceeds 1).

``--colour-average K`` reads a card-game policy file instead and writes it
averaged over K colour renamings (:func:`dgenv.policy.colour_average`).

``--later LATER.onnx`` reads a card-game policy file (the leads' policy)
instead and writes one graph that plays it where the observer leads a trick
and ``LATER.onnx`` on its later cards (:func:`dgenv.policy.split_lead`)::

    python -m dgenv.export --later policies/mine-later.onnx policies/mine-c3.onnx policies/mine-split.onnx
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

__all__ = ["export_checkpoint", "verify_export", "main"]


def verify_export(net: object, onnx_path: Union[str, Path], n: int = 64, seed: int = 0, relative: bool = False) -> float:
    """Max |torch logits - numpy reference forward logits| over ``n`` random observations.

    With ``relative``, divided by ``max(1, max |logit|)``: a first layer with
    folded features sums in another order than torch, which costs float32
    rounding in proportion to the logits' size.
    """
    import torch

    from .policy import onnx_forward, read_meta

    meta = read_meta(onnx_path)
    rng = np.random.default_rng(seed)
    obs = np.zeros((n, meta.obs_size), np.float32)
    top = _section_max(net, meta.obs_layout)
    for s in meta.obs_layout:  # each section's values in 0..its max (counts capped at 15)
        off, size = int(s["offset"]), int(np.prod(s["shape"]))
        hi = int(min(top[off : off + size].max(initial=1), 15)) + 1
        obs[:, off : off + size] = rng.integers(0, hi, (n, size))
    with torch.no_grad():
        want = net.logits(torch.from_numpy(obs)).numpy()  # type: ignore[attr-defined]
    got = onnx_forward(onnx_path, obs)
    err = float(np.abs(want - got).max())
    return err / max(1.0, float(np.abs(want).max())) if relative else err


def _section_max(net: object, layout: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Per-element largest value of the observation: each section's ``max`` where the
    layout carries it, else read back from the net's input scale (``obs_scale``:
    ``1/min(max, 16)`` where max > 1, 1 for 0/1 sections)."""
    scale = getattr(net, "scale", None)
    d = int(getattr(net, "obs_size", 0)) or max((int(s["offset"]) + int(np.prod(s["shape"])) for s in layout), default=0)
    top = np.ones(d, np.float64)
    if scale is not None:
        sc = np.asarray(scale.detach().cpu().numpy() if hasattr(scale, "detach") else scale, np.float64).reshape(-1)[:d]
        top[: sc.size] = np.where(sc < 1, np.rint(1.0 / np.maximum(sc, 1e-9)), 1.0)
    for s in layout:
        if s.get("max") is not None:
            off, size = int(s["offset"]), int(np.prod(s["shape"]))
            top[off : off + size] = float(s["max"])
    return top


def export_checkpoint(checkpoint: Union[str, Path], out: Union[str, Path], description: str = "", verify: bool = True) -> Path:
    """Load a :mod:`dgenv.train` checkpoint and write its policy as ONNX.

    Raises:
        ValueError: the export does not match torch within 1e-5.
    """
    from .model import export_onnx, load_checkpoint

    net, meta, extra = load_checkpoint(checkpoint)
    desc = description or meta.description or f"exported from {Path(checkpoint).name} ({extra})"
    path = export_onnx(net, meta, out, description=desc)
    if verify:
        err = verify_export(net, path, relative=True)
        if err > 1e-5:
            raise ValueError(f"{path}: ONNX logits differ from torch by {err:.3g} (relative, > 1e-5)")
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(prog="python -m dgenv.export", description="checkpoint.pt -> policy-v1 ONNX")
    p.add_argument("checkpoint", help="a checkpoint (.pt), or with --colour-average or --later a card-game policy file (.onnx)")
    p.add_argument("out")
    p.add_argument("--description", default="")
    p.add_argument("--no-verify", action="store_true", help="skip the torch vs numpy check")
    p.add_argument("--colour-average", type=int, default=0, metavar="K",
                   help="read a policy file and write it averaged over K (2 to 5) colour renamings: K forward passes a decision")
    p.add_argument("--later", default="", metavar="LATER.onnx",
                   help="read a card-game policy file and write one graph that plays it on the observer's leads and LATER.onnx on its later cards")
    a = p.parse_args(argv)
    from .policy import read_meta

    if a.colour_average and a.later:
        p.error("--colour-average and --later: one at a time (average each file first)")
    if a.later:
        from .policy import save_onnx, split_lead

        try:
            path = save_onnx(split_lead(a.checkpoint, a.later, a.description), a.out)
        except (ValueError, OSError, ImportError) as e:
            p.error(str(e))
    elif a.colour_average:
        from .policy import colour_average, save_onnx

        if not 2 <= a.colour_average <= 5:
            p.error(f"--colour-average {a.colour_average}: want 2 to 5")
        try:
            m = colour_average(a.checkpoint, a.colour_average)
            for prop in m.metadata_props:
                if prop.key == "dgenv.description" and a.description:
                    prop.value = a.description
            path = save_onnx(m, a.out)
        except (ValueError, OSError, ImportError) as e:
            p.error(str(e))
    else:
        path = export_checkpoint(a.checkpoint, a.out, a.description, verify=not a.no_verify)

    m = read_meta(path)
    game = f"{m.players} players, {m.deals} deals" if m.game == "david_goliath" else f"{m.game} {dict(m.params)}"
    print(f"wrote {path}: {game}, obs {m.obs_size}, {m.num_actions} actions, {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    from ._cli import run

    run(main)
