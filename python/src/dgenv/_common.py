"""Helpers shared by the adapters: where the server comes from, spaces' bounds."""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any, Optional, Union

from .client import Client, connect

__all__ = ["ClientLike", "resolve_client", "own_client", "default_server", "require", "describe_obs"]

ClientLike = Union[Client, str, None]

_default: Optional[Client] = None
_default_lock = threading.Lock()


def default_server() -> Client:
    """A server shared by every adapter made without a client in this process.

    ``$DGENV_URL`` names a running server to use (with ``$DGENV_TOKEN`` and,
    for https, ``$DGENV_CA_FILE``); otherwise one is started with
    :func:`dgenv.serve` on first use and stopped when the interpreter exits.
    """
    global _default
    with _default_lock:
        if _default is None:
            url = os.environ.get("DGENV_URL")
            if url:
                _default = connect(url, token=os.environ.get("DGENV_TOKEN") or None, ca_file=os.environ.get("DGENV_CA_FILE") or None)
            else:
                from .server import serve

                _default = serve()
        return _default


def resolve_client(client: ClientLike) -> Client:
    """A :class:`Client` from a client, a URL, ``"inproc"`` (:func:`dgenv.local`), or None (:func:`default_server`)."""
    if isinstance(client, Client):
        return client
    if isinstance(client, str):
        if client == "inproc":
            from .inproc import local

            return local()  # type: ignore[return-value]
        return connect(client)
    if client is None:
        return default_server()
    if callable(getattr(client, "make", None)):  # dgenv.local()'s LocalClient
        return client
    raise TypeError(f"client: want a dgenv.Client, a URL or None, got {type(client).__name__}")


def own_client(client: ClientLike) -> tuple[Client, bool]:
    """:func:`resolve_client`, and whether the caller opened it (from a URL) and so must close it."""
    return resolve_client(client), isinstance(client, str)


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
