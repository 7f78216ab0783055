"""The interface every transport implements: :class:`EnvClient`, :class:`BatchEnv`, :class:`Batch`.

Two transports serve it, siblings under these two abstract classes:

==================  ======================================  =====================================
                    over HTTP (:mod:`dgenv.client`)         in this process (:mod:`dgenv.inproc`)
==================  ======================================  =====================================
client              :class:`~dgenv.client.Client`            :class:`~dgenv.inproc.LocalClient`
batch env           :class:`~dgenv.client.HttpBatchEnv`      :class:`~dgenv.inproc.LocalBatchEnv`
==================  ======================================  =====================================

What does not depend on the transport is written here once: the create's
body (:func:`create_body`), the checks of a step's actions
(:func:`action_array`), of an env index (:func:`record_index`) and of a
policy's observations (:func:`act_observations`), a batch env's sizes,
sections and context manager, a client's :meth:`EnvClient.game`.
:mod:`dgenv._clients` chooses a client; an adapter takes any
:class:`EnvClient` and checks ``isinstance(env, BatchEnv)``, never a
transport's class.
"""

from __future__ import annotations

import abc
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .errors import BadRequest
from .spec import DEFAULT_GAME, GameInfo, Spec

__all__ = [
    "EnvClient", "BatchEnv", "Batch", "GameLike", "ActionsLike", "game_body", "create_body", "act_observations",
    "action_array", "record_index",
]

ActionsLike = Union[np.ndarray, Sequence[int], ArrayLike]

# A game as make() takes it: a registered name, {"name": ..., **params}, or
# None (the card game, "david_goliath").
GameLike = Union[str, Mapping[str, Any], None]


class Batch(NamedTuple):
    """One answer of reset or step: arrays over the N envs of a session.

    Attributes:
        obs: ``[N, D]`` observation of the seat to act (float32 by default, or the
            wire dtype, see ``obs_dtype``).
        mask: ``[N, 90]`` bool, True where the action is legal for that seat.
        player: ``[N]`` int8, absolute seat to act.
        rewards: ``[N, P]`` float32, reward of each seat (absolute order) in this step.
        done: ``[N]`` bool, True where this step ended a game (the env already
            carries the next game's first observation).
        scores: ``[N, P]`` int32, final totals of the game that just ended (0 where not done).
        episode: ``[N]`` int64, games finished in that env so far.
        truncated: ``[N]`` bool, True where the game that was in flight was
            lost rather than finished: the server restarted (or the session
            expired) and the env re-created its session (``recover``); the
            env already holds a new game's first observation. All False
            otherwise (a read-only array shared between batches).

    Arrays decoded straight from the wire are views of the answer's bytes (no
    copy; the small multi-byte ones that msgpack left unaligned are copied).
    Each answer has its own buffer, so a Batch stays valid after later steps.
    """

    obs: np.ndarray
    mask: np.ndarray
    player: np.ndarray
    rewards: np.ndarray
    done: np.ndarray
    scores: np.ndarray
    episode: np.ndarray
    truncated: np.ndarray




def game_body(
    game: GameLike = None,
    players: Optional[int] = None,
    deals: Optional[int] = None,
    first_dealer: Optional[int] = None,
) -> dict[str, Any]:
    """The create's ``game`` object: ``game`` (a name or ``{"name", **params}``)
    with the card game's parameters given as make()'s keywords added.

    Raises:
        TypeError: ``game`` is neither a string, a mapping nor None.
        ValueError: a parameter is given twice with different values.
    """
    if game is None:
        g: dict[str, Any] = {}
    elif isinstance(game, str):
        g = {"name": game}
    elif isinstance(game, Mapping):
        g = dict(game)
    else:
        raise TypeError(f"game: want a name, a mapping {{'name': ..., params}} or None, got {type(game).__name__}")
    for k, v in (("players", players), ("deals", deals), ("first_dealer", first_dealer)):
        if v is None:
            continue
        if k in g and g[k] != v:
            raise ValueError(f"{k} = {v} and game[{k!r}] = {g[k]}: give it once")
        g[k] = int(v)
    return g


def create_body(
    game: GameLike,
    players: Optional[int],
    num_envs: int,
    seed: Optional[int],
    learner_seats: Optional[Sequence[int]],
    opponent: Optional[str],
    reward: str,
    deals: Optional[int],
    first_dealer: Optional[int],
    packing: Optional[str],
    opponents: Optional[Sequence[Optional[str]]] = None,
) -> dict[str, Any]:
    """The body of ``POST /v1/sessions`` for make()'s arguments (both transports build it here)."""
    body: dict[str, Any] = {
        "game": game_body(game, players, deals, first_dealer),
        "num_envs": int(num_envs),
        "reward": reward,
    }
    if seed is not None:
        body["seed"] = int(seed)
    if learner_seats is not None:
        body["learner_seats"] = [int(s) for s in learner_seats]
    if opponent is not None:
        body["opponent"] = opponent
    if opponents is not None:  # a bot per seat, None on the seats the caller plays
        body["opponents"] = [o or None for o in opponents]
    if packing is not None:
        body["packing"] = packing
    return body


def act_observations(obs: np.ndarray) -> np.ndarray:
    """Observations for a policy's ``act`` as the engine writes them: ``[N, D]`` uint8
    (any numeric dtype holding the engine's small non-negative integers is converted).

    Raises:
        ValueError: not 2-D, or values that are not such integers.
    """
    o = np.ascontiguousarray(obs)
    if o.ndim != 2:
        raise ValueError(f"obs shape {o.shape}: want [N, D]")
    if o.dtype != np.uint8:
        if not np.all((o >= 0) & (o <= 255) & (np.mod(o, 1) == 0)):
            raise ValueError("obs: want the engine's small non-negative integers")
        o = o.astype(np.uint8)
    return o


def action_array(actions: ActionsLike, n: int) -> np.ndarray:
    """``actions`` as a step takes them, in either transport: shape exactly ``[n]`` (a
    ``[2, 2]`` array is not 4 actions) of an integer dtype. Floats are refused, -1.0
    included: an action is a card id or the skip -1, never a number that rounds to one.

    Raises:
        ValueError: another shape, or a dtype that is not an integer one.
    """
    a = actions if type(actions) is np.ndarray else np.asarray(actions)
    if a.shape != (n,):
        raise ValueError(f"actions shape {a.shape}, want ({n},)")
    if a.dtype.kind not in "iu":
        raise ValueError(f"actions dtype {a.dtype}: want integers (card ids, or -1 to skip an env)")
    return a


def record_index(k: Any, n: int) -> int:
    """An env index for ``record``, in either transport: a Python or numpy integer
    0..n-1 (not a bool, a float or a string, and never wrapped to fit).

    Raises:
        BadRequest: anything else (``details["field"] == "k"``), as the server answers.
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise BadRequest(f"env {k!r}: want an integer 0..{n - 1}", status=400, code="bad_request", details={"field": "k"})
    i = int(k)
    if not 0 <= i < n:
        raise BadRequest(f"env {i}: want an integer 0..{n - 1}", status=400, code="bad_request", details={"field": "k"})
    return i


class EnvClient(abc.ABC):
    """What makes batch envs: a server (:class:`~dgenv.client.Client`) or this process
    (:class:`~dgenv.inproc.LocalClient`). :func:`dgenv.connect`, :func:`dgenv.serve` and
    :func:`dgenv.local` return one; every adapter's ``client=`` takes one.

    Attributes:
        url: where the envs run (``"inproc:"`` for this process).
    """

    url: str

    @abc.abstractmethod
    def healthy(self) -> bool:
        """True when the engine answers."""

    @abc.abstractmethod
    def ready(self) -> bool:
        """True when the engine accepts new envs."""

    @abc.abstractmethod
    def games(self) -> list[GameInfo]:
        """The games it plays: names, parameters and spaces (``GET /v1/games``)."""

    def game(self, name: str = DEFAULT_GAME) -> GameInfo:
        """The entry of :meth:`games` called ``name`` (KeyError if there is no such game)."""
        for g in self.games():
            if g.name == name:
                return g
        raise KeyError(f"no game {name!r} on {self!r}")

    @abc.abstractmethod
    def policies(self) -> list[dict[str, Any]]:
        """The trained policies loaded as opponents ``"policy:<name>"`` (``GET /v1/policies``'s entries)."""

    @abc.abstractmethod
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
        """A loaded policy's ``[N]`` int32 actions for observations ``[N, D]`` and masks ``[N, A]``
        (and the ``[N, A]`` float32 logits when ``logits``): greedy, or sampled at ``temperature``."""

    @abc.abstractmethod
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
    ) -> "BatchEnv":
        """``num_envs`` games stepped together (see :meth:`dgenv.client.Client.make` for the arguments;
        each transport adds its own keywords)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Let go of what the client holds (the envs it made close themselves)."""

    def __enter__(self) -> "EnvClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BatchEnv(abc.ABC):
    """N games of one game stepped together: :meth:`reset` and :meth:`step` return a :class:`Batch`.

    Made by an :class:`EnvClient`'s ``make``: an :class:`~dgenv.client.HttpBatchEnv`
    (a server session) or a :class:`~dgenv.inproc.LocalBatchEnv` (this process).
    Both give the same batches for the same seeds and actions. A step the
    engine refuses (e.g. :class:`~dgenv.errors.IllegalActionError`) changes
    nothing, so the env stays usable.

    Attributes:
        client: the client that made it.
        session: its name (``"inproc:<handle>"`` in process).
        spec: sizes, seats and observation layout.
        obs_dtype: dtype of :attr:`Batch.obs` (None: the engine's uint8).
        last: the most recent :class:`Batch` (None before the first reset).
    """

    def __init__(self, client: Any, session: str, spec: Spec, obs_dtype: Optional[DTypeLike] = np.float32) -> None:
        self.client = client
        self.session = session
        self.spec = spec
        self.obs_dtype: Optional[np.dtype] = None if obs_dtype is None else np.dtype(obs_dtype)
        self._closed = False
        self._by_name = {s.name: s for s in spec.obs.sections}
        self.last: Optional[Batch] = None
        # Batch.truncated where nothing was lost: one read-only array for every batch.
        self._no_trunc = np.zeros(spec.num_envs, dtype=np.bool_)
        self._no_trunc.setflags(write=False)

    # -- sizes ---------------------------------------------------------------
    @property
    def num_envs(self) -> int:
        """N, the number of games."""
        return self.spec.num_envs

    @property
    def players(self) -> int:
        """P, seats per table."""
        return self.spec.players

    @property
    def num_actions(self) -> int:
        """Size of the action space (the spec's; 90 for the card game)."""
        return self.spec.num_actions

    @property
    def game(self) -> str:
        """The registered name of the game the session plays."""
        return self.spec.game

    @property
    def obs_size(self) -> int:
        """D, elements of one observation."""
        return self.spec.obs.size

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(session={self.session!r}, game={self.game!r}, num_envs={self.num_envs}, players={self.players}, "
            f"learner_seats={list(self.spec.learner_seats)}, opponent={self.spec.opponent!r})"
        )

    def section(self, obs: np.ndarray, name: str) -> np.ndarray:
        """View of section ``name`` of observations ``obs`` (``[..., D]``).

        Returns ``obs[..., offset:offset+size]`` reshaped to ``[..., *shape]``
        (a view, no copy). ``env.section(batch.obs, "current_trick")`` is ``[N, P, 90]``.
        """
        s = self._by_name.get(name)
        if s is None:
            raise KeyError(f"no observation section {name!r}; have {list(self._by_name)}")
        o = np.asarray(obs)
        return o[..., s.offset : s.offset + s.size].reshape(o.shape[:-1] + s.shape)

    # -- the protocol --------------------------------------------------------
    @abc.abstractmethod
    def reset(self, seed: Optional[int] = None) -> Batch:
        """Start a new game in every env.

        Args:
            seed: re-seed every env's streams from (seed, env index) and zero the
                episode counters; None continues the current streams.
        """

    @abc.abstractmethod
    def step(self, actions: ActionsLike) -> Batch:
        """Play ``actions[i]`` (an action id 0..num_actions-1, or -1 to skip env i) for the seat to act in env i.

        Raises:
            IllegalActionError: an action is not legal (``.env``, ``.action``,
                ``.legal`` say which); nothing changed.
            ValueError: ``actions`` does not have shape ``[N]``, or is not of an integer dtype.
        """

    @abc.abstractmethod
    def step_async(self, actions: ActionsLike) -> None:
        """Start a step and return at once; :meth:`step_wait` returns its Batch."""

    @abc.abstractmethod
    def reset_async(self, seed: Optional[int] = None) -> None:
        """Start a reset and return at once; :meth:`step_wait` returns its Batch."""

    @abc.abstractmethod
    def step_wait(self) -> Batch:
        """The Batch of the last :meth:`step_async` or :meth:`reset_async` (raises its error, if any)."""

    @abc.abstractmethod
    def random_actions(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """A uniformly random legal action for every env's current state: int32 ``[N]``
        (``out``, a writeable int32 array of shape ``[N]``, is filled and returned when given)."""

    @abc.abstractmethod
    def record(self, k: int) -> dict[str, Any]:
        """Game records of env ``k``: ``{"finished": record or None, "current": record}`` (API.md, "Game records")."""

    @abc.abstractmethod
    def close(self) -> None:
        """Free the env's games. Idempotent."""

    def __enter__(self) -> "BatchEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
