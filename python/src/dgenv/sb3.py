"""Stable-Baselines3 adapter: a :class:`VecEnv` of server games, ready for MaskablePPO.

``num_envs`` games, one learner seat each, the other seats played by the
server's ``opponent`` bot. sb3-contrib's MaskablePPO finds the legal actions
through ``env_method("action_masks")`` (one ``[90]`` bool row per env)::

    from sb3_contrib import MaskablePPO
    venv = VecEnv(64, client)
    MaskablePPO("MlpPolicy", venv, n_steps=128).learn(100_000)

Auto-reset is the server's (same step), as SB3 expects: when ``dones[i]`` is
True, ``obs[i]`` is the next game's first observation. The terminal
observation is not sent by the server; ``infos[i]["terminal_observation"]``
holds zeros (games end by termination, so SB3 does not bootstrap from it).
``infos[i]["scores"]`` has the finished game's totals.

When the games in flight were lost (the server restarted or the session
expired, and the client re-created the session: ``Batch.truncated``), every
env reports ``dones[i]`` True with ``infos[i]["TimeLimit.truncated"]`` True,
``infos[i]["session_lost"]`` True and, as ``terminal_observation``, the last
observation of the lost game (SB3 bootstraps from it); ``obs[i]`` is the new
game's first.

Importing this module imports stable_baselines3 (``pip install 'dgenv[sb3]'``).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Union, cast

import numpy as np
from numpy.typing import DTypeLike

from ._clients import ClientLike, own_client
from ._common import require
from .base import BatchEnv, GameLike
from .options import EnvOptions, adapter_options, check_seats, one_seat

require("stable_baselines3", "sb3")
from gymnasium import spaces  # noqa: E402
from stable_baselines3.common.vec_env.base_vec_env import VecEnv as _SB3VecEnv  # noqa: E402

__all__ = ["VecEnv"]


class VecEnv(_SB3VecEnv):
    """Server games as a Stable-Baselines3 VecEnv (one learner seat per game).

    Args:
        num_envs: games stepped at once.
        client: a dgenv client (:func:`dgenv.connect`, :func:`dgenv.serve`, :func:`dgenv.local`), a server
            URL, ``"inproc"``, or None for the shared local server (:mod:`dgenv._clients`).
        players: seats per table (the card game: 3..6; None: the game's default, 4).
        learner_seat: the seat the agent plays.
        opponent: server bot for the other seats.
        reward: ``"points"`` or ``"zero_sum"``; the reward is the learner seat's.
        reward_scale: rewards are multiplied by this (deal points reach tens).
        seed: seed of the first reset.
        obs_dtype: observation dtype (float32 for SB3's policies).
        game: the game (a name or ``{"name": ..., **params}``; None: the card game).
        options: an :class:`~dgenv.EnvOptions` holding any of these settings
            (a keyword argument that differs from its default wins).
        packing: ``"bits"`` to have obs and masks sent bit-packed (see
            :meth:`dgenv.Client.make`); for a server across a network.
        deals: deals per game (default: as many as players).
    """

    def __init__(
        self,
        num_envs: int,
        client: ClientLike = None,
        *,
        players: Optional[int] = None,
        learner_seat: int = 0,
        opponent: str = "heuristic",
        reward: str = "points",
        reward_scale: float = 1.0,
        seed: Optional[int] = None,
        obs_dtype: DTypeLike = np.float32,
        deals: Optional[int] = None,
        packing: Optional[str] = None,
        game: GameLike = None,
        options: Optional[EnvOptions] = None,
    ) -> None:
        o = adapter_options(options, VecEnv.__init__, locals(), unsupported=("illegal_action", "illegal_action_reward"))
        obs_dtype = np.float32 if o.obs_dtype is None else o.obs_dtype
        seed = o.seed
        seats = one_seat(learner_seat, o)
        self.client, self._own_client = own_client(o.client)
        self.env: BatchEnv = self.client.make(**o.make_kwargs(num_envs=num_envs, learner_seats=seats, obs_dtype=obs_dtype))
        check_seats(self.env, seats)
        learner_seat = seats[0]
        reward_scale = float(o.reward_scale if o.reward_scale is not None else 1.0)
        self.learner_seat = int(learner_seat)
        self.reward_scale = float(reward_scale)
        lo, hi = self.env.spec.obs.low_high()
        dt = np.dtype(obs_dtype)
        obs_space = spaces.Box(low=lo.astype(dt), high=hi.astype(dt), shape=(self.env.obs_size,), dtype=cast(Any, dt))
        self.render_mode = None
        super().__init__(self.env.num_envs, obs_space, spaces.Discrete(self.env.num_actions))
        self._mask = np.zeros((self.num_envs, self.env.num_actions), dtype=bool)
        self._actions: Optional[np.ndarray] = None
        self._next_seed = seed
        self._terminal = np.zeros(self.env.obs_size, dtype=dt)
        self._obs: Optional[np.ndarray] = None  # the last observations returned

    # -- VecEnv API ----------------------------------------------------------
    def reset(self) -> np.ndarray:
        """Start a new game in every env; uses the seed given to :meth:`seed` if any."""
        seed = self._next_seed
        seeds = getattr(self, "_seeds", None)
        if seeds and seeds[0] is not None:
            seed = int(seeds[0])
        self._next_seed = None
        if hasattr(self, "_reset_seeds"):
            self._reset_seeds()
        b = self.env.reset(seed=seed)
        self._mask = b.mask
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._obs = np.asarray(b.obs)
        return self._obs

    def step_async(self, actions: np.ndarray) -> None:
        """Remember the actions (the request is sent in :meth:`step_wait`)."""
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every env; returns ``(obs, rewards, dones, infos)``."""
        assert self._actions is not None, "step_async first"
        b = self.env.step(self._actions)
        self._actions = None
        self._mask = b.mask
        rewards = b.rewards[:, self.learner_seat].astype(np.float32)
        if self.reward_scale != 1.0:
            rewards *= self.reward_scale
        dones = np.array(b.done)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):  # only the envs whose game ended
            infos[i] = {"terminal_observation": self._terminal, "scores": b.scores[i].copy(), "TimeLimit.truncated": False}
        if b.truncated.any():  # the games were lost with the session
            last = self._obs
            for i in np.flatnonzero(b.truncated):
                final = self._terminal if last is None else np.array(last[i])
                infos[i] = {"terminal_observation": final, "TimeLimit.truncated": True, "session_lost": True}
            dones |= b.truncated
            rewards[b.truncated] = 0.0
        self._obs = np.asarray(b.obs)
        return self._obs, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """``[N, 90]`` bool mask of the legal actions now."""
        return self._mask

    def close(self) -> None:
        """End the server session (and close the client if this env opened it from a URL)."""
        batch = getattr(self, "env", None)  # None: the constructor failed before the session
        if batch is not None:
            batch.close()
        if getattr(self, "_own_client", False):
            self.client.close()

    def _indices(self, indices: Union[None, int, Iterable[int]]) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, (int, np.integer)):
            return [int(indices)]
        return [int(i) for i in indices]

    def get_attr(self, attr_name: str, indices: Union[None, int, Iterable[int]] = None) -> list[Any]:
        """``attr_name`` of this object, once per requested env (the envs share it)."""
        idx = self._indices(indices)
        if attr_name == "action_masks":
            return [self.action_masks for _ in idx]
        value = getattr(self, attr_name)
        return [value for _ in idx]

    def set_attr(self, attr_name: str, value: Any, indices: Union[None, int, Iterable[int]] = None) -> None:
        """Set ``attr_name`` on this object (the envs share their attributes)."""
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: Union[None, int, Iterable[int]] = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call a per-env method. ``"action_masks"`` gives each env's ``[90]`` bool row."""
        idx = self._indices(indices)
        if method_name == "action_masks":
            m = self._mask
            return list(m) if len(idx) == self.num_envs else [m[i] for i in idx]
        fn = getattr(self, method_name)
        out = fn(*method_args, **method_kwargs)
        return [out for _ in idx]

    def env_is_wrapped(self, wrapper_class: type, indices: Union[None, int, Iterable[int]] = None) -> list[bool]:
        """No env is wrapped by a gymnasium wrapper."""
        return [False for _ in self._indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        """True if this VecEnv has ``attr_name``."""
        return hasattr(self, attr_name)

    def seed(self, seed: Optional[int] = None) -> Sequence[Optional[int]]:
        """Seed of the next reset (all envs derive their streams from it)."""
        self._next_seed = seed
        if hasattr(self, "_seeds"):
            self._seeds = [seed] * self.num_envs
        return [seed] * self.num_envs
