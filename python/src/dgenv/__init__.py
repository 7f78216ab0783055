"""dgenv: Python client and RL adapters for the David & Goliath batch server.

Quick start::

    import dgenv, numpy as np
    with dgenv.serve() as srv:                     # builds/finds and starts the Go server
        env = srv.make(players=4, num_envs=1024, seed=1)
        b = env.reset()
        rng = np.random.default_rng(0)
        for _ in range(100):
            a = np.argmax(rng.random(b.mask.shape) * b.mask, axis=1)
            b = env.step(a)

The interface is :mod:`dgenv.base`'s: an :class:`EnvClient` (a server's
:class:`Client`, or this process's :class:`LocalClient` from :func:`local`)
makes :class:`BatchEnv` s (:class:`HttpBatchEnv`, :class:`LocalBatchEnv`);
:func:`make` picks the transport (``transport="inproc" | "http"``).

Adapters live in submodules and import their library lazily:
:mod:`dgenv.gymnasium`, :mod:`dgenv.pettingzoo`, :mod:`dgenv.sb3`, :mod:`dgenv.rllib`,
:mod:`dgenv.openspiel`.
"""

from ._clients import make
from .base import Batch, BatchEnv, EnvClient
from .client import NUM_ACTIONS, Client, HttpBatchEnv, ObsSpec, Section, Spec, connect
from .options import EnvOptions
from .spec import GameInfo, GameParam
from .errors import (
    BadRequest,
    BusyError,
    ConflictError,
    DgenvError,
    Forbidden,
    IllegalActionError,
    InternalError,
    LimitError,
    MethodNotAllowed,
    NotFound,
    ServerError,
    ServerStartError,
    ServerUnavailable,
    SessionNotFound,
    StaleSeqError,
    TooLarge,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from .inproc import LocalBatchEnv, LocalClient, local
from .pool import AsyncBatchEnv
from .server import LocalServer, find_server, serve

__version__ = "0.1.0"

__all__ = [
    "connect",
    "serve",
    "local",
    "make",
    "EnvClient",
    "LocalClient",
    "LocalBatchEnv",
    "Client",
    "LocalServer",
    "BatchEnv",
    "HttpBatchEnv",
    "AsyncBatchEnv",
    "Batch",
    "Spec",
    "ObsSpec",
    "Section",
    "EnvOptions",
    "GameInfo",
    "GameParam",
    "NUM_ACTIONS",
    "find_server",
    "DgenvError",
    "ServerError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "SessionNotFound",
    "BusyError",
    "StaleSeqError",
    "ConflictError",
    "MethodNotAllowed",
    "TooLarge",
    "UnsupportedMediaType",
    "IllegalActionError",
    "LimitError",
    "Unavailable",
    "InternalError",
    "ServerUnavailable",
    "ServerStartError",
]
