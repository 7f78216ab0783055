"""An OpenSpiel-style ``rl_environment`` on the server (no open_spiel needed).

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
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from ._common import ClientLike, resolve_client
from .client import Batch, BatchEnv

__all__ = ["StepType", "TimeStep", "Environment"]


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
        players: seats per table (3..6).
        reward: ``"points"`` or ``"zero_sum"``.
        deals: deals per game (default: as many as players).
        seed: seed of the first game.
        discount: per-step discount reported in ``discounts``.
    """

    def __init__(
        self,
        client: ClientLike = None,
        *,
        players: int = 4,
        reward: str = "points",
        deals: Optional[int] = None,
        seed: Optional[int] = None,
        discount: float = 1.0,
    ) -> None:
        self.client = resolve_client(client)
        self.env: BatchEnv = self.client.make(players=players, num_envs=1, reward=reward, deals=deals, seed=seed)
        self._num_players = self.env.players
        self._discount = float(discount)
        self._seed = seed
        self._seen = np.zeros((self._num_players, self.env.obs_size), dtype=np.float32)
        self._legal: list[list[int]] = [[] for _ in range(self._num_players)]
        self._should_reset = True
        self._player = 0

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
