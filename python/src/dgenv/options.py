"""One options object for every adapter: :class:`EnvOptions`.

Every adapter (Gymnasium, PettingZoo, SB3, RLlib, the OpenSpiel-style env)
takes ``options=EnvOptions(...)`` besides its keyword arguments, and passes
the same fields to :meth:`dgenv.Client.make`, so a setting written once (the
game and its parameters, the seed, the observation dtype, packing...) means
the same everywhere::

    from dgenv import EnvOptions
    from dgenv.gymnasium import VectorEnv
    from dgenv.pettingzoo import ParallelEnv

    opts = EnvOptions(players=3, seed=7, obs_dtype="uint8", client="inproc")
    venv = VectorEnv(8, options=opts.replace(opponent="random"))
    penv = ParallelEnv(options=opts)

A field left None takes the adapter's default. A keyword argument given
together with ``options`` wins when it differs from the adapter's default.
An option an adapter cannot honour (an opponent for an env in which every
seat is an agent) is a ValueError naming it, never silently dropped.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from numpy.typing import DTypeLike

from .base import BatchEnv, GameLike

__all__ = ["EnvOptions", "adapter_options", "one_seat", "check_seats"]


@dataclass(frozen=True)
class EnvOptions:
    """Settings of an environment, shared by every adapter.

    Attributes:
        game: the game: a registered name or ``{"name": ..., **params}``
            (``Client.games()`` lists them); None is the card game.
        players: seats per table (None: the game's default; 4 for the card game).
        deals: the card game's deals per game (None: as many as players).
        seed: seed of the first games (None: the server's).
        obs_dtype: dtype of the observations the adapter returns
            (e.g. ``"float32"``, ``"uint8"``, the wire's and fastest).
        packing: ``"bits"`` to have obs and mask travel bit-packed.
        opponent: the bot for the seats the learner does not play.
        learner_seats: the seats the learner plays (single-agent adapters: one seat).
        reward: ``"points"`` or ``"zero_sum"``.
        illegal_action: ``"terminate"`` (end the episode with
            ``illegal_action_reward``) or ``"raise"``.
        illegal_action_reward: the reward of an illegal action under ``"terminate"``.
        reward_scale: factor applied to rewards (Gymnasium, SB3, RLlib;
            the PettingZoo and OpenSpiel-style envs refuse it).
        client: a :class:`dgenv.Client`, a server URL, ``"inproc"``
            (:func:`dgenv.local`) or None (the shared local server).
    """

    game: GameLike = None
    players: Optional[int] = None
    deals: Optional[int] = None
    seed: Optional[int] = None
    obs_dtype: Optional[DTypeLike] = None
    packing: Optional[str] = None
    opponent: Optional[str] = None
    learner_seats: Optional[Sequence[int]] = None
    reward: Optional[str] = None
    illegal_action: Optional[str] = None
    illegal_action_reward: Optional[float] = None
    reward_scale: Optional[float] = None
    client: Any = None

    def replace(self, **changes: Any) -> "EnvOptions":
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    def make_kwargs(self, **override: Any) -> dict[str, Any]:
        """The keyword arguments of :meth:`dgenv.Client.make` these options give, with ``override`` applied."""
        kw: dict[str, Any] = {
            "game": self.game,
            "players": self.players,
            "deals": self.deals,
            "seed": self.seed,
            "packing": self.packing,
            "opponent": self.opponent,
            "learner_seats": None if self.learner_seats is None else [int(s) for s in self.learner_seats],
            "reward": "points" if self.reward is None else self.reward,
        }
        if self.obs_dtype is not None:
            kw["obs_dtype"] = self.obs_dtype
        kw.update(override)
        return kw

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> "EnvOptions":
        """Options from a plain mapping (e.g. RLlib's ``env_config``); unknown keys are a ValueError."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown options {sorted(unknown)}; known: {sorted(names)}")
        return cls(**dict(d))


_FIELDS = frozenset(f.name for f in dataclasses.fields(EnvOptions))


def adapter_options(
    options: Optional[EnvOptions],
    init: Callable[..., Any],
    given: Mapping[str, Any],
    *,
    unsupported: Iterable[str] = (),
) -> EnvOptions:
    """The options an adapter's constructor ``init`` runs with.

    ``given`` holds the constructor's arguments (its ``locals()``). For each
    field of :class:`EnvOptions`: a keyword argument that differs from its
    default in ``init``'s signature wins; else the value ``options`` sets;
    else the keyword's default. ``unsupported`` names the fields this adapter
    cannot honour: ``options`` setting one is a ValueError.
    """
    if options is not None and not isinstance(options, EnvOptions):
        raise TypeError(f"options: want a dgenv.EnvOptions, got {type(options).__name__}")
    params = inspect.signature(init).parameters
    values: dict[str, Any] = {}
    for name in _FIELDS:
        p = params.get(name)
        default = None if p is None or p.default is inspect.Parameter.empty else p.default
        arg = given.get(name, default) if p is not None else None
        opt = None if options is None else getattr(options, name)
        if p is not None and not _same(arg, default):
            values[name] = arg
        elif opt is not None:
            values[name] = opt
        else:
            values[name] = arg
    for name in unsupported:
        if options is not None and getattr(options, name) is not None:
            raise ValueError(f"options.{name}: this adapter does not take {name}")
    return EnvOptions(**values)


def one_seat(learner_seat: int, o: EnvOptions) -> list[int]:
    """The learner's one seat: ``learner_seat``, or the one of ``options.learner_seats`` when that is left at 0."""
    seat = int(learner_seat)
    if seat == 0 and o.learner_seats is not None:
        if len(o.learner_seats) != 1:
            raise ValueError(f"options.learner_seats = {list(o.learner_seats)}: this env plays one seat")
        seat = int(o.learner_seats[0])
    if seat < 0 or (o.players is not None and seat >= o.players):
        raise ValueError(f"learner_seat = {seat}: must be 0..{(o.players or 1) - 1}")
    return [seat]


def check_seats(env: BatchEnv, seats: Sequence[int]) -> None:
    """The seat against the session's real player count (the game's default when not given)."""
    if any(s >= env.players for s in seats):
        env.close()
        raise ValueError(f"learner_seat = {seats[0]}: must be 0..{env.players - 1}")


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except Exception:  # e.g. arrays
        return False
