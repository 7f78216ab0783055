"""The wire's descriptions of a game and a session, as dataclasses.

:class:`Spec` is a session's ``spec`` (sizes, seats, observation layout),
:class:`GameInfo` one entry of ``GET /v1/games`` (a game's parameters and
spaces). Parsing only: nothing here does I/O. The tensor codec is
:mod:`dgenv._wire`; the HTTP exchange :mod:`dgenv._transport`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

import numpy as np

__all__ = ["Section", "Packed", "ObsSpec", "Spec", "GameParam", "GameInfo", "DEFAULT_GAME", "NUM_ACTIONS"]

# The card game's action count (card id = colour * 18 + value - 1). Kept for
# code written against it; dgenv itself reads ``spec.num_actions``.
NUM_ACTIONS = 90

# The game a session plays when its create names none.
DEFAULT_GAME = "david_goliath"


@dataclass(frozen=True)
class Section:
    """One named block of the flat observation vector.

    Attributes:
        name: section name (``"hand"``, ``"current_trick"``...).
        offset: index of its first element in the observation.
        shape: its shape (the section is ``obs[..., offset:offset+size]`` in C order).
        min: smallest value it takes.
        max: largest value it takes.
        doc: the server's description of its meaning.
    """

    name: str
    offset: int
    shape: tuple[int, ...]
    min: int = 0
    max: int = 1
    doc: str = ""

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class Packed:
    """How a ``packing="bits"`` session carries obs and mask (``spec.obs.packed``).

    ``obs_bits`` rows hold one bit per observation element (numpy
    ``bitorder="little"``); ``obs_extra`` rows hold the bytes of the sections
    whose values exceed 1, span after span; ``mask_bits`` rows hold the mask's
    num_actions bits. :class:`BatchEnv` unpacks them, so a :class:`Batch` looks the same
    either way.
    """

    obs_bytes: int
    extra: tuple[tuple[int, int], ...]  # (offset, length) spans of obs in obs_extra, in order
    extra_bytes: int
    mask_bytes: int
    num_actions: int = NUM_ACTIONS  # bits of one mask row (the spec's num_actions)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any], num_actions: int = NUM_ACTIONS) -> "Packed":
        if d.get("bitorder", "little") != "little":
            raise ValueError(f"packed obs: bitorder {d.get('bitorder')!r} is not supported")
        return cls(
            obs_bytes=int(d["obs_bytes"]),
            extra=tuple((int(x["offset"]), int(x["length"])) for x in d.get("extra", ())),
            extra_bytes=int(d["extra_bytes"]),
            mask_bytes=int(d["mask_bytes"]),
            num_actions=int(num_actions),
        )

    def unpack(self, obs_bits: np.ndarray, obs_extra: np.ndarray, mask_bits: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
        """Rebuild ``obs`` [N, d] uint8 and ``mask`` [N, num_actions] bool from the packed tensors."""
        obs = np.unpackbits(obs_bits, axis=1, count=d, bitorder="little")
        k = 0
        for off, n in self.extra:
            obs[:, off : off + n] = obs_extra[:, k : k + n]
            k += n
        mask = np.unpackbits(mask_bits, axis=1, count=self.num_actions, bitorder="little").view(np.bool_)
        return obs, mask


@dataclass(frozen=True)
class ObsSpec:
    """Observation layout: flat shape, wire dtype and named sections."""

    shape: tuple[int, ...]
    dtype: np.dtype
    sections: tuple[Section, ...]
    packed: Optional[Packed] = None

    @property
    def size(self) -> int:
        """Number of elements of one observation."""
        return int(np.prod(self.shape, dtype=np.int64))

    def section(self, name: str) -> Section:
        """Return the section called ``name`` (KeyError if absent)."""
        for s in self.sections:
            if s.name == name:
                return s
        raise KeyError(f"no observation section {name!r}; have {[s.name for s in self.sections]}")

    @classmethod
    def from_wire(cls, o: Mapping[str, Any], num_actions: int = NUM_ACTIONS) -> "ObsSpec":
        """Build from the wire's ``obs`` object (a spec's, or a game's in ``GET /v1/games``)."""
        sections = tuple(
            Section(
                name=str(s["name"]),
                offset=int(s["offset"]),
                shape=tuple(int(x) for x in s["shape"]),
                min=int(s.get("min", 0) or 0),
                max=int(s.get("max", 1) if s.get("max") is not None else 1),
                doc=str(s.get("doc", "") or ""),
            )
            for s in o.get("sections", ()) or ()
        )
        return cls(
            shape=tuple(int(x) for x in o["shape"]),
            dtype=np.dtype(o.get("dtype", "<u1")),
            sections=sections,
            packed=Packed.from_wire(o["packed"], num_actions) if o.get("packed") else None,
        )

    def low_high(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-element lower and upper bounds of the observation, as float64 vectors."""
        lo = np.zeros(self.size, dtype=np.float64)
        hi = np.ones(self.size, dtype=np.float64)
        for s in self.sections:
            lo[s.offset : s.offset + s.size] = s.min
            hi[s.offset : s.offset + s.size] = s.max
        return lo, hi


@dataclass(frozen=True)
class Spec:
    """What a session is: its game, sizes, seats, opponent, reward mode and observation layout.

    ``game`` is the game's registered name (``spec.game.name`` on the wire)
    and ``params`` its parameters as the session uses them (``spec.game``
    without its name, e.g. ``{"players": 4, "deals": 4, "first_dealer": 0}``).
    """

    num_envs: int
    players: int
    num_actions: int
    learner_seats: tuple[int, ...]
    opponent: Optional[str]
    reward: str
    obs: ObsSpec
    raw: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)
    game: str = DEFAULT_GAME
    params: Mapping[str, Any] = field(compare=False, default_factory=dict)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "Spec":
        """Build a Spec from the server's ``spec`` object."""
        num_actions = int(d["num_actions"])
        players = int(d["players"])
        seats = d.get("learner_seats") or list(range(players))
        g = d.get("game")
        g = dict(g) if isinstance(g, Mapping) else {}
        name = str(g.pop("name", "") or DEFAULT_GAME)
        return cls(
            num_envs=int(d["num_envs"]),
            players=players,
            num_actions=num_actions,
            learner_seats=tuple(int(s) for s in seats),
            opponent=(d.get("opponent") or None),
            reward=str(d.get("reward", "points") or "points"),
            obs=ObsSpec.from_wire(d["obs"], num_actions),
            raw=dict(d),
            game=name,
            params=g,
        )


@dataclass(frozen=True)
class GameParam:
    """One parameter of a game (``GET /v1/games``): its default, range and meaning."""

    name: str
    default: Any
    min: Optional[float] = None
    max: Optional[float] = None
    doc: str = ""


@dataclass(frozen=True)
class GameInfo:
    """One registered game (an entry of ``GET /v1/games``).

    Attributes:
        name: the name a create's ``game`` takes (``Client.make(game=name)``).
        players: the seats at a table with the default parameters (as the server lists it).
        params: the parameters a create may set, with defaults and ranges.
        num_actions: size of the action space.
        obs: the observation layout with the default parameters.
    """

    name: str
    players: Any
    params: tuple[GameParam, ...]
    num_actions: int
    obs: ObsSpec
    raw: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "GameInfo":
        """Build from one entry of ``GET /v1/games``'s ``games`` list."""
        num_actions = int(d["num_actions"])
        return cls(
            name=str(d["name"]),
            players=d.get("players"),
            params=tuple(
                GameParam(
                    name=str(p["name"]),
                    default=p.get("default"),
                    min=p.get("min"),
                    max=p.get("max"),
                    doc=str(p.get("doc", "") or ""),
                )
                for p in d.get("params", ()) or ()
            ),
            num_actions=num_actions,
            obs=ObsSpec.from_wire(d["obs"], num_actions),
            raw=dict(d),
        )

    def param(self, name: str) -> GameParam:
        """The parameter called ``name`` (KeyError if the game has none)."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"game {self.name!r} has no parameter {name!r}; have {[p.name for p in self.params]}")

