"""Helpers shared by the adapters: their optional libraries and an observation as text.

Which client an adapter uses is :mod:`dgenv._clients`' choice; its
``ClientLike`` and ``resolve_client`` are imported here too for
:mod:`dgenv.openspiel`, which reads them from this module.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ._clients import ClientLike, resolve_client

__all__ = ["require", "describe_obs", "ClientLike", "resolve_client"]


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or fail with the pip command that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{module} is needed for this adapter: pip install 'dgenv[{extra}]' ({e})"
        ) from e


def describe_obs(spec: Any, obs: Any) -> str:
    """One observation as text for ``render_mode="ansi"``, read through the spec's sections.

    The card game shows the observer's ``hand`` (card ids); a game without
    one shows every section that is not all zero: the indices set in a 0/1
    section, the values of the others.
    """
    import numpy as np

    o = np.asarray(obs).reshape(-1)
    secs = [s for s in spec.obs.sections if s.name == "hand"] or list(spec.obs.sections)
    parts = []
    for s in secs:
        v = o[s.offset : s.offset + s.size]
        if not v.any() and s.name != "hand":
            continue
        shown = np.flatnonzero(v).tolist() if s.max <= 1 else v.astype(np.int64).tolist()
        parts.append(f"{s.name} {shown}")
    return " ".join(parts)
