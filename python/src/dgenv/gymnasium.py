"""Gymnasium adapters: a batched :class:`VectorEnv` and a single-game :class:`Env`.

Both play one learner seat against the server's bots (``opponent``), which move
inside the server's step. Observations are the learner's flat observation
vector (float32 by default); the legal actions are ``info["action_mask"]`` and
``action_masks()``.

Vector env and auto-reset
    The server resets a finished game inside the step that ends it, so
    :class:`VectorEnv` declares ``metadata["autoreset_mode"] =
    AutoresetMode.SAME_STEP``: when ``terminations[i]`` is True, ``obs[i]`` and
    ``info["action_mask"][i]`` already belong to env i's next game, and the
    finished game's final totals are in ``info["scores"][i]``. The server does
    not send the terminal observation (the game is over: there is no decision
    left and its value is 0), so ``info["final_obs"]`` holds zeros in rows where
    ``info["_final_obs"]`` is True. Games always end by termination, never by
    truncation.

Single env and illegal actions
    :class:`Env` checks the action against the mask before sending it. An illegal
    action (e.g. from ``action_space.sample()``) is not sent: the step returns
    ``illegal_action_reward`` (default -1), ``terminated=True`` and
    ``info["illegal_action"] = True``, and the env must be reset.

Importing this module imports gymnasium (``pip install 'dgenv[gymnasium]'``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
from numpy.typing import DTypeLike

from ._common import ClientLike, require, resolve_client
from .client import BatchEnv, ObsSpec

gym = require("gymnasium", "gymnasium")
from gymnasium import spaces  # noqa: E402
from gymnasium.vector.utils import batch_space  # noqa: E402

try:  # gymnasium >= 1.0
    from gymnasium.vector import AutoresetMode  # noqa: E402

    _SAME_STEP: Any = AutoresetMode.SAME_STEP
except ImportError:  # pragma: no cover - older gymnasium
    _SAME_STEP = "SameStep"

__all__ = ["VectorEnv", "Env", "observation_space", "ENV_ID"]

# gymnasium.make(ENV_ID, client=...) and gymnasium.make_vec(ENV_ID, num_envs=N,
# vectorization_mode="vector_entry_point", client=...) once this module is
# imported (or name it as "dgenv.gymnasium:dgenv/DavidGoliath-v0").
ENV_ID = "dgenv/DavidGoliath-v0"


def observation_space(obs: ObsSpec, dtype: Optional[DTypeLike] = np.float32) -> spaces.Box:
    """Box of one observation with each section's documented bounds."""
    lo, hi = obs.low_high()
    dt = np.dtype(obs.dtype if dtype is None else dtype)
    return spaces.Box(low=lo.astype(dt), high=hi.astype(dt), shape=(obs.size,), dtype=dt)


def _one_seat(learner_seat: int, players: int) -> list[int]:
    if not 0 <= int(learner_seat) < players:
        raise ValueError(f"learner_seat = {learner_seat}: must be 0..{players - 1}")
    return [int(learner_seat)]


class VectorEnv(gym.vector.VectorEnv):
    """``num_envs`` games on the server, one learner seat each, as a Gymnasium VectorEnv.

    Args:
        num_envs: games stepped at once.
        client: a :class:`dgenv.Client`, a server URL, or None for the shared local server.
        players: seats per table (3..6).
        learner_seat: the seat this env plays; the others are played by ``opponent``.
        opponent: server bot for the other seats (``"heuristic"``, ``"random"``).
        reward: ``"points"`` or ``"zero_sum"``; the reward is the learner seat's.
        seed: seed of the first reset when ``reset`` gets none.
        obs_dtype: observation dtype (float32; None for the wire's uint8).
        packing: ``"bits"`` to have obs and masks sent bit-packed (see
            :meth:`dgenv.Client.make`); for a server across a network.
        deals: deals per game (default: as many as players).

    ``step`` returns ``(obs [N, D], rewards [N], terminations [N], truncations [N], info)``
    with ``info["action_mask"]`` ``[N, 90]`` bool, ``info["player"]``, ``info["scores"]``
    ``[N, P]``, ``info["rewards_all"]`` ``[N, P]`` and ``info["episode"]``.
    """

    metadata = {"autoreset_mode": _SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        client: ClientLike = None,
        *,
        players: int = 4,
        learner_seat: int = 0,
        opponent: str = "heuristic",
        reward: str = "points",
        seed: Optional[int] = None,
        obs_dtype: Optional[DTypeLike] = np.float32,
        deals: Optional[int] = None,
        packing: Optional[str] = None,
    ) -> None:
        self.client = resolve_client(client)
        seats = _one_seat(learner_seat, players)
        self.env: BatchEnv = self.client.make(
            players=players,
            num_envs=num_envs,
            seed=seed,
            learner_seats=seats,
            opponent=opponent,
            reward=reward,
            deals=deals,
            obs_dtype=obs_dtype,
            packing=packing,
        )
        self.learner_seat = seats[0]
        self.num_envs = self.env.num_envs
        self.single_observation_space = observation_space(self.env.spec.obs, obs_dtype)
        self.single_action_space = spaces.Discrete(self.env.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None
        self._seed = seed
        self._mask = np.zeros((self.num_envs, self.env.num_actions), dtype=bool)
        self._final_obs = np.zeros((self.num_envs, self.env.obs_size), dtype=self.single_observation_space.dtype)
        self._final_obs.setflags(write=False)
        self._all = np.ones(self.num_envs, dtype=bool)

    def _info(self, b: Any) -> dict[str, Any]:
        done = b.done
        return {
            "action_mask": b.mask,
            "_action_mask": self._all,
            "player": b.player,
            "_player": self._all,
            "rewards_all": b.rewards,
            "_rewards_all": self._all,
            "episode": b.episode,
            "_episode": self._all,
            "scores": b.scores,
            "_scores": done,
            "final_obs": self._final_obs,
            "_final_obs": done,
        }

    def reset(
        self,
        *,
        seed: Optional[Union[int, Sequence[int]]] = None,
        options: Optional[dict[str, Any]] = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new game in every env; ``seed`` re-seeds all of them (a list uses its first entry)."""
        if seed is not None and not isinstance(seed, (int, np.integer)):
            seed = list(seed)[0]
        super().reset(seed=seed)
        if seed is None and self._seed is not None:
            seed, self._seed = self._seed, None
        b = self.env.reset(seed=seed)
        self._mask = b.mask
        return b.obs, self._info(b)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Play one action per env (learner seat), then the opponents until the learner is to act."""
        b = self.env.step(actions)
        self._mask = b.mask
        rewards = b.rewards[:, self.learner_seat]
        terminations = b.done
        truncations = b.truncated  # games lost to a server restart (client recover); all False otherwise
        return b.obs, rewards, terminations, truncations, self._info(b)

    def action_masks(self) -> np.ndarray:
        """``[N, 90]`` bool mask of the legal actions for the current observations."""
        return self._mask

    def close_extras(self, **kwargs: Any) -> None:
        """End the server session."""
        self.env.close()


class Env(gym.Env):
    """One game on the server, one learner seat, as a Gymnasium Env.

    Args:
        client: a :class:`dgenv.Client`, a server URL, or None for the shared local server.
        players: seats per table (3..6).
        learner_seat: the seat this env plays; the others are played by ``opponent``.
        opponent: server bot for the other seats.
        reward: ``"points"`` or ``"zero_sum"``.
        illegal_action_reward: reward of an illegal action, which also ends the episode.
        obs_dtype: observation dtype (float32; None for the wire's uint8).
        deals: deals per game (default: as many as players).
        render_mode: None or ``"ansi"`` (a text summary of the learner's view).

    ``info["action_mask"]`` (and :meth:`action_masks`) is the ``[90]`` bool mask of
    the legal actions. On termination the observation is all zeros (the game is over).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        client: ClientLike = None,
        *,
        players: int = 4,
        learner_seat: int = 0,
        opponent: str = "heuristic",
        reward: str = "points",
        illegal_action_reward: float = -1.0,
        obs_dtype: Optional[DTypeLike] = np.float32,
        deals: Optional[int] = None,
        render_mode: Optional[str] = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: want None or 'ansi'")
        self.client = resolve_client(client)
        seats = _one_seat(learner_seat, players)
        self.env: BatchEnv = self.client.make(
            players=players,
            num_envs=1,
            learner_seats=seats,
            opponent=opponent,
            reward=reward,
            deals=deals,
            obs_dtype=obs_dtype,
        )
        self.learner_seat = seats[0]
        self.illegal_action_reward = float(illegal_action_reward)
        self.observation_space = observation_space(self.env.spec.obs, obs_dtype)
        self.action_space = spaces.Discrete(self.env.num_actions)
        self.render_mode = render_mode
        self._obs = np.zeros(self.observation_space.shape, dtype=self.observation_space.dtype)
        self._mask = np.zeros(self.env.num_actions, dtype=bool)
        self._over = True

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new game; a seed makes it (and the bots' play) reproducible."""
        super().reset(seed=seed)
        b = self.env.reset(seed=seed)
        self._over = False
        return self._observe(b), {"action_mask": self._mask.copy()}

    def _observe(self, b: Any) -> np.ndarray:
        self._obs = np.array(b.obs[0], dtype=self.observation_space.dtype)
        self._mask = np.array(b.mask[0])
        return self._obs

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play ``action`` (a card id) for the learner seat, then the opponents' turns."""
        if self._over:
            raise RuntimeError("episode is over: call reset()")
        a = int(np.asarray(action).reshape(()))
        if not (0 <= a < self._mask.size and self._mask[a]):
            self._over = True
            self._obs = np.zeros_like(self._obs)
            self._mask = np.zeros_like(self._mask)
            info = {"action_mask": self._mask.copy(), "illegal_action": True}
            return self._obs, self.illegal_action_reward, True, False, info
        b = self.env.step(np.array([a], dtype=np.int16))
        reward = float(b.rewards[0, self.learner_seat])
        if b.done[0]:
            self._over = True
            self._obs = np.zeros_like(self._obs)
            self._mask = np.zeros_like(self._mask)
            info = {"action_mask": self._mask.copy(), "scores": np.array(b.scores[0])}
            return self._obs, reward, True, False, info
        obs = self._observe(b)
        return obs, reward, False, False, {"action_mask": self._mask.copy()}

    def action_masks(self) -> np.ndarray:
        """``[90]`` bool mask of the legal actions now."""
        return self._mask.copy()

    def render(self) -> Optional[str]:
        """With ``render_mode="ansi"``: the learner's hand and the legal cards, as text."""
        if self.render_mode != "ansi":
            return None
        hand = np.flatnonzero(self.env.section(self._obs, "hand"))
        legal = np.flatnonzero(self._mask)
        return f"seat {self.learner_seat} hand {hand.tolist()} legal {legal.tolist()}"

    def close(self) -> None:
        """End the server session."""
        self.env.close()


if ENV_ID not in gym.registry:
    gym.register(
        id=ENV_ID,
        entry_point="dgenv.gymnasium:Env",
        vector_entry_point="dgenv.gymnasium:VectorEnv",
    )
