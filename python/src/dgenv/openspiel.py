"""OpenSpiel: a registered pyspiel game, and an ``rl_environment``-style env.

**The pyspiel game.** With open_spiel installed, importing this module
registers ``python_david_goliath`` (parameters ``players`` 3..6, ``deals``
(0: as many as players) and ``first_dealer``), played by the Go engine in
this process (:mod:`dgenv._capi`), so OpenSpiel's own algorithms run on it::

    import pyspiel
    import dgenv.openspiel                      # registers the game
    game = pyspiel.load_game("python_david_goliath(players=4)")
    state = game.new_initial_state()            # a chance node: the deal

Chance nodes deal every deal card by card (card j to the seat j+1 places left
of the dealer; each undealt card equally likely); the players' actions are
card ids 0..89 as everywhere in dgenv. Observations and information states
exist for every player at every node and show only what that player knows:
``observation_tensor`` is the batch API's observation (same sections, as
float32); ``information_state_tensor`` adds the deal's play sequence (for
each card, the trick it was played in and by whom), and
``information_state_string`` the whole history the player saw. States clone,
serialize (``game.deserialize_state``), and ``resample_from_infostate`` deals
the cards a player has not seen anew, consistently with everything it saw
(for ISMCTS). Rewards are each deal's points when it ends; returns are the
totals so far. With ``terminal_rewards=True`` (OpenSpiel's MCTSBot wants
terminal rewards) both are 0 until the game ends, and then the totals.

**The rl_environment-style env** (no open_spiel needed) is below.

:class:`Environment` mirrors ``open_spiel.python.rl_environment.Environment``
for one game with every seat played by the caller: ``reset()`` and
``step([action])`` return a :class:`TimeStep` whose ``observations`` hold, per
player, ``info_state`` (the flat observation as a list of floats) and
``legal_actions``, plus ``current_player``; ``rewards`` and ``discounts`` are
per player and ``step_type`` is FIRST, MID or LAST. So loops written for
OpenSpiel agents run unchanged::

    env = Environment(client)
    ts = env.reset()
    while not ts.last():
        p = ts.observations["current_player"]
        ts = env.step([agents[p].step(ts).action])
    for a in agents:
        a.step(ts)

The server encodes only the observation of the seat to act, so
``info_state[p]`` of another player is the one p saw at its last turn (zeros
before its first), and ``legal_actions[p]`` is empty for it. After a LAST step,
the next ``step`` call starts a new game (like OpenSpiel's).

When the game in flight was lost (the server restarted or the session expired,
and the client re-created the session: ``Batch.truncated``), ``step`` returns
LAST with rewards 0 and the per-step discount rather than 0 (dm_env's
truncation: the game did not end) and ``env.truncated`` is True until the
next reset.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np
from numpy.typing import DTypeLike

from ._common import ClientLike, resolve_client
from .client import Batch, BatchEnv, GameLike
from .options import EnvOptions, adapter_options

__all__ = ["StepType", "TimeStep", "Environment", "GAME_NAME"]

GAME_NAME = "python_david_goliath"


class StepType(enum.Enum):
    """Where a TimeStep lies in an episode (OpenSpiel's rl_environment.StepType)."""

    FIRST = 0  # the first TimeStep of a game
    MID = 1  # any TimeStep that is neither first nor last
    LAST = 2  # the game ended

    def first(self) -> bool:
        """True for FIRST."""
        return self is StepType.FIRST

    def mid(self) -> bool:
        """True for MID."""
        return self is StepType.MID

    def last(self) -> bool:
        """True for LAST."""
        return self is StepType.LAST


class TimeStep(NamedTuple):
    """What the environment returns (OpenSpiel's rl_environment.TimeStep).

    Attributes:
        observations: ``{"info_state": [per player list], "legal_actions": [per player list],
            "current_player": int, "serialized_state": None}``.
        rewards: per-player rewards of this step (None at FIRST).
        discounts: per-player discounts (None at FIRST, 0 at LAST).
        step_type: a :class:`StepType`.
    """

    observations: dict[str, Any]
    rewards: Optional[list[float]]
    discounts: Optional[list[float]]
    step_type: StepType

    def first(self) -> bool:
        """True at the first step of a game."""
        return self.step_type == StepType.FIRST

    def mid(self) -> bool:
        """True between the first and the last step."""
        return self.step_type == StepType.MID

    def last(self) -> bool:
        """True when the game has ended."""
        return self.step_type == StepType.LAST

    def is_simultaneous_move(self) -> bool:
        """Always False: the game is turn-based."""
        return self.observations["current_player"] == -2

    def current_player(self) -> int:
        """Seat to act (-4, OpenSpiel's terminal id, after the game ended)."""
        return self.observations["current_player"]


TERMINAL_PLAYER = -4  # pyspiel.PlayerId.TERMINAL


class Environment:
    """One game played through the server, with OpenSpiel's rl_environment interface.

    Args:
        client: a :class:`dgenv.Client`, a server URL, or None for the shared local server.
        players: seats per table (the card game: 3..6; None: the game's default, 4).
        reward: ``"points"`` or ``"zero_sum"``.
        deals: deals per game (default: as many as players).
        seed: seed of the first game.
        discount: per-step discount reported in ``discounts``.
        obs_dtype: dtype of ``info_state`` (float32 by default; ``"uint8"`` is the wire's).
        packing: ``"bits"`` to have obs and mask travel bit-packed.
        game: the game (a name or ``{"name": ..., **params}``; None: the card game).
        options: an :class:`~dgenv.EnvOptions` holding any of these settings
            (a keyword argument that differs from its default wins).
    """

    def __init__(
        self,
        client: ClientLike = None,
        *,
        players: Optional[int] = None,
        reward: str = "points",
        deals: Optional[int] = None,
        seed: Optional[int] = None,
        discount: float = 1.0,
        obs_dtype: Optional[DTypeLike] = np.float32,
        packing: Optional[str] = None,
        game: GameLike = None,
        options: Optional[EnvOptions] = None,
    ) -> None:
        o = adapter_options(
            options, Environment.__init__, locals(),
            unsupported=("opponent", "learner_seats", "reward_scale", "illegal_action", "illegal_action_reward"),
        )
        seed = o.seed
        self.client = resolve_client(o.client)
        self.env: BatchEnv = self.client.make(**o.make_kwargs(num_envs=1))
        self._num_players = self.env.players
        self._discount = float(discount)
        self._seed = seed
        self._seen = np.zeros((self._num_players, self.env.obs_size), dtype=self.env.obs_dtype or self.env.spec.obs.dtype)
        self._legal: list[list[int]] = [[] for _ in range(self._num_players)]
        self._should_reset = True
        self._player = 0
        self.truncated = False  # the last game was lost with its session (see the module doc)

    # -- OpenSpiel's attributes ---------------------------------------------
    @property
    def num_players(self) -> int:
        """Seats at the table."""
        return self._num_players

    @property
    def is_turn_based(self) -> bool:
        """Always True."""
        return True

    def observation_spec(self) -> dict[str, Any]:
        """Sizes of the observation fields (OpenSpiel's format)."""
        return {
            "info_state": (self.env.obs_size,),
            "legal_actions": (self.env.num_actions,),
            "current_player": (),
            "serialized_state": (),
        }

    def action_spec(self) -> dict[str, Any]:
        """The action range: card ids 0..89."""
        return {"num_actions": self.env.num_actions, "min": 0, "max": self.env.num_actions - 1, "dtype": int}

    def seed(self, seed: Optional[int] = None) -> None:
        """Seed of the next reset."""
        self._seed = seed

    # -- play ----------------------------------------------------------------
    def _observations(self, current: int) -> dict[str, Any]:
        return {
            "info_state": [row.tolist() for row in self._seen],
            "legal_actions": [list(x) for x in self._legal],
            "current_player": current,
            "serialized_state": None,
        }

    def _take(self, b: Batch) -> None:
        p = int(b.player[0])
        self._player = p
        self._seen[p] = b.obs[0]
        self._legal = [[] for _ in range(self._num_players)]
        self._legal[p] = np.flatnonzero(b.mask[0]).tolist()

    def reset(self) -> TimeStep:
        """Start a new game and return its FIRST TimeStep."""
        seed, self._seed = self._seed, None
        b = self.env.reset(seed=seed)
        self._seen[:] = 0
        self._take(b)
        self._should_reset = False
        self.truncated = False
        return TimeStep(self._observations(self._player), None, None, StepType.FIRST)

    def step(self, actions: Sequence[int]) -> TimeStep:
        """Play ``actions[0]`` for the current player; after LAST, start a new game instead.

        Raises:
            IllegalActionError: the action is not legal (nothing changed).
        """
        if self._should_reset:
            return self.reset()
        a = int(np.asarray(actions).reshape(-1)[0])
        b = self.env.step(np.array([a], dtype=np.int16))
        if b.truncated[0]:  # the game was lost with its session: it ends here, truncated
            self._should_reset = self.truncated = True
            self._legal = [[] for _ in range(self._num_players)]
            zeros, discounts = [0.0] * self._num_players, [self._discount] * self._num_players
            return TimeStep(self._observations(TERMINAL_PLAYER), zeros, discounts, StepType.LAST)
        rewards = [float(x) for x in b.rewards[0]]
        if b.done[0]:
            self._should_reset = True
            self._legal = [[] for _ in range(self._num_players)]
            self.last_scores = [int(x) for x in b.scores[0]]
            return TimeStep(
                self._observations(TERMINAL_PLAYER), rewards, [0.0] * self._num_players, StepType.LAST
            )
        self._take(b)
        return TimeStep(
            self._observations(self._player), rewards, [self._discount] * self._num_players, StepType.MID
        )

    def close(self) -> None:
        """End the server session."""
        self.env.close()


# -- the pyspiel game ---------------------------------------------------------
#
# One bridge serves every Go game that has states with explicit chance nodes
# (env.ChanceGame): its sizes, utilities, tensor shapes, chance outcomes and
# action names all come from the engine (dg_state_sizes and the dg_state_*
# calls), so nothing below knows a game's rules. A game without explicit
# chance states is not bridged (the engine refuses it by name): see
# docs/python.md.

# The card game's pyspiel game: its short name, the engine's name for it and
# its documented parameters (pyspiel needs them before the engine is loaded).
_CARD_GO_NAME = "david_goliath"
_CARD_PARAMS = {"players": 4, "deals": 0, "first_dealer": 0}
_CARD_PLAYERS = (3, 6)
_CARD_LONG_NAME = "David & Goliath (dgenv's Go engine)"

try:  # the game exists only where open_spiel is installed
    import pyspiel as _pyspiel
except ImportError:  # pragma: no cover - depends on the environment
    _pyspiel = None

if _pyspiel is not None:
    import base64 as _base64
    import ctypes as _ctypes
    import json as _json
    import pickle as _pickle
    import threading as _threading

    from open_spiel.python.algorithms import mcts as _mcts

    from . import _capi
    from .errors import DgenvError as _DgenvError

    _HEAD = 4  # a status: player, terminal, count, chance run, then the legal actions
    _tls = _threading.local()

    def _scratch() -> Any:
        """Per-thread buffers (the GIL is released during each call)."""
        s = getattr(_tls, "s", None)
        if s is None:
            s = _tls.s = {
                "status": (_ctypes.c_int32 * _HEAD)(),  # grown to the longest game's status
                "err": _ctypes.create_string_buffer(_capi.ERRCAP),
                "f64": (_ctypes.c_double * 8)(),
                "str": _ctypes.create_string_buffer(1 << 16),
                "tensor": [None, None],
            }
        return s

    class _GoGame:
        """One configuration of a Go game as the engine describes it (dg_state_sizes)."""

        def __init__(self, spec: str) -> None:
            self.spec = spec  # the game spec's JSON text, as the engine is given it
            self.raw = spec.encode()
            self.lib = _capi.lib()
            self.info = _capi.call_json(self.lib.dg_state_sizes, self.raw, len(self.raw), errbuf=_scratch()["err"])
            self.players = int(self.info["num_players"])
            self.status_len = int(self.info["status_len"])
            self.sizes = (int(self.info["observation_tensor_size"]), int(self.info["information_state_tensor_size"]))
            # uni[n][a]: the chance outcome (a, 1/n), made once per n (uniform(n)).
            self.uni: list[Any] = [None] * (int(self.info["max_chance_outcomes"]) + 1)
            first = _Handle(self, _capi.check(self.lib.dg_state_new(self.raw, len(self.raw), *_err()), _scratch()["err"]))
            self.first = (first.cur, first.term, tuple(first.legal), first.run)  # the first node, for lazy states

        def status(self) -> Any:
            """This thread's status buffer, long enough for this game (the engine takes a longer one)."""
            st = getattr(_tls, "s", None) or _scratch()
            b = st["status"]
            if len(b) < self.status_len:
                b = st["status"] = (_ctypes.c_int32 * self.status_len)()
            return b

        def uniform(self, n: int) -> tuple[tuple[int, float], ...]:
            """``uni[n]``, made now."""
            t = self.uni[n] = tuple((a, 1.0 / n) for a in range(len(self.uni) - 1))
            return t

    _games: dict[str, _GoGame] = {}
    _games_lock = _threading.Lock()

    def _go_game(spec: str) -> _GoGame:
        """The engine's description of the game of ``spec`` (JSON text), made once per spec."""
        g = _games.get(spec)
        if g is None:
            with _games_lock:
                g = _games.get(spec)
                if g is None:
                    g = _games[spec] = _GoGame(spec)
        return g

    def _err() -> tuple[Any, int]:
        return _scratch()["err"], _capi.ERRCAP

    class _Handle:
        """A Go state handle with the status cached after each change.

        It is the only engine entry of a state's ``__dict__``, so pyspiel's
        Clone (deepcopy of ``__dict__``) clones it in Go and pyspiel's
        Serialize (pickle of ``__dict__``) writes the engine's serialization.

        A run of chance outcomes (the engine's ChanceRun: chance nodes in a
        row that each draw one of the same equally likely outcomes without
        replacement, as a deal does) is kept here until the run ends or the
        engine is asked something (:meth:`sync`), then sent in one call: a
        deal of the card game is 15 x players chance nodes, and one call
        instead of one per card is most of the speed of a random simulation.
        """

        __slots__ = ("lib", "h", "g", "cur", "term", "legal", "run", "pending")

        def __init__(self, g: _GoGame, h: int) -> None:
            self.lib, self.h, self.g = g.lib, h, g
            self.pending: list[int] = []
            buf = g.status()
            if self.lib.dg_state_status(self.h, buf, _ctypes.sizeof(buf)) < 0:
                raise ValueError(f"libdgenv: state handle {self.h} unknown")
            self._take(buf)

        def _take(self, buf: Any) -> None:
            self.cur, self.term, self.run = buf[0], buf[1] == 1, buf[3]
            self.legal = buf[_HEAD : _HEAD + buf[2]]  # a list (a ctypes slice), owned by this handle

        def apply(self, action: int) -> None:
            if self.run > 0:  # a run of chance outcomes: the engine reported them
                try:
                    self.legal.remove(action)  # the handle's own list (clones copy it)
                except ValueError:
                    raise _pyspiel.SpielError(f"illegal chance outcome {action}: not an outcome of this chance node") from None
                self.pending.append(action)
                self.run -= 1
                if self.run == 0:
                    self.sync()  # the run is over: the engine takes over
                return
            if self.pending or self.h == 0:
                self.sync()
            buf = self.g.status()
            err = _scratch()["err"]
            if self.lib.dg_state_apply(self.h, action, buf, _ctypes.sizeof(buf), err, _capi.ERRCAP) < 0:
                _capi.raise_error(err)
            self._take(buf)

        @classmethod
        def initial(cls, g: _GoGame) -> "_Handle":
            """A game's first node, made in the engine only when first needed.

            pyspiel's Clone starts from a new initial state and then replaces
            its attributes: a lazy one costs nothing there.
            """
            c = cls.__new__(cls)
            c.lib, c.h, c.g, c.pending = g.lib, 0, g, []
            c.cur, c.term, legal, c.run = g.first
            c.legal = list(legal)
            return c

        def sync(self) -> int:
            """Send the pending chance outcomes to the engine; returns the handle."""
            g = self.g
            if self.h == 0:
                self.h = _capi.check(self.lib.dg_state_new(g.raw, len(g.raw), *_err()), _scratch()["err"])
            if self.pending:
                n = len(self.pending)
                arr = (_ctypes.c_int32 * n)(*self.pending)
                self.pending = []
                buf, err = g.status(), _scratch()["err"]
                if self.lib.dg_state_apply_many(self.h, arr, 4 * n, buf, _ctypes.sizeof(buf), err, _capi.ERRCAP) < 0:
                    _capi.raise_error(err)
                self._take(buf)
            return self.h

        def __deepcopy__(self, memo: Any) -> "_Handle":
            c = _Handle.__new__(_Handle)
            c.lib, c.g, c.cur, c.term, c.run, c.legal = self.lib, self.g, self.cur, self.term, self.run, self.legal[:]
            c.pending = self.pending[:]
            c.h = self.lib.dg_state_clone(self.h) if self.h else 0
            return c

        def text(self) -> str:
            return _go_string(self.lib.dg_state_serialize, self.sync())

        def __reduce__(self) -> Any:
            return (_handle_from_text, (self.g.spec, self.text()))

        def __del__(self) -> None:
            try:
                if self.h:
                    self.lib.dg_free(self.h)
            except Exception:
                pass

    def _handle_from_text(spec: str, text: str) -> _Handle:
        g = _go_game(spec)
        raw = text.encode()
        err = _scratch()["err"]
        h = _capi.check(g.lib.dg_state_deserialize(g.raw, len(g.raw), raw, len(raw), err, _capi.ERRCAP), err)
        return _Handle(g, h)

    def _go_string(f: Any, *args: Any) -> str:
        st = _scratch()
        buf = st["str"]
        n = f(*args, buf, len(buf))
        if n < 0:
            raise ValueError("libdgenv: bad state handle or player")
        if n > len(buf):
            buf = st["str"] = _ctypes.create_string_buffer(2 * n)
            n = f(*args, buf, len(buf))
        return _ctypes.string_at(buf, n).decode()  # not buf.raw[:n]: .raw copies the whole 64 KiB first

    def _game_type(short_name: str, long_name: str, players: tuple[int, int], params: dict[str, Any],
                   terminal: bool = False) -> Any:
        return _pyspiel.GameType(
            short_name=short_name,
            long_name=long_name,
            dynamics=_pyspiel.GameType.Dynamics.SEQUENTIAL,
            chance_mode=_pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
            information=_pyspiel.GameType.Information.IMPERFECT_INFORMATION,
            utility=_pyspiel.GameType.Utility.GENERAL_SUM,
            reward_model=_pyspiel.GameType.RewardModel.TERMINAL if terminal else _pyspiel.GameType.RewardModel.REWARDS,
            max_num_players=players[1],
            min_num_players=players[0],
            provides_information_state_string=True,
            provides_information_state_tensor=True,
            provides_observation_string=True,
            provides_observation_tensor=True,
            provides_factored_observation_string=False,
            parameter_specification={**params, "terminal_rewards": False},
        )

    class ChanceGame(_pyspiel.Game):
        """A pyspiel game played by the Go engine: any engine game with explicit chance states.

        Made by :func:`register_game` (a subclass per engine game, registered
        with pyspiel); ``python_david_goliath`` is one. Parameters are the
        engine game's (sent to the engine when they differ from their
        defaults) and ``terminal_rewards`` (every reward at the end, as
        OpenSpiel's MCTSBot wants).
        """

        _go_name = ""
        _go_params: dict[str, int] = {}
        _types: tuple[Any, Any] = (None, None)  # the GameType of each reward model

        def __init__(self, params: Optional[dict[str, Any]] = None) -> None:
            params = dict(params or {})
            self._terminal_rewards = bool(params.get("terminal_rewards", False))
            spec: dict[str, Any] = {"name": self._go_name}
            values: dict[str, Any] = {}
            for k, default in self._go_params.items():
                v = int(params.get(k, default))
                values[k] = v
                if v != default:
                    spec[k] = v
            try:
                self._go = _go_game(_json.dumps(spec, sort_keys=True))
            except _DgenvError as e:  # the engine names the parameter
                raise ValueError(f"{self._types[0].short_name}: {e}") from None
            self._lib = self._go.lib
            info = self._go.info
            self._sizes = self._go.sizes
            self._length = int(info["max_game_length"])
            self._chance_nodes = int(info["max_chance_nodes"])
            game_info = _pyspiel.GameInfo(
                num_distinct_actions=int(info["num_distinct_actions"]),
                max_chance_outcomes=int(info["max_chance_outcomes"]),
                num_players=self._go.players,
                min_utility=float(info["min_utility"]),
                max_utility=float(info["max_utility"]),
                utility_sum=None,
                max_game_length=self._length,
            )
            super().__init__(self._types[1 if self._terminal_rewards else 0], game_info,
                             {**values, "terminal_rewards": self._terminal_rewards})

        def deserialize_state(self, text: str) -> "ChanceState":
            """The state ``state.serialize()`` wrote: the engine parses the text and
            replays it, refusing anything else (a damaged text, another
            game's, OpenSpiel's pickled ``__dict__`` form) with a ``SpielError``.

            Nothing in the text is unpickled or evaluated. (OpenSpiel's own
            ``pyspiel.deserialize_game_and_state`` and C++ callers of
            ``DeserializeState`` unpickle the Python attributes of every Python
            game, this one included: never give those text you did not write.)
            """
            if not isinstance(text, str):
                raise TypeError(f"deserialize_state: want the str state.serialize() wrote, got {type(text).__name__}")
            name = self.get_type().short_name
            if any(line.startswith("__dict__=") for line in text.splitlines()):
                raise _pyspiel.SpielError(
                    f"{name}: not a serialized state of this game (want the text state.serialize() writes; "
                    "OpenSpiel's pickled form is refused: unpickling can run code)"
                )
            try:
                handle = _handle_from_text(self._go.spec, text)
            except Exception as e:  # the engine's message names what is wrong
                raise _pyspiel.SpielError(f"{name}: bad serialized state: {e}") from None
            return _adopt_state(self, handle)

        def new_initial_state(self, *args: Any) -> "ChanceState":
            """The start of a game (a chance node when the game starts with chance)."""
            if args:
                raise ValueError(f"{self.get_type().short_name}: new_initial_state takes no string or json")
            return ChanceState(self)

        def max_chance_nodes_in_history(self) -> int:
            """The engine's bound on a game's chance nodes."""
            return self._chance_nodes

        def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> "_Observer":
            """The observer of OpenSpiel's observation API (perfect recall: the information state)."""
            if params:
                raise ValueError(f"observation parameters are not supported; got {params}")
            if iig_obs_type is None:
                iig_obs_type = _pyspiel.IIGObservationType(perfect_recall=False)
            if not iig_obs_type.public_info or iig_obs_type.private_info != _pyspiel.PrivateInfoType.SINGLE_PLAYER:
                raise ValueError(f"{self.get_type().short_name} observes for one player (public + own private information) only")
            return _Observer(self, 1 if iig_obs_type.perfect_recall else 0)

    def register_game(go_name: str, short_name: Optional[str] = None, *, params: Optional[dict[str, int]] = None,
                      players: Optional[tuple[int, int]] = None, long_name: Optional[str] = None) -> type:
        """Register the engine game ``go_name`` with pyspiel (as ``short_name``, default ``python_<go_name>``).

        Any engine game with explicit chance states (Go's ``env.ChanceGame``)
        becomes a pyspiel game this way. ``params`` (the parameters and their
        defaults), ``players`` (the fewest and most seats) and ``long_name``
        are asked of the engine when not given (loading it). Returns the game
        class; registering a name twice returns the class of the first time.

        Raises:
            DgenvError: the engine has no such game, or no explicit chance states for it.
        """
        short_name = short_name or f"python_{go_name}"
        if short_name in _registered:
            return _registered[short_name]
        if params is None or players is None or long_name is None:
            info = _go_game(_json.dumps({"name": go_name})).info
            params = dict(info["params"]) if params is None else params
            players = (min(info["players"]), max(info["players"])) if players is None else players
            long_name = f"{info['doc']} (dgenv's Go engine)" if long_name is None else long_name
        types = (_game_type(short_name, long_name, players, params),
                 _game_type(short_name, long_name, players, params, terminal=True))
        cls = type(f"ChanceGame_{go_name}", (ChanceGame,), {"_go_name": go_name, "_go_params": dict(params), "_types": types,
                                                           "__doc__": f"The pyspiel game {short_name}: the engine's {go_name}."})
        if short_name not in _pyspiel.registered_names():
            _pyspiel.register_game(types[0], cls)
        _registered[short_name] = cls
        return cls

    _registered: dict[str, type] = {}

    class _Observer:
        """OpenSpiel's PyObserver: ``tensor`` (float32), ``dict`` and ``string_from``."""

        def __init__(self, game: ChanceGame, kind: int) -> None:
            self.kind = kind
            self.size = game._sizes[kind]
            self.tensor = np.zeros(self.size, np.float32)
            self.dict = {"info_state" if kind else "observation": self.tensor}
            self._ptr = self.tensor.ctypes.data
            self._nbytes = self.tensor.nbytes
            self._lib = game._lib

        def set_from(self, state: "ChanceState", player: int) -> None:
            if self._lib.dg_state_tensor(state._s.sync(), player, self.kind, self._ptr, self._nbytes) < 0:
                raise ValueError(f"player {player}: not a seat of this game")

        def string_from(self, state: "ChanceState", player: int) -> str:
            return _go_string(self._lib.dg_state_string, state._s.sync(), player, self.kind)

    class ChanceState(_pyspiel.State):
        """A state of a :class:`ChanceGame`: a handle on the Go engine's state."""

        def __init__(self, game: ChanceGame, handle: Optional[_Handle] = None) -> None:
            super().__init__(game)
            self._s = handle or _Handle.initial(game._go)
            self._tr = game._terminal_rewards

        def current_player(self) -> int:
            """The seat to act; -1 at chance nodes, -4 once the game is over."""
            return self._s.cur

        def _legal_actions(self, player: int) -> Any:
            return self._s.legal

        # The methods below answer Python callers without the round trip
        # through pyspiel's C++ State (C++ callers get the same answers
        # through the methods above and the observers).
        def legal_actions(self, player: Optional[int] = None) -> list[int]:
            """The legal actions of ``player`` (default: the one to act; chance outcomes at a chance node)."""
            s = self._s
            if player is None or player == s.cur:
                return list(s.legal)
            if player < 0 and s.cur >= 0:
                raise _pyspiel.SpielError(f"Called LegalActions for pseudo-player {player}")
            return []

        def is_chance_node(self) -> bool:
            return self._s.cur == -1

        def is_player_node(self) -> bool:
            return self._s.cur >= 0

        def information_state_tensor(self, player: Optional[int] = None) -> list[float]:
            """What ``player`` (default: the one to act) knows: everything it has seen."""
            return self._tensor(player, 1)

        def observation_tensor(self, player: Optional[int] = None) -> list[float]:
            """``player``'s observation (default: the one to act): the batch API's, as floats."""
            return self._tensor(player, 0)

        def _tensor(self, player: Optional[int], kind: int) -> list[float]:
            s = self._s
            p = s.cur if player is None else player
            buf = _scratch()["tensor"][kind]
            if buf is None:
                size = s.g.sizes[kind]
                buf = _scratch()["tensor"][kind] = np.empty(size, np.float32)
            n = s.lib.dg_state_tensor(s.sync(), p, kind, buf.ctypes.data, buf.nbytes)
            if n < 0:
                if buf.size < s.g.sizes[kind]:  # another game's size: grow
                    _scratch()["tensor"][kind] = None
                    return self._tensor(player, kind)
                raise _pyspiel.SpielError(f"player {p}: not a seat of this game")
            return buf[:n].tolist()

        def information_state_string(self, player: Optional[int] = None) -> str:
            """Everything ``player`` (default: the one to act) has seen, in words."""
            return self._string(player, 1)

        def observation_string(self, player: Optional[int] = None) -> str:
            """What ``player`` (default: the one to act) sees now, in words."""
            return self._string(player, 0)

        def _string(self, player: Optional[int], kind: int) -> str:
            s = self._s
            p = s.cur if player is None else player
            if not 0 <= p < s.g.players:
                raise _pyspiel.SpielError(f"player {p}: not a seat of this game")
            return _go_string(s.lib.dg_state_string, s.sync(), p, kind)

        def chance_outcomes(self) -> list[tuple[int, float]]:
            """The chance outcomes and their probabilities (none at a player node)."""
            s = self._s
            if s.cur != -1:
                return []
            legal = s.legal
            if s.run > 0:  # equally likely: the (action, probability) pairs are made once per count
                g, n = s.g, len(legal)
                return list(map((g.uni[n] or g.uniform(n)).__getitem__, legal))
            h = s.sync()
            probs = (_ctypes.c_double * max(len(s.legal), 1))()
            n = s.lib.dg_state_chance_outcomes(h, probs, _ctypes.sizeof(probs))
            if n != len(s.legal):
                raise ValueError("libdgenv: the chance outcomes changed while they were read")
            return list(zip(s.legal, probs[:n]))

        def _apply_action(self, action: int) -> None:
            self._s.apply(action)

        def _action_to_string(self, player: int, action: int) -> str:
            return _go_string(self._s.lib.dg_state_action_string, self._s.sync(), player, action)

        def is_terminal(self) -> bool:
            return self._s.term

        def returns(self) -> list[float]:
            """Each seat's return so far.

            With ``terminal_rewards=True``: 0 until the game ends, then the returns.
            """
            if self._s.term or not self._terminal():
                return self._values(0)
            return [0.0] * self.num_players()

        def rewards(self) -> list[float]:
            """The rewards since the last player's action.

            With ``terminal_rewards=True``: 0 until the game ends, then the returns.
            """
            if not self._terminal():
                return self._values(1)
            return self._values(0) if self._s.term else [0.0] * self.num_players()

        def _terminal(self) -> bool:
            return self._tr

        def _values(self, which: int) -> list[float]:
            st = _scratch()
            buf = st["f64"]
            if len(buf) < self._s.g.players:
                buf = st["f64"] = (_ctypes.c_double * self._s.g.players)()
            n = self._s.lib.dg_state_returns(self._s.sync(), which, buf, _ctypes.sizeof(buf))
            if n < 0:
                raise ValueError("libdgenv: bad state handle")
            return buf[:n]

        def __str__(self) -> str:
            return _go_string(self._s.lib.dg_state_string, self._s.sync(), 0, 2)

        def resample_from_infostate(self, player_id: int, probability_sampler: Any) -> "ChanceState":
            """A state ``player_id`` cannot tell from this one, drawn with ``probability_sampler``.

            What the player has not seen is drawn anew (in the card game: the
            cards it has not seen, consistently with its own cards, every card
            played and every colour a seat has shown to be out of). The new
            state's history is that of the resampled world.
            """
            seed = int(probability_sampler() * 2**32) << 32 | int(probability_sampler() * 2**32)
            s = self._s
            lib, err = s.lib, _scratch()["err"]
            h = _capi.check(lib.dg_state_resample(s.sync(), int(player_id), seed, err, _capi.ERRCAP), err)
            return _adopt_state(self.get_game(), _Handle(s.g, h))

        def serialize(self) -> str:
            """The engine's text of this state (the card game's: the parameters and every action).

            ``game.deserialize_state`` reads it back. (OpenSpiel's C++
            ``Serialize``, used by ``pickle`` and ``pyspiel.serialize_game_and_state``,
            wraps the same text in a pickle; see :meth:`ChanceGame.deserialize_state`.)
            """
            return self._s.text()

    def _adopt_state(game: ChanceGame, handle: _Handle) -> ChanceState:
        """A pyspiel state around ``handle``, with pyspiel's history set from the engine's.

        pyspiel keeps its own history and move number, which only its C++
        deserialization sets: it takes the history as text and the Python
        attributes as a pickle, made here (never from a caller's text) of a
        token that adopts ``handle``.
        """
        lib, h = handle.lib, handle.sync()
        n = lib.dg_state_history(h, None, 0)
        pairs = (_ctypes.c_int32 * (2 * max(n, 1)))()
        if lib.dg_state_history(h, pairs, _ctypes.sizeof(pairs)) != n:
            raise ValueError("libdgenv: the state's history changed while it was read")
        token = _adoption(handle)
        hist = ",".join(f"{pairs[2 * i]}:{pairs[2 * i + 1]}" for i in range(n))
        attrs = _base64.b64encode(_pickle.dumps({"_s": token, "_tr": game._terminal_rewards})).decode()
        state: ChanceState = _pyspiel.Game.deserialize_state(game, f"history={hist}\nmove_number={n}\n__dict__={attrs}")
        return state

    _adopting: dict[int, _Handle] = {}
    _adopt_lock = _threading.Lock()
    _adopt_next = [0]

    class _Adopt:
        """Pickles as a reference to a live handle of this process (taken once)."""

        __slots__ = ("token",)

        def __init__(self, token: int) -> None:
            self.token = token

        def __reduce__(self) -> Any:
            return (_adopt, (self.token,))

    def _adoption(handle: _Handle) -> _Adopt:
        with _adopt_lock:
            _adopt_next[0] += 1
            _adopting[_adopt_next[0]] = handle
            return _Adopt(_adopt_next[0])

    def _adopt(token: int) -> _Handle:
        with _adopt_lock:
            return _adopting.pop(token)

    class RolloutEvaluator(_mcts.Evaluator):
        """OpenSpiel's ``RandomRolloutEvaluator``, with the rollouts played by the engine in one call.

        For ``MCTSBot`` and ``ISMCTSBot`` on a :class:`ChanceGame`: each
        evaluation plays ``n_rollouts`` uniformly random games to the end
        (chance outcomes included) and returns the mean returns; the prior
        is uniform over the legal actions (the chance probabilities at
        chance nodes).
        """

        def __init__(self, n_rollouts: int = 1, random_state: Optional[np.random.RandomState] = None) -> None:
            self.n_rollouts = int(n_rollouts)
            self._rs = random_state or np.random.RandomState()

        def evaluate(self, state: Any) -> np.ndarray:
            s = state._s
            out = np.empty(s.g.players, np.float64)
            seed = int(self._rs.randint(0, 2**62))
            if s.lib.dg_state_rollout(s.sync(), self.n_rollouts, seed, out.ctypes.data, out.nbytes) < 0:
                raise ValueError("rollout: bad state")
            return out

        def prior(self, state: Any) -> list[tuple[int, float]]:
            if state.is_chance_node():
                return state.chance_outcomes()
            legal = state.legal_actions(state.current_player())
            return [(a, 1.0 / len(legal)) for a in legal]

    _ISMCTS_REFUSAL = (
        "pyspiel.ISMCTSBot (OpenSpiel's C++ ISMCTS) cannot search a game of dgenv's engine, nor any Python game: its "
        "step releases Python's GIL and then calls the game's Python observer without it (a segfault inside "
        "OpenSpiel's pybind11 binding), and pyspiel does not forward C++ ResampleFromInfostate to Python games. "
        "Use OpenSpiel's Python ISMCTS: open_spiel.python.algorithms.ismcts.ISMCTSBot(game, "
        "dgenv.openspiel.RolloutEvaluator(), uct_c, max_simulations) (docs/python.md)."
    )

    def _refuse_ismcts(name: str) -> None:
        """Make ``pyspiel.ISMCTSBot.<name>`` raise, before any C++ runs, when given a state of this game."""
        orig = getattr(_pyspiel.ISMCTSBot, name, None)
        if orig is None or getattr(orig, "_dgenv_guard", False):
            return

        def guarded(self: Any, state: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(state, ChanceState):
                raise _pyspiel.SpielError(_ISMCTS_REFUSAL)
            return orig(self, state, *args, **kwargs)

        guarded._dgenv_guard = True  # type: ignore[attr-defined]
        guarded.__doc__ = orig.__doc__
        setattr(_pyspiel.ISMCTSBot, name, guarded)

    def _refuse_evaluate_bots() -> None:
        """``pyspiel.evaluate_bots`` calls each bot's C++ Step directly: refuse a C++ ISMCTSBot on this game there too."""
        orig = _pyspiel.evaluate_bots
        if getattr(orig, "_dgenv_guard", False):
            return

        def evaluate_bots(state: Any, bots: Any, seed: int) -> Any:
            if isinstance(state, ChanceState) and any(isinstance(b, _pyspiel.ISMCTSBot) for b in bots):
                raise _pyspiel.SpielError(_ISMCTS_REFUSAL)
            return orig(state, bots, seed)

        evaluate_bots._dgenv_guard = True  # type: ignore[attr-defined]
        evaluate_bots.__doc__ = orig.__doc__
        _pyspiel.evaluate_bots = evaluate_bots

    # The C++ ISMCTS would kill the interpreter (see _ISMCTS_REFUSAL): stop it
    # with a Python error instead, wherever Python hands it one of our states.
    for _name in ("step", "step_with_policy", "get_policy", "step_verbose"):
        _refuse_ismcts(_name)
    _refuse_evaluate_bots()

    # The card game, registered at import with its documented parameters
    # (the engine is loaded only when a game is made).
    DavidGoliathGame = register_game(_CARD_GO_NAME, GAME_NAME, params=_CARD_PARAMS, players=_CARD_PLAYERS,
                                     long_name=_CARD_LONG_NAME)
    DavidGoliathState = ChanceState
    # The duel, as python_duel (docs/duel.md, "OpenSpiel").
    DuelGame = register_game("duel", "python_duel", params={"max_rounds": 100}, players=(2, 2),
                             long_name="the two-player duel: Goliath and David on an 8x8 board (dgenv's Go engine)")
    __all__ += ["ChanceGame", "ChanceState", "register_game", "DavidGoliathGame", "DavidGoliathState", "DuelGame",
                "RolloutEvaluator"]
