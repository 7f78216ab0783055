"""RLlib adapter (new API stack): the game as a turn-based ``MultiAgentEnv``.

Agents are ``"player_0"`` ... ``"player_{P-1}"`` (seat order). Only the agent to
act observes: each step returns one observation, ``{"observations": float32
[D], "action_mask": float32 [90]}``, the layout RLlib's action-masking module
(``ActionMaskingTorchRLModule``) expects. Deal rewards go to every seat when a
deal ends (RLlib credits an agent's reward to its next observation). When the
game ends, every agent gets a final observation (zeros, mask all 0: the game
is over) and ``terminateds["__all__"]`` is True. When the game in flight was
lost instead (the server restarted or the session expired, and the client
re-created the session: ``Batch.truncated``), the same final observations
come with reward 0, ``truncateds["__all__"]`` True and
``infos[agent]["session_lost"]`` True; ``reset`` starts a new game.

With ``opponent`` set (e.g. ``"heuristic"``) the server plays every seat but
``learner_seats`` (default ``[0]``), inside its step, so only those seats are
agents; with ``opponent=None`` every seat is an agent (self-play: map them all
to one policy, as :func:`ppo_config` does).

Illegal actions follow RLlib's and PettingZoo's convention by default
(``illegal_action="terminate"``): the game ends, the offender gets
``illegal_action_reward`` (default -1) and the others 0. ``"raise"`` lets the
server's :class:`~dgenv.errors.IllegalActionError` propagate instead.

``env_config`` keys (all optional): ``url`` (a running server; None starts one
per process, i.e. per env runner, or uses ``$DGENV_URL``), ``token``,
``ca_file`` (for an ``https://`` url: the certificates to trust),
``options`` (a :class:`~dgenv.EnvOptions`), and any field of
:class:`~dgenv.EnvOptions` (``game``, ``players``, ``deals``, ``seed``,
``reward``, ``opponent``, ``learner_seats``, ``reward_scale``,
``illegal_action``, ``illegal_action_reward``, ``packing``, ``client``...),
which wins over the same field of ``options``.

Importing this module imports ray[rllib] (``pip install 'dgenv[rllib]'``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import numpy as np

from ._clients import own_client
from ._common import require
from .base import BatchEnv, EnvClient
from .client import connect
from .options import EnvOptions

require("ray.rllib", "rllib")
from gymnasium import spaces  # noqa: E402

from ray.rllib.env.multi_agent_env import MultiAgentEnv as _RLlibMultiAgentEnv  # noqa: E402
from ray.rllib.utils.typing import MultiAgentDict  # noqa: E402

if TYPE_CHECKING:
    from ray.rllib.algorithms.ppo import PPOConfig

__all__ = ["MultiAgentEnv", "ppo_config", "POLICY"]

POLICY = "shared"  # the one policy every agent maps to in ppo_config



class MultiAgentEnv(_RLlibMultiAgentEnv):
    """One David & Goliath game per env as an RLlib MultiAgentEnv (turn-based).

    Args:
        config: the ``env_config`` (see the module doc); RLlib passes it.
    """

    def __init__(self, config: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        cfg = dict(config or {})
        base = cfg.pop("options", None)
        if base is not None and not isinstance(base, EnvOptions):
            raise TypeError(f"env_config['options']: want a dgenv.EnvOptions, got {type(base).__name__}")
        url, token, ca_file = cfg.pop("url", None), cfg.pop("token", None), cfg.pop("ca_file", None)
        known = {f.name for f in dataclasses.fields(EnvOptions)} | {"url", "token", "ca_file", "options"}
        unknown = set(cfg) - known
        if unknown:
            raise ValueError(f"env_config: unknown keys {sorted(unknown)}; known: {sorted(known)}")
        given = EnvOptions.from_mapping(cfg)
        # The keys given win over the options object's fields.
        o = (base or EnvOptions()).replace(**{k: v for k, v in dataclasses.asdict(given).items() if v is not None})
        if o.obs_dtype is not None and np.dtype(o.obs_dtype) != np.float32:
            raise ValueError(f"obs_dtype {o.obs_dtype!r}: RLlib's observations are float32")
        self.illegal_action = str(o.illegal_action or "terminate")
        if self.illegal_action not in ("terminate", "raise"):
            raise ValueError(f"illegal_action {self.illegal_action!r}: want 'terminate' or 'raise'")
        self.illegal_action_reward = float(-1.0 if o.illegal_action_reward is None else o.illegal_action_reward)
        self.reward_scale = float(1.0 if o.reward_scale is None else o.reward_scale)
        self._own_client = url is not None or isinstance(o.client, str)
        if url is not None:
            self.client: EnvClient = connect(str(url), token=token, ca_file=ca_file)
        else:
            self.client, _ = own_client(o.client)
        seats = o.learner_seats
        if o.opponent is not None and seats is None:
            seats = [0]
        self.env: BatchEnv = self.client.make(**o.make_kwargs(num_envs=1, learner_seats=seats, obs_dtype=np.float32))
        self.seats = list(self.env.spec.learner_seats)
        names: list[str] = [f"player_{s}" for s in self.seats]
        self.agents = self.possible_agents = list(names)
        self._seat = {f"player_{s}": s for s in self.seats}
        lo, hi = self.env.spec.obs.low_high()
        d, n = self.env.obs_size, self.env.num_actions
        obs_space = spaces.Dict(
            {
                "observations": spaces.Box(lo.astype(np.float32), hi.astype(np.float32), (d,), np.float32),
                "action_mask": spaces.Box(0.0, 1.0, (n,), np.float32),
            }
        )
        self.observation_spaces = {a: obs_space for a in names}
        self.action_spaces = {a: spaces.Discrete(n) for a in names}
        self.observation_space = spaces.Dict({a: obs_space for a in names})
        self.action_space = spaces.Dict({a: spaces.Discrete(n) for a in names})
        self._names = names
        self._mask = np.zeros(n, dtype=np.float32)
        self._obs = np.zeros(d, dtype=np.float32)
        self._to_act = names[0]
        self._over = True

    def _observe(self, obs: np.ndarray, mask: np.ndarray, player: int) -> MultiAgentDict:
        self._obs = np.array(obs, dtype=np.float32)
        self._mask = mask.astype(np.float32)
        self._to_act = f"player_{player}"
        return {self._to_act: {"observations": self._obs, "action_mask": self._mask}}

    def _final(self) -> MultiAgentDict:
        z = {"observations": np.zeros_like(self._obs), "action_mask": np.zeros_like(self._mask)}
        return {a: {k: v.copy() for k, v in z.items()} for a in self._names}

    def reset(  # type: ignore[override]  # RLlib's per-agent dicts, not gymnasium.Env's
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        """Deal a new game; ``seed`` makes it (and the bots' play) reproducible."""
        b = self.env.reset(seed=seed)
        self._over = False
        return self._observe(b.obs[0], b.mask[0], int(b.player[0])), {}

    def step(  # type: ignore[override]  # RLlib's per-agent dicts, not gymnasium.Env's
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        """Play the acting agent's action (other agents' entries are ignored)."""
        if self._over:
            raise RuntimeError("episode is over: call reset()")
        agent = self._to_act
        if agent not in action_dict:
            raise KeyError(f"no action for {agent}, the agent to act (got {sorted(map(str, action_dict))})")
        a = int(np.asarray(action_dict[agent]).reshape(()))
        no: MultiAgentDict = {"__all__": False}
        if self.illegal_action == "terminate" and not (0 <= a < self._mask.size and self._mask[a] > 0):
            self._over = True
            rewards: MultiAgentDict = {x: 0.0 for x in self._names}
            rewards[agent] = self.illegal_action_reward
            return self._final(), rewards, {"__all__": True}, no, {agent: {"illegal_action": True}}
        b = self.env.step(np.array([a], dtype=np.int64))
        if b.truncated[0]:  # the game was lost with its session: it ends here, truncated
            self._over = True
            lost: MultiAgentDict = {x: {"session_lost": True} for x in self._names}
            return self._final(), {x: 0.0 for x in self._names}, no, {"__all__": True}, lost
        r = b.rewards[0]
        rewards = {x: float(r[s]) * self.reward_scale for x, s in self._seat.items() if r[s] != 0 or x == agent}
        if b.done[0]:
            self._over = True
            scores = np.array(b.scores[0])
            return self._final(), rewards, {"__all__": True}, no, {x: {"scores": scores} for x in self._names}
        return self._observe(b.obs[0], b.mask[0], int(b.player[0])), rewards, no, no, {}

    def close(self) -> None:
        """End the server session (and the connection, if this env opened it from a URL)."""
        batch = getattr(self, "env", None)  # None: the constructor failed before the session
        if batch is not None:
            batch.close()
        if getattr(self, "_own_client", False):
            self.client.close()


def ppo_config(
    env_config: Optional[Mapping[str, Any]] = None,
    *,
    num_env_runners: int = 2,
    num_envs_per_env_runner: int = 1,
    train_batch_size: int = 4000,
    minibatch_size: int = 512,
    num_epochs: int = 4,
    lr: float = 3e-4,
    hiddens: Sequence[int] = (256, 256),
    gamma: float = 0.99,
    lambda_: float = 1.0,
    entropy_coeff: float = 0.0,
    seed: Optional[int] = None,
) -> "PPOConfig":
    """PPO with action masking on :class:`MultiAgentEnv`: every agent maps to one policy (``POLICY``).

    ``hiddens``: the tanh MLP's hidden layers, one for the policy and one for
    the value function (RLlib's ``fcnet_hiddens``; the heads are linear).
    ``gamma``, ``lambda_`` and ``entropy_coeff`` are RLlib's defaults; the
    settings that learn within minutes are in docs/python.md ("A first run
    that learns").

    Returns the ``PPOConfig``; ``ppo_config(...).build_algo()`` makes the
    algorithm (``.build()`` on older Ray) and ``algo.train()`` runs an iteration.
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    module = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        model_config={"fcnet_hiddens": list(hiddens), "fcnet_activation": "tanh", "head_fcnet_hiddens": []},
    )
    config = (
        PPOConfig()
        .environment(MultiAgentEnv, env_config=dict(env_config or {}))
        .multi_agent(policies={POLICY}, policy_mapping_fn=_to_shared)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={POLICY: module}))
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=num_envs_per_env_runner,
            rollout_fragment_length="auto",
        )
        .training(
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
            lr=lr,
            gamma=gamma,
            lambda_=lambda_,
            entropy_coeff=entropy_coeff,
        )
    )
    if seed is not None:
        config = config.debugging(seed=seed)
    return config


def _to_shared(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    return POLICY

