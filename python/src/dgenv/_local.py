"""The in-process transport: :class:`LocalClient` and :class:`LocalBatchEnv` over ``libdgenv``.

The implementation behind :mod:`dgenv.inproc` (the public module, whose
notes on threads, memory and buffers apply here); :mod:`dgenv._capi` loads
the library and calls it.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np
from numpy.typing import DTypeLike

from . import _capi
from .base import Batch, BatchEnv, EnvClient, GameLike, act_observations, action_array, create_body, record_index
from .spec import GameInfo, Spec
from .errors import BadRequest, DgenvError, IllegalActionError

__all__ = ["local", "LocalClient", "LocalBatchEnv"]

_SAFE_ACTION_DTYPES = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32))

# Answers are carved out of blocks of about this many bytes, so small
# batches do not pay one numpy allocation per tensor per step.
_BLOCK_BYTES = 1 << 18


class LocalClient(EnvClient):
    """The engine in this process: the sibling of the HTTP :class:`dgenv.Client` under :class:`~dgenv.base.EnvClient`.

    Args:
        policies: a directory of trained policies (``*.onnx``, as ``dgserver
            --policies``) to load; each becomes the opponent ``"policy:<name>"``.
            Policies are loaded into the process's one engine, so every
            LocalClient sees them.
        memory_budget: bytes that every live in-process env of this process
            (of any client), with the one :meth:`make` creates, may come to
            hold at worst, by the server's estimate; None: 2 GiB, the
            server's default ``limits.memory_budget``. What a
            :class:`~dgenv.Batch` you keep holds is yours, outside it.

    May be shared between threads (see the module's notes).

    Raises:
        ValueError: ``memory_budget`` is not a positive integer.
    """

    url = "inproc:"
    token = None
    timeout = None

    def __init__(self, policies: Union[str, Path, None] = None, *, memory_budget: Optional[int] = None) -> None:
        if memory_budget is not None:
            if isinstance(memory_budget, bool) or not isinstance(memory_budget, (int, np.integer)) or memory_budget < 1:
                raise ValueError(f"memory_budget = {memory_budget!r}: want a number of bytes > 0 (None: 2 GiB)")
            memory_budget = int(memory_budget)
        self.memory_budget = memory_budget
        self._lib = _capi.lib()
        if policies is not None:
            self.load_policies(policies)

    def __repr__(self) -> str:
        return f"LocalClient({str(self._lib.path)!r})"

    def healthy(self) -> bool:
        """Always True: nothing to reach."""
        return True

    def ready(self) -> bool:
        """Always True."""
        return True

    def bots(self, game: Optional[str] = None) -> list[str]:
        """Names of the bots an env's ``opponent`` may be in ``game`` (default: the default game), ``policy:<name>`` for loaded policies."""
        if game is None:
            return _capi.call_json(self._lib.dg_bots)
        games = _capi.call_json(self._lib.dg_games)["games"]
        for g in games:
            if g["name"] == game:
                return list(g["bots"])
        names = [g["name"] for g in games]
        raise BadRequest(f"game {game!r}: unknown (known: {', '.join(names)})", code="bad_request",
                         details={"field": "game", "games": names})

    def games(self) -> list[GameInfo]:
        """The games this library plays (:meth:`dgenv.Client.games`'s answer): names, parameters and spaces."""
        return [GameInfo.from_wire(g) for g in _capi.call_json(self._lib.dg_games)["games"]]

    def load_policies(self, directory: Union[str, Path]) -> list[dict[str, Any]]:
        """Load every policy in ``directory`` and return :meth:`policies`.

        Raises:
            BadRequest: the directory cannot be read or a policy is invalid.
        """
        raw = str(directory).encode()
        err = _capi.errbuf()
        _capi.check(self._lib.dg_load_policies(raw, len(raw), err, _capi.ERRCAP), err)
        return self.policies()

    def policies(self) -> list[dict[str, Any]]:
        """The loaded policies (GET /v1/policies's entries: name, bot, game, obs_size, sha256...)."""
        return _capi.call_json(self._lib.dg_policies)

    def act(
        self,
        policy: str,
        obs: np.ndarray,
        mask: np.ndarray,
        *,
        greedy: bool = True,
        temperature: float = 1.0,
        seed: int = 0,
        logits: bool = False,
    ) -> Union[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """A loaded policy's actions for observations ``[N, D]`` and masks ``[N, A]``.

        The in-process ``POST /v1/policies/{name}/act``: greedy by default, or
        sampled from the masked softmax at ``temperature`` with ``seed``. A is
        the policy's game's action count (its ``num_actions`` in
        :meth:`policies`: 90 for the card game), asked of the engine at each
        call (a name reloaded with another game's file has another A).
        Returns the ``[N]`` int32 actions, and the ``[N, A]`` logits too when
        ``logits`` is True.

        Raises:
            ValueError: ``mask`` is not ``[N, A]``.
            NotFound: no policy of that name is loaded.
            BadRequest: a buffer does not fit the policy the engine acts
                with (one reloaded meanwhile), or a bad mask row.
        """
        o = act_observations(obs)
        n = o.shape[0]
        m = np.ascontiguousarray(mask, dtype=np.uint8)
        name = policy.encode()
        shape = (ctypes.c_int64 * 2)()
        na = 0  # not loaded: the engine answers not_found
        if self._lib.dg_policy_shape(name, len(name), shape, ctypes.sizeof(shape)) == 0:
            na = int(shape[1])
            if m.shape != (n, na):
                raise ValueError(f"mask shape {m.shape}: want ({n}, {na})")
        out = np.empty(n, dtype=np.int32)
        lg = np.empty((n, na), dtype=np.float32) if logits else None
        err = _capi.errbuf()
        # Every buffer goes with its length: the engine checks them against
        # the policy it acts with, not against the shape asked above.
        _capi.check(
            self._lib.dg_policy_act(
                name, len(name), o.ctypes.data, o.nbytes, m.ctypes.data, m.nbytes, n, int(bool(greedy)),
                float(temperature), int(seed) & (2**64 - 1), out.ctypes.data, out.nbytes,
                None if lg is None else lg.ctypes.data, 0 if lg is None else lg.nbytes, err, _capi.ERRCAP,
            ),
            err,
        )
        if lg is not None:
            return out, lg
        return out

    def make(
        self,
        players: Optional[int] = None,
        num_envs: int = 1,
        seed: Optional[int] = None,
        learner_seats: Optional[Sequence[int]] = None,
        opponent: Optional[str] = None,
        reward: str = "points",
        *,
        game: GameLike = None,
        deals: Optional[int] = None,
        first_dealer: Optional[int] = None,
        obs_dtype: Optional[DTypeLike] = np.float32,
        packing: Optional[str] = None,
        opponents: Optional[Sequence[Optional[str]]] = None,
        workers: int = 0,
    ) -> "LocalBatchEnv":
        """Create ``num_envs`` games in this process: :meth:`dgenv.Client.make`'s arguments.

        ``workers`` is the number of goroutines stepping the batch (0: one per core).

        Raises:
            BadRequest: a parameter is out of range (the message names it).
            TooLarge: the env alone could need more than ``memory_budget``.
            LimitError: with the live in-process envs it could pass ``memory_budget``.
        """
        body = create_body(
            game, players, num_envs, seed, learner_seats, opponent, reward, deals, first_dealer, packing, opponents
        )
        body["workers"] = int(workers)
        if self.memory_budget is not None:
            body["memory_budget"] = self.memory_budget
        if seed is not None:
            body["seed"] = _seed(seed)
        if obs_dtype is not None and np.dtype(obs_dtype) == np.float32 and packing in (None, "none"):
            body["obs_dtype"] = "<f4"  # the engine converts while copying out: no numpy pass
        raw = json.dumps(body).encode()
        err = _capi.errbuf()
        h = _capi.check(self._lib.dg_vec_new(raw, len(raw), err, _capi.ERRCAP), err)
        try:
            info = _capi.call_json(self._lib.dg_vec_info, h, errbuf=err)
            want = body["game"].get("name")
            got = Spec.from_wire(info["spec"]).game
            if want is not None and got != want:  # a library that does not read game.name
                raise BadRequest(f"game.name {want!r}: this libdgenv does not read game.name (it made {got!r}); play other games over HTTP",
                                 status=400, code="bad_request", details={"field": "game.name"})
        except BaseException:
            self._lib.dg_free(h)
            raise
        return LocalBatchEnv(self, h, info, obs_dtype=obs_dtype)

    def close(self) -> None:
        """Nothing to close (envs free themselves on :meth:`LocalBatchEnv.close`)."""


class LocalBatchEnv(BatchEnv):
    """N games stepped by the engine in this process (:class:`~dgenv.base.BatchEnv` in process).

    Made by :meth:`LocalClient.make`. ``session`` is ``"inproc:<handle>"``.
    Answers of small batches share blocks of about 256 KB (one allocation per
    block, not per tensor): an array kept from a Batch keeps its block alive,
    so copy what you keep long from a loop of many small steps.
    ``step_async`` runs the step on a helper thread (Go works without the
    GIL), so the caller can work while it runs; ``step_wait`` returns it.

    May be shared between threads: every call holds the env's lock for its
    whole length (actions copied in, the engine's step, the answer's
    buffers), so calls from several threads run one at a time, each whole,
    in no promised order. While a ``step_async`` or ``reset_async`` is in
    flight every other call raises :class:`~dgenv.errors.DgenvError` until
    ``step_wait``; after :meth:`close` (by any thread) every call raises
    ``DgenvError("env is closed")``.
    """

    def __init__(self, client: LocalClient, handle: int, info: dict, *, obs_dtype: Optional[DTypeLike] = np.float32):
        spec = Spec.from_wire(info["spec"])
        if spec.obs.dtype != np.uint8 and info["spec"].get("packing", "none") in ("none", None):
            # The engine converts to float32 while copying out (a transport
            # detail): the observation's layout is the game's uint8, as over HTTP.
            spec = dataclasses.replace(spec, obs=dataclasses.replace(spec.obs, dtype=np.dtype("<u1")))
        super().__init__(client, f"inproc:{handle}", spec, obs_dtype)
        self._packed = self.spec.obs.packed
        self._lib = client._lib
        self._h = handle
        self._err = ctypes.create_string_buffer(_capi.ERRCAP)
        arena = info["arena"]
        self._abytes = int(arena["bytes"])
        self._pieces = [(p["name"], int(p["offset"]), np.dtype(p["dtype"]), tuple(p["shape"])) for p in arena["pieces"]]
        self._per_block = max(1, _BLOCK_BYTES // max(self._abytes, 1))
        self._views: dict[str, np.ndarray] = {}
        self._base = 0
        self._next = self._per_block  # forces a new block on first use
        self._act = np.zeros(self.spec.num_envs, dtype=np.int32)
        self._act_ptr = self._act.ctypes.data
        self._act_bytes = self._act.nbytes
        self._pool: Optional[ThreadPoolExecutor] = None
        self._pending: Optional[Future] = None
        # Held by every call for its whole length: the arena blocks, the
        # actions buffer, the error buffer and `last` are one thread's at a time.
        self._lock = threading.Lock()

    # -- answers -------------------------------------------------------------
    def _slot(self) -> int:
        """A fresh arena: its index in the current block (whose per-tensor views are in ``_views``)."""
        if self._next >= self._per_block:
            k, ab = self._per_block, self._abytes
            block = np.empty(k * ab, np.uint8)
            self._base = block.ctypes.data
            # One view per tensor over the whole block, slot-major: a step's
            # arrays are then one index each (cheap for small batches).
            views = {}
            for name, o, dtype, shape in self._pieces:
                inner = np.ndarray(shape, dtype, buffer=block, offset=o)
                v = np.ndarray((k, *shape), dtype, buffer=block, offset=o, strides=(ab, *inner.strides))
                views[name] = v.view(np.bool_) if name in ("mask", "done") else v
            self._views = views
            self._next = 0
        i = self._next
        self._next += 1
        return i

    def _answer(self, i: int) -> Batch:
        """The Batch in slot ``i`` of the current block (kept as :attr:`last`)."""
        v = self._views
        pk = self._packed
        if pk is not None:
            obs, mask = pk.unpack(v["obs_bits"][i], v["obs_extra"][i], v["mask_bits"][i], self.spec.obs.size)
        else:
            obs, mask = v["obs"][i], v["mask"][i]
        want = self.obs_dtype
        if want is not None and obs.dtype != want:
            obs = obs.astype(want)
        # Nothing is lost in process: never truncated.
        b = Batch(obs, mask, v["player"][i], v["rewards"][i], v["done"][i], v["scores"][i], v["episode"][i], self._no_trunc)
        self.last = b
        return b

    def _check_open(self) -> None:
        if self._closed:
            raise DgenvError("env is closed")
        if self._pending is not None:
            raise DgenvError("a step_async is in flight: call step_wait first")

    # _reset and _step run with the lock held.
    def _reset(self, seed: Optional[int]) -> Batch:
        s = 0 if seed is None else _seed(seed)
        i = self._slot()
        _capi.check(
            self._lib.dg_vec_reset(self._h, s, seed is not None, self._base + i * self._abytes, self._abytes,
                                   self._err, _capi.ERRCAP),
            self._err,
        )
        return self._answer(i)

    def _step(self) -> Batch:
        i = self._slot()
        if self._lib.dg_vec_step(self._h, self._act_ptr, self._act_bytes, self._base + i * self._abytes, self._abytes,
                                 self._err, _capi.ERRCAP) < 0:
            _capi.raise_error(self._err)
        return self._answer(i)

    def _locked(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` with the lock held (a step_async's helper thread)."""
        with self._lock:
            if self._closed:
                raise DgenvError("env is closed")
            return fn(*args)

    def _load_actions(self, actions: Any) -> None:
        n = self.spec.num_envs
        a = action_array(actions, n)  # shape [N], integers: as over HTTP
        dt = a.dtype
        if dt in _SAFE_ACTION_DTYPES:  # every value fits int32: the engine checks them
            self._act[:] = a
            return
        # Wider integers: anything outside the action ids and the skip (-1) is
        # refused here, with the engine's error, rather than wrapped into int32.
        top = self.spec.num_actions - 1
        bad = [int(i) for i in range(n) if not -1 <= a[i] <= top] if n <= 8 else np.flatnonzero((a < -1) | (a > top)).tolist()
        if bad:
            i = bad[0]
            legal = np.flatnonzero(self.last.mask[i]).tolist() if self.last is not None else []
            raise IllegalActionError(
                f"env {i}: illegal action {int(a[i])} (legal: {legal}); no env was stepped",
                status=422, code="illegal_action",
                details={"env": i, "action": int(a[i]), "legal": legal},
            )
        self._act[:] = a

    # -- the protocol --------------------------------------------------------
    def reset(self, seed: Optional[int] = None) -> Batch:
        """Start a new game in every env (see :meth:`dgenv.BatchEnv.reset`)."""
        with self._lock:
            self._check_open()
            return self._reset(seed)

    def step(self, actions: Any) -> Batch:
        """Play ``actions[i]`` in env i (see :meth:`dgenv.BatchEnv.step`).

        Raises:
            IllegalActionError: an action is not legal (``.env``, ``.action``,
                ``.legal``); nothing changed.
            ValueError: ``actions`` does not have shape ``[N]``, or is not of an integer dtype.
        """
        with self._lock:
            self._check_open()
            self._load_actions(actions)
            return self._step()

    def _submit(self, fn: Any, *args: Any) -> None:
        # Called with the lock held: the helper thread takes it once the
        # caller lets it go, and _pending refuses every other call meanwhile.
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dgenv-inproc")
        self._pending = self._pool.submit(self._locked, fn, *args)

    def step_async(self, actions: Any) -> None:
        """Start a step on a helper thread and return at once; :meth:`step_wait` returns its Batch."""
        with self._lock:
            self._check_open()
            self._load_actions(actions)
            self._submit(self._step)

    def reset_async(self, seed: Optional[int] = None) -> None:
        """Start a reset on a helper thread; :meth:`step_wait` returns its Batch."""
        with self._lock:
            self._check_open()
            self._submit(self._reset, seed)

    def step_wait(self) -> Batch:
        """The Batch of the last :meth:`step_async` or :meth:`reset_async` (raises its error, if any)."""
        f = self._pending
        if f is None:
            raise DgenvError("no step_async or reset_async in flight")
        try:
            return f.result()
        finally:
            with self._lock:
                if self._pending is f:
                    self._pending = None

    def random_actions(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """A uniformly random legal action for every env's current state, drawn by the engine.

        See :meth:`dgenv.BatchEnv.random_actions`. In process the draws are
        made in Go (no Python work per env, the GIL released) from a generator
        seeded by ``make``'s seed and re-seeded by ``reset(seed)``: the same
        seeds give the same actions. ``out``, when given, must be a C-contiguous
        int32 array of shape ``[N]``; it is filled and returned (no allocation).
        """
        if out is None:
            out = np.empty(self.spec.num_envs, dtype=np.int32)
        elif (type(out) is not np.ndarray or out.dtype != np.int32 or out.shape != (self.spec.num_envs,)
              or not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError(f"out: want a writeable C-contiguous int32 array of shape ({self.spec.num_envs},)")
        with self._lock:
            self._check_open()
            if self._lib.dg_vec_random_actions(self._h, out.ctypes.data, out.nbytes, self._err, _capi.ERRCAP) < 0:
                _capi.raise_error(self._err)
        return out

    def record(self, k: int) -> dict[str, Any]:
        """Game records of env ``k``: ``{"finished": record or None, "current": record}`` (as over HTTP)."""
        with self._lock:
            self._check_open()
            return _capi.call_json(self._lib.dg_vec_record, self._h, record_index(k, self.spec.num_envs), errbuf=self._err)

    def close(self) -> None:
        """Free the engine's batch (waiting for a call in flight on it). Idempotent; any thread may call it."""
        f = self._pending
        if f is not None:
            try:
                f.result()
            except Exception:
                pass
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._pending = None
            pool, self._pool = self._pool, None
            self._lib.dg_free(self._h)
        if pool is not None:
            pool.shutdown(wait=True)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _seed(seed: Any) -> int:
    """A seed as the server takes it: an integer 0..2^64-1 (BadRequest otherwise)."""
    v = int(seed)
    if not 0 <= v < 2**64:
        raise BadRequest(f"seed = {v}: want an integer 0..{2**64 - 1}", status=400, code="bad_request",
                         details={"field": "seed"})
    return v


def local(policies: Union[str, Path, None] = None, *, memory_budget: Optional[int] = None) -> LocalClient:
    """A client running the engine in this process (see :class:`LocalClient`).

    ``memory_budget``: bytes the live in-process envs may come to hold at
    worst (None: 2 GiB, the server's default); :meth:`LocalClient.make`
    refuses an env past it.
    """
    return LocalClient(policies=policies, memory_budget=memory_budget)
