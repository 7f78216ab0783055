"""EnvPool-style asynchronous stepping: :class:`AsyncBatchEnv`.

A synchronous loop leaves the server idle while the trainer picks actions,
and the trainer idle while the server steps. Splitting the games into
batches that are stepped in turn overlaps the two: while the server steps
one batch, the trainer works on another. This is EnvPool's async mode
(``num_envs`` games, ``batch_size`` of them returned by each ``recv``)::

    pool = dgenv.AsyncBatchEnv(client, num_envs=4096, batch_size=2048, seed=1)
    pool.async_reset()
    for _ in range(1000):
        env_id, b = pool.recv()               # the batch that is ready first
        pool.send(policy(b.obs, b.mask), env_id)
    pool.close()

Each batch is one server session (:class:`~dgenv.client.BatchEnv`) of
``batch_size`` games; batch k's session has seed ``seed + k``, so the games
differ from one session of ``num_envs`` games with the same seed.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Optional

import numpy as np

from .base import ActionsLike, Batch, BatchEnv, EnvClient
from .spec import Spec
from .errors import DgenvError

__all__ = ["AsyncBatchEnv"]


class AsyncBatchEnv:
    """``num_envs`` games stepped as ``num_envs // batch_size`` overlapping batches.

    ``recv()`` returns ``(env_id, batch)`` for the batch whose answer came
    first (batches are answered in the order they were sent); ``send(actions,
    env_id)`` steps that batch and returns at once. ``env_id`` is the
    ``[batch_size]`` array of the games' indices in 0..num_envs-1.

    A step the server refuses (e.g. an illegal action) raises from ``recv``
    and changes nothing: that batch is ready again with the batch it had
    (``last(env_id)``), and ``send`` may step it with other actions.
    Not safe to share between threads.

    Args:
        client: a :class:`~dgenv.EnvClient` (from :func:`dgenv.connect`, :func:`dgenv.serve` or :func:`dgenv.local`).
        num_envs: games in all.
        batch_size: games per batch (default ``num_envs // 2``); must divide ``num_envs``.
        seed: seed of batch 0 (batch k uses ``seed + k``); None lets the server pick.
        **make_kwargs: passed to :meth:`~dgenv.Client.make` for every batch
            (``players``, ``learner_seats``, ``opponent``, ``reward``, ``deals``,
            ``obs_dtype``, ``packing``...).
    """

    def __init__(
        self,
        client: EnvClient,
        num_envs: int,
        batch_size: Optional[int] = None,
        *,
        seed: Optional[int] = None,
        **make_kwargs: Any,
    ) -> None:
        num_envs = int(num_envs)
        batch_size = num_envs // 2 if batch_size is None else int(batch_size)
        if batch_size < 1 or num_envs < batch_size or num_envs % batch_size:
            raise ValueError(f"batch_size = {batch_size}: must divide num_envs = {num_envs} (and be at least 1)")
        for k in ("num_envs", "seed"):
            if k in make_kwargs:
                raise TypeError(f"{k} is AsyncBatchEnv's own argument")
        self.num_envs, self.batch_size = num_envs, batch_size
        self.envs: list[BatchEnv] = []
        try:
            for i in range(num_envs // batch_size):
                self.envs.append(
                    client.make(num_envs=batch_size, seed=None if seed is None else seed + i, **make_kwargs)
                )
        except BaseException:
            self.close()
            raise
        self._ids = [np.arange(k * batch_size, (k + 1) * batch_size) for k in range(len(self.envs))]
        self._in_flight: deque[int] = deque()  # batches sent, oldest first
        self._ready: set[int] = set()  # batches received and not sent again
        self._closed = False

    @property
    def spec(self) -> Spec:
        """The spec of one batch (``spec.num_envs`` is ``batch_size``)."""
        return self.envs[0].spec

    @property
    def num_batches(self) -> int:
        """How many batches the games are split into."""
        return len(self.envs)

    def async_reset(self, seed: Optional[int] = None) -> None:
        """Reset every batch (each answers at a later :meth:`recv`).

        Args:
            seed: re-seed batch k with ``seed + k``; None continues the streams.

        Raises:
            DgenvError: a batch is still in flight (``recv`` it first).
        """
        self._check_open()
        if self._in_flight:
            raise DgenvError(f"{len(self._in_flight)} batch(es) in flight: recv them before async_reset")
        for k, env in enumerate(self.envs):
            env.reset_async(None if seed is None else seed + k)
            self._in_flight.append(k)
            self._ready.discard(k)

    def recv(self) -> tuple[np.ndarray, Batch]:
        """Wait for the oldest batch in flight; return ``(env_id, batch)``.

        Raises:
            DgenvError: nothing is in flight.
            ServerError: the server refused that batch's step (it is ready again, unchanged).
        """
        self._check_open()
        if not self._in_flight:
            raise DgenvError("nothing in flight: send (or async_reset) first")
        k = self._in_flight.popleft()
        self._ready.add(k)
        return self._ids[k], self.envs[k].step_wait()

    def send(self, actions: ActionsLike, env_id: Any) -> None:
        """Step the batch ``env_id`` (as :meth:`recv` returned it) with ``actions`` ``[batch_size]``.

        Raises:
            ValueError: ``env_id`` is not a batch's ids, or that batch is not ready
                (not received since it was last sent).
        """
        self._check_open()
        k = self._batch_of(env_id)
        if k not in self._ready:
            raise ValueError(f"batch {k} (env_id {k * self.batch_size}..) is not ready: recv it first")
        self.envs[k].step_async(actions)  # ValueError for a bad shape: nothing sent
        self._ready.discard(k)
        self._in_flight.append(k)

    def last(self, env_id: Any) -> Optional[Batch]:
        """The last batch received for ``env_id``."""
        return self.envs[self._batch_of(env_id)].last

    def _batch_of(self, env_id: Any) -> int:
        ids = np.asarray(env_id)
        if ids.shape != (self.batch_size,) or ids.dtype.kind not in "iu":
            raise ValueError(f"env_id: want the [{self.batch_size}] integer array recv returned")
        k = int(ids[0]) // self.batch_size
        if not 0 <= k < len(self._ids) or not np.array_equal(ids, self._ids[k]):
            raise ValueError("env_id: not the ids of a batch (pass the env_id recv returned)")
        return k

    def _check_open(self) -> None:
        if self._closed:
            raise DgenvError("AsyncBatchEnv is closed")

    def close(self) -> None:
        """Delete every batch's session (answers still in flight are dropped)."""
        self._closed = True
        for env in self.envs:
            try:
                env.close()
            except Exception:
                pass
        self._in_flight.clear()
        self._ready.clear()

    def __enter__(self) -> "AsyncBatchEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
