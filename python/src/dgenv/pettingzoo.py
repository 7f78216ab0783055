"""PettingZoo adapters: one game with every seat as an agent.

:class:`AECEnv` follows the layout of PettingZoo's classic games: agents
``"player_0"`` ... ``"player_{P-1}"`` (seat order), and each observation is a
dict ``{"observation": float32 [D], "action_mask": int8 [90]}``. The server
only encodes the observation of the seat to act, so ``observe(agent)`` for any
other agent returns the observation that agent saw at its last turn (zeros
before its first) with an all-zero action mask. Rewards come from the server
at the end of each deal (``"points"`` or ``"zero_sum"``); the game ends after
its last deal and every agent is terminated.

Illegal actions follow PettingZoo's convention for its classic games
(TerminateIllegalWrapper) by default, ``illegal_action="terminate"``: the
offending agent gets ``illegal_action_reward`` (default -1), the others 0,
every agent is terminated and ``infos[agent]["illegal_action"]`` is True.
With ``illegal_action="raise"`` the server's
:class:`~dgenv.errors.IllegalActionError` propagates instead and nothing changes.

:func:`parallel_env` converts with PettingZoo's ``turn_based_aec_to_parallel``:
each parallel step carries an action for every live agent and only the one of
the agent to act is played.

Importing this module imports pettingzoo (``pip install 'dgenv[pettingzoo]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, cast

import numpy as np
from numpy.typing import DTypeLike

from ._common import ClientLike, describe_obs, own_client, require
from .client import Batch, BatchEnv, GameLike
from .options import EnvOptions, adapter_options

pz = require("pettingzoo", "pettingzoo")
gym = require("gymnasium", "pettingzoo")
from gymnasium import spaces  # noqa: E402
from pettingzoo.utils.conversions import turn_based_aec_to_parallel  # noqa: E402

if TYPE_CHECKING:  # the names mypy resolves; at run time they come from `pz` above
    from pettingzoo import AECEnv as _PZAECEnv
    from pettingzoo import ParallelEnv
else:
    _PZAECEnv = pz.AECEnv
    ParallelEnv = pz.ParallelEnv

__all__ = ["AECEnv", "env", "raw_env", "parallel_env"]


class AECEnv(_PZAECEnv):
    """One David & Goliath game as a PettingZoo AEC environment (all seats are agents).

    Args:
        client: a :class:`dgenv.Client`, a server URL, or None for the shared local server.
        players: seats per table (the card game: 3..6; None: the game's default, 4).
        reward: ``"points"`` or ``"zero_sum"``.
        deals: deals per game (default: as many as players).
        seed: seed of the first game (:meth:`reset`'s seed wins).
        packing: ``"bits"`` to have obs and mask travel bit-packed.
        game: the game (a name or ``{"name": ..., **params}``; None: the card game).
        options: an :class:`~dgenv.EnvOptions` holding any of these settings
            (a keyword argument that differs from its default wins).
        obs_dtype: dtype of ``"observation"`` (float32; None for the wire's uint8).
        illegal_action: ``"terminate"`` (default) or ``"raise"`` (see the module doc).
        illegal_action_reward: reward of the offending agent under ``"terminate"``.
        render_mode: None or ``"ansi"``.
    """

    metadata: dict[str, Any] = {"name": "dgenv_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        client: ClientLike = None,
        *,
        players: Optional[int] = None,
        reward: str = "points",
        deals: Optional[int] = None,
        obs_dtype: Optional[DTypeLike] = np.float32,
        illegal_action: str = "terminate",
        illegal_action_reward: float = -1.0,
        render_mode: Optional[str] = None,
        seed: Optional[int] = None,
        packing: Optional[str] = None,
        game: GameLike = None,
        options: Optional[EnvOptions] = None,
    ) -> None:
        super().__init__()
        o = adapter_options(
            options, AECEnv.__init__, locals(), unsupported=("opponent", "learner_seats", "reward_scale")
        )
        obs_dtype = o.obs_dtype
        if o.illegal_action not in ("raise", "terminate"):
            raise ValueError(f"illegal_action {o.illegal_action!r}: want 'raise' or 'terminate'")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: want None or 'ansi'")
        self.client, self._own_client = own_client(o.client)
        self.env: BatchEnv = self.client.make(**o.make_kwargs(num_envs=1))
        self.render_mode = render_mode
        self.illegal_action = str(o.illegal_action)
        self.illegal_action_reward = float(o.illegal_action_reward or 0.0)
        p = self.env.players
        self.possible_agents = [f"player_{i}" for i in range(p)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        lo, hi = self.env.spec.obs.low_high()
        dt = np.dtype(self.env.spec.obs.dtype if obs_dtype is None else obs_dtype)
        d, n = self.env.obs_size, self.env.num_actions
        box = spaces.Box(low=lo.astype(dt), high=hi.astype(dt), shape=(d,), dtype=cast(Any, dt))
        self._obs_space = spaces.Dict(
            {"observation": box, "action_mask": spaces.Box(0, 1, shape=(n,), dtype=np.int8)}
        )
        self._act_space: spaces.Discrete = spaces.Discrete(n)
        self._obs_dtype = dt
        self._seen = np.zeros((p, d), dtype=dt)  # each seat's last observation
        self._mask = np.zeros(n, dtype=np.int8)  # legal actions of the agent to act
        self._no_mask = np.zeros(n, dtype=np.int8)
        self._scores: Optional[np.ndarray] = None
        self.agents: list[str] = []

    # -- spaces --------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Dict:
        """``Dict(observation=Box[D], action_mask=Box[90] int8)``, the same object for every agent."""
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """``Discrete(num_actions)``: the action to play (a card id in the card game)."""
        return self._act_space

    # -- AEC API -------------------------------------------------------------
    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> None:
        """Deal a new game; ``seed`` makes it reproducible."""
        b = self.env.reset(seed=seed)
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._seen[:] = 0
        self._scores = None
        self._take(b)

    def _take(self, b: Batch) -> None:
        seat = int(b.player[0])
        self._seen[seat] = b.obs[0]
        self._mask = b.mask[0].astype(np.int8)
        self.agent_selection = self.possible_agents[seat]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """The agent's observation: current for the agent to act, else its last one (mask all 0)."""
        seat = self._seat[agent]
        live = bool(self.agents) and agent == self.agent_selection and not (
            self.terminations.get(agent, True) or self.truncations.get(agent, True)
        )
        return {
            "observation": self._seen[seat].copy(),
            "action_mask": (self._mask if live else self._no_mask).copy(),
        }

    def step(self, action: Optional[int]) -> None:
        """Play ``action`` for ``agent_selection`` (None for an agent that is done)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        a = int(np.asarray(action).reshape(()))
        self._cumulative_rewards[agent] = 0.0
        if self.illegal_action == "terminate" and not (0 <= a < self._mask.size and self._mask[a]):
            self.rewards = {x: 0.0 for x in self.agents}
            self.rewards[agent] = self.illegal_action_reward
            self._end({"illegal_action": True})
            self._accumulate_rewards()
            return
        b = self.env.step(np.array([a], dtype=np.int16))
        r = b.rewards[0]
        self.rewards = {x: float(r[self._seat[x]]) for x in self.agents}
        if b.done[0]:
            self._scores = np.array(b.scores[0])
            self._end({"scores": self._scores})
        else:
            self._take(b)
        self._accumulate_rewards()

    def _end(self, info: dict[str, Any]) -> None:
        for x in self.agents:
            self.terminations[x] = True
            self.infos[x] = dict(info)
        self._mask = self._no_mask

    def render(self) -> Optional[str]:
        """With ``render_mode="ansi"``: the agent to act, its observation (its hand in the card game) and the legal actions."""
        if self.render_mode != "ansi" or not self.agents:
            return None
        seat = self._seat[self.agent_selection]
        seen = describe_obs(self.env.spec, self._seen[seat])
        return f"{self.agent_selection} {seen} legal {np.flatnonzero(self._mask).tolist()}"

    def close(self) -> None:
        """End the server session (and close the client if this env opened it from a URL)."""
        self.env.close()
        if self._own_client:
            self.client.close()


def raw_env(client: ClientLike = None, **kwargs: Any) -> AECEnv:
    """The AEC environment without wrappers (PettingZoo naming)."""
    return AECEnv(client, **kwargs)


def env(client: ClientLike = None, **kwargs: Any) -> AECEnv:
    """The AEC environment (PettingZoo naming; no wrappers are needed: illegal actions end the game, see the module doc)."""
    return AECEnv(client, **kwargs)


def parallel_env(client: ClientLike = None, **kwargs: Any) -> ParallelEnv:
    """The game as a PettingZoo ParallelEnv (``turn_based_aec_to_parallel``)."""
    return turn_based_aec_to_parallel(AECEnv(client, **kwargs))
