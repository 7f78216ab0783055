"""The Go engine inside this Python process: the batch API with no server.

:func:`local` returns a :class:`LocalClient`, the sibling of the HTTP
:class:`dgenv.Client` under :class:`dgenv.EnvClient` (``make``, the game and
policy lists, ``close``...), and its :meth:`~LocalClient.make` returns a
:class:`LocalBatchEnv`, the sibling of the HTTP env under
:class:`dgenv.BatchEnv`: the same arguments, the same
:class:`~dgenv.Batch`, the same errors, the same bots, served policies and
packing. Both transports step the same Go ``VecEnv``, so the same seeds and
actions give identical batches::

    import dgenv
    client = dgenv.local()                         # loads libdgenv once per process
    env = client.make(players=4, num_envs=4096, seed=1)
    b = env.reset()
    b = env.step(actions)                          # numpy in, numpy out

Every adapter takes it as its client (``GymEnv(client=dgenv.local())``, or
``client="inproc"``). The engine writes each answer into a fresh numpy buffer
(so a :class:`~dgenv.Batch` stays valid after later steps, as over HTTP) and
Python's GIL is released while Go works, so threads stepping different envs
run in parallel.

Threads: a :class:`LocalClient` and each :class:`LocalBatchEnv` may be shared
between threads. Calls on one env are serialised (one at a time, each whole:
its actions, its step and its answer's buffers), calls on different envs run
in parallel, and a call on an env that another thread has closed raises
:class:`~dgenv.errors.DgenvError` ("env is closed"), never a crash.

Memory: every env is counted at creation against a memory budget
(``memory_budget``, 2 GiB by default, as the server's
``limits.memory_budget``), with the server's worst-case estimate: an env that
would take the live in-process envs past it is refused with
:class:`~dgenv.errors.TooLarge` (alone over the budget) or
:class:`~dgenv.errors.LimitError` (with the envs already live), both naming
``memory_budget``, instead of the process running out of memory.

See :mod:`dgenv._capi` for fork, signals and buffers. The classes are
implemented in :mod:`dgenv._local`; :func:`make` is :func:`dgenv.make`
(:mod:`dgenv._clients`, which chooses every client).
"""

from __future__ import annotations

from . import _capi  # dgenv.inproc._capi: the library's loader and its errors (ForkedError...)
from ._clients import make
from ._local import LocalBatchEnv, LocalClient, local

__all__ = ["local", "LocalClient", "LocalBatchEnv", "make"]
