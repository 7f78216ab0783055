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

When the game in flight is lost (the server restarted or the session
expired, and the client re-created the session: ``Batch.truncated``), every
agent is truncated with reward 0 and ``infos[agent]["session_lost"]`` True;
:meth:`AECEnv.reset` starts a new game.

:func:`env` returns the AEC environment wrapped like PettingZoo's classic
games (``AssertOutOfBoundsWrapper``, ``OrderEnforcingWrapper``; illegal
actions are handled by the env itself, see above); :func:`raw_env` the bare
one. As in the classic turn-based games, ``metadata["is_parallelizable"]`` is
False: PettingZoo's ``aec_to_parallel`` needs every agent to act once per
cycle in seat order, and here the winner of a trick leads the next.

:func:`parallel_env` (:class:`ParallelEnv`) is the game as a PettingZoo
``ParallelEnv``: every live agent is in each step's observations; only the
agent to act (``infos[agent]["to_act"]`` True) plays its action, the
others' actions are ignored. So that third-party wrappers which sample an
action for every agent (TorchRL's ``PettingZooWrapper``) and masked policies
work, an agent not to act has the mask of one action, ``NOOP`` (0): its
draw is certain and adds nothing to a policy gradient (log-probability 0).
The AEC env keeps the classic games' all-zero mask for those agents.

Importing this module imports pettingzoo (``pip install 'dgenv[pettingzoo]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, cast

import numpy as np
from numpy.typing import DTypeLike

from ._clients import ClientLike, own_client
from ._common import describe_obs, require
from .base import Batch, BatchEnv, GameLike
from .options import EnvOptions, adapter_options

pz = require("pettingzoo", "pettingzoo")
gym = require("gymnasium", "pettingzoo")
from gymnasium import spaces  # noqa: E402
from pettingzoo.utils import wrappers  # noqa: E402

if TYPE_CHECKING:  # the names mypy resolves; at run time they come from `pz` above
    from pettingzoo import AECEnv as _PZAECEnv
    from pettingzoo import ParallelEnv as _PZParallelEnv
else:
    _PZAECEnv = pz.AECEnv
    _PZParallelEnv = pz.ParallelEnv

__all__ = ["AECEnv", "ParallelEnv", "env", "raw_env", "parallel_env", "NOOP"]

NOOP = 0  # the one action an agent not to act may take in the ParallelEnv (ignored)


class AECEnv(_PZAECEnv):
    """One David & Goliath game as a PettingZoo AEC environment (all seats are agents).

    Args:
        client: a dgenv client (:func:`dgenv.connect`, :func:`dgenv.serve`, :func:`dgenv.local`), a server
            URL, ``"inproc"``, or None for the shared local server (:mod:`dgenv._clients`).
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
        render_mode: None, ``"ansi"`` (:meth:`render` returns the text) or
            ``"human"`` (it prints it).
    """

    metadata: dict[str, Any] = {"name": "dgenv_v0", "render_modes": ["ansi", "human"], "is_parallelizable": False}

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
            raise ValueError(f"render_mode {render_mode!r}: want None, 'ansi' or 'human'")
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
        if b.truncated[0]:  # the game was lost with its session: it ends here, truncated
            self.rewards = {x: 0.0 for x in self.agents}
            for x in self.agents:
                self.truncations[x] = True
                self.infos[x] = {"session_lost": True}
            self._mask = self._no_mask
            self._accumulate_rewards()
            return
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
        """The agent to act, its observation (its hand in the card game) and the legal actions:
        returned with ``render_mode="ansi"``, printed with ``"human"``."""
        if self.render_mode is None or not self.agents:
            return None
        seat = self._seat[self.agent_selection]
        seen = describe_obs(self.env.spec, self._seen[seat])
        text = f"{self.agent_selection} {seen} legal {np.flatnonzero(self._mask).tolist()}"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """End the server session (and close the client if this env opened it from a URL)."""
        batch = getattr(self, "env", None)  # None: the constructor failed before the session
        if batch is not None:
            batch.close()
        if getattr(self, "_own_client", False):
            self.client.close()


class ParallelEnv(_PZParallelEnv):
    """The game as a PettingZoo ``ParallelEnv`` (see the module doc); takes :class:`AECEnv`'s arguments.

    ``step(actions)`` plays ``actions[agent]`` for the agent to act and ignores
    the others' (missing ones too). Each step's observations hold every live
    agent: the agent to act's current one; for the others, the one each saw
    at its last turn with the ``NOOP``-only mask. Each agent's info has the
    same keys at every step: ``to_act``, ``scores`` (the final totals, ``[P]``
    int32; zeros until the game ends), ``illegal_action`` and ``session_lost``.
    """

    metadata: dict[str, Any] = {"name": "dgenv_v0", "render_modes": ["ansi", "human"]}

    def __init__(self, client: ClientLike = None, **kwargs: Any) -> None:
        self.aec = AECEnv(client, **kwargs)
        self.possible_agents = list(self.aec.possible_agents)
        self.agents: list[str] = []
        self.render_mode = self.aec.render_mode
        self._noop = np.zeros(self.aec.env.num_actions, dtype=np.int8)
        self._noop[NOOP] = 1
        self._no_scores = np.zeros(self.aec.env.players, dtype=np.int32)

    def observation_space(self, agent: str) -> spaces.Dict:
        """``Dict(observation=Box[D], action_mask=Box[90] int8)``."""
        return self.aec.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Discrete:
        """``Discrete(num_actions)``."""
        return self.aec.action_space(agent)

    def _observe(self) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
        e = self.aec
        obs, infos = {}, {}
        for a in self.agents:
            o = e.observe(a)
            turn = a == e.agent_selection
            if not o["action_mask"].any():  # not to act, or the game is over
                o["action_mask"] = self._noop.copy()
            obs[a] = o
            info = e.infos.get(a, {})
            # The same keys at every step (TorchRL builds its specs from the reset's).
            infos[a] = {
                "to_act": turn,
                "scores": info.get("scores", self._no_scores),
                "illegal_action": bool(info.get("illegal_action", False)),
                "session_lost": bool(info.get("session_lost", False)),
            }
        return obs, infos

    def reset(
        self, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
        """Deal a new game; ``seed`` makes it reproducible."""
        self.aec.reset(seed=seed, options=options)
        self.agents = list(self.aec.agents)
        return self._observe()

    def step(self, actions: dict[str, Any]) -> tuple[
        dict[str, dict[str, np.ndarray]], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
    ]:
        """Play the action of the agent to act; returns ``(obs, rewards, terminations, truncations, infos)``."""
        e = self.aec
        if not self.agents:
            raise RuntimeError("the game is over: call reset()")
        agent = e.agent_selection
        if agent not in actions:
            raise KeyError(f"no action for {agent}, the agent to act (got {sorted(map(str, actions))})")
        e.step(actions[agent])
        rewards = {a: float(e.rewards.get(a, 0.0)) for a in self.agents}
        terms = {a: bool(e.terminations[a]) for a in self.agents}
        truncs = {a: bool(e.truncations[a]) for a in self.agents}
        obs, infos = self._observe()
        self.agents = [a for a in self.agents if not (terms[a] or truncs[a])]
        return obs, rewards, terms, truncs, infos

    def render(self) -> Optional[str]:
        """As :meth:`AECEnv.render`."""
        return self.aec.render()

    def state(self) -> np.ndarray:
        """Not available: the server encodes no global state (each seat sees only its own cards)."""
        raise NotImplementedError("dgenv's ParallelEnv has no global state: each agent observes its own view")

    def close(self) -> None:
        """End the server session."""
        aec = getattr(self, "aec", None)
        if aec is not None:
            aec.close()


def raw_env(client: ClientLike = None, **kwargs: Any) -> AECEnv:
    """The AEC environment without wrappers (PettingZoo naming)."""
    return AECEnv(client, **kwargs)


def env(client: ClientLike = None, **kwargs: Any) -> _PZAECEnv:
    """The AEC environment wrapped like PettingZoo's classic games (``.unwrapped`` is the :class:`AECEnv`)."""
    e: _PZAECEnv = AECEnv(client, **kwargs)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    return wrappers.OrderEnforcingWrapper(e)


def parallel_env(client: ClientLike = None, **kwargs: Any) -> ParallelEnv:
    """The game as a PettingZoo ParallelEnv (:class:`ParallelEnv`)."""
    return ParallelEnv(client, **kwargs)
