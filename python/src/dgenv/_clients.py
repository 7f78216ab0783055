"""Choosing the client: the one place that turns what a caller names into an :class:`~dgenv.base.EnvClient`.

Every adapter (Gymnasium, PettingZoo, SB3, RLlib, OpenSpiel), the trainers
and :func:`dgenv.make` take a client as ``client=`` (or ``transport=``) and
come here for it:

==========================  ===============================================================
``client=``                 the client
==========================  ===============================================================
an :class:`EnvClient`       used as it is (:func:`dgenv.connect`, :func:`dgenv.serve`,
                            :func:`dgenv.local`...); the caller keeps it and closes it
``"inproc"``                :func:`dgenv.local`: the engine in this process
a URL (``"http://..."``,    :func:`dgenv.connect` to that server; the adapter opened it
``"unix:/path"``)           and closes it
None                        :func:`default_server`: ``$DGENV_URL``, or a server started
                            once per process with :func:`dgenv.serve`
==========================  ===============================================================
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional, Union

from ._local import LocalClient, local
from .base import BatchEnv, EnvClient
from .client import Client, connect
from .server import serve

__all__ = ["ClientLike", "TRANSPORTS", "resolve_client", "own_client", "default_server", "is_inproc", "make"]

# A client as the adapters take it (see the table above).
ClientLike = Union[EnvClient, str, None]

# make()'s transports: the engine in this process, or the shared server.
TRANSPORTS = ("inproc", "http")

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
                _default = serve()
        return _default


def resolve_client(client: ClientLike) -> EnvClient:
    """The client ``client`` names (the module's table).

    Raises:
        TypeError: ``client`` is none of those.
    """
    if isinstance(client, EnvClient):
        return client
    if isinstance(client, str):
        return local() if client == "inproc" else connect(client)
    if client is None:
        return default_server()
    raise TypeError(f"client: want a dgenv client (dgenv.connect, dgenv.serve, dgenv.local), a URL, 'inproc' or None, "
                    f"got {type(client).__name__}")


def own_client(client: ClientLike) -> tuple[EnvClient, bool]:
    """:func:`resolve_client`, and whether the caller opened it (from a URL) and so must close it."""
    return resolve_client(client), isinstance(client, str)


def is_inproc(client: Any) -> bool:
    """True when ``client`` names the engine in this process (``"inproc"`` or a :class:`~dgenv.inproc.LocalClient`)."""
    return client == "inproc" or isinstance(client, LocalClient)


def make(*, transport: str = "inproc", client: Optional[EnvClient] = None, **kwargs: Any) -> BatchEnv:
    """Make a batch env over ``transport``: ``"inproc"`` (this process) or ``"http"``.

    ``client`` is used as is when given; with ``"http"`` and no client the
    shared local server is used (:func:`default_server`). The other arguments
    are the client's ``make``'s (:meth:`dgenv.client.Client.make`).

    Raises:
        ValueError: another transport.
    """
    if client is None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport {transport!r}: want 'inproc' or 'http'")
        client = local() if transport == "inproc" else default_server()
    return client.make(**kwargs)
