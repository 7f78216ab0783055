"""Gymnasium adapters: a batched :class:`VectorEnv` and a single-game :class:`Env`.

Both play one learner seat against the server's bots (``opponent``), which move
inside the server's step. Observations are the learner's flat observation
vector (float32 by default); the legal actions are ``info["action_mask"]`` and
``action_masks()``, in a form the action space's ``sample(mask=...)`` takes.

Vector env and auto-reset
    ``autoreset_mode`` is declared in ``metadata["autoreset_mode"]`` and is one of

    - ``"next_step"`` (default; Gymnasium's own default, which its vector
      wrappers such as NormalizeObservation need): the step that ends env i's
      game returns ``terminations[i] = True`` with the terminal observation
      (all zeros: the server does not encode a finished game, which has no
      decision left) and an all-zero mask; the next step ignores ``actions[i]``
      and returns the next game's first observation with reward 0. The server
      leaves env i untouched during that step (action -1, "skip").
    - ``"same_step"``: when ``terminations[i]`` is True, ``obs[i]`` and the mask
      already belong to env i's next game (the server's own auto-reset);
      ``info["final_obs"]`` holds zeros in the rows where ``info["_final_obs"]``
      is True, and ``info["final_info"]`` those games' last infos (``scores``,
      ``rewards_all``, ``games``, and an all-zero ``action_mask``), rows in
      ``info["_final_info"]``. No step is spent on resets: the fastest mode.

    The finished game's totals are ``info["scores"][i]`` (where
    ``info["_scores"][i]``). Games end by termination; ``truncations[i]`` is
    True where the game in flight was lost (``Batch.truncated``: the server
    restarted or the session expired, and the client re-created the session;
    docs/python.md, "Retries and restarts"): that episode ends there, and the
    env goes on with a new game as after a termination.

Illegal actions
    ``illegal_action="terminate"`` (default): an action outside the mask (e.g.
    from an unmasked ``action_space.sample()``) is not played: that env's
    episode ends with ``terminated=True``, reward ``illegal_action_reward``
    (default -1) and ``info["illegal_action"]`` True in its row. In the
    :class:`VectorEnv` the abandoned game is played out on the server with the
    lowest legal card for the learner (in the same ``step`` call, invisibly) so
    that the env's next episode starts with a new game. ``"raise"`` lets the
    server's :class:`~dgenv.errors.IllegalActionError` propagate instead, and
    nothing is stepped.

Worker processes
    The in-process engine (``client="inproc"``) does not survive ``fork()``
    (Go's runtime threads are not copied into the child). Gymnasium's
    ``AsyncVectorEnv`` (``gymnasium.make_vec(..., vectorization_mode="async")``)
    builds one env in the parent, loading the engine, and then starts its
    workers with the platform's default start method, ``fork`` on Linux. An
    :class:`Env` made with an in-process client inside such an
    ``AsyncVectorEnv`` raises at once, in the parent, naming the fix:
    ``vector_kwargs={"context": "spawn"}`` (or ``"forkserver"``). A server
    client (``client=None`` or a URL) forks fine, and :class:`VectorEnv` steps
    every env in one call, with no worker processes at all.

Importing this module imports gymnasium (``pip install 'dgenv[gymnasium]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Union, cast

import multiprocessing
import sys

import numpy as np
from numpy.typing import DTypeLike

from ._clients import ClientLike, is_inproc, own_client
from ._common import describe_obs, require
from .base import Batch, BatchEnv, GameLike, action_array
from .spec import ObsSpec
from .options import EnvOptions, adapter_options
from .options import check_seats as _check_seats
from .options import one_seat as _one_seat

gym = require("gymnasium", "gymnasium")
from gymnasium import spaces  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402

if TYPE_CHECKING:  # the names mypy resolves; at run time they come from `gym` above
    from gymnasium import Env as _GymEnv
    from gymnasium.vector import VectorEnv as _GymVectorEnv
else:
    _GymEnv = gym.Env
    _GymVectorEnv = gym.vector.VectorEnv

__all__ = ["VectorEnv", "Env", "MaskedMultiDiscrete", "observation_space", "ENV_ID"]

# gymnasium.make(ENV_ID, client=...) and gymnasium.make_vec(ENV_ID, num_envs=N,
# vectorization_mode="vector_entry_point", client=...) once this module is
# imported (or name it as "dgenv.gymnasium:dgenv/DavidGoliath-v0").
ENV_ID = "dgenv/DavidGoliath-v0"

SKIP = -1  # an action that leaves its env as it is for one server step (API: "skip")

_MODES = {
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
}


def observation_space(obs: ObsSpec, dtype: Optional[DTypeLike] = np.float32) -> spaces.Box:
    """Box of one observation with each section's documented bounds."""
    lo, hi = obs.low_high()
    dt = np.dtype(obs.dtype if dtype is None else dtype)
    return spaces.Box(low=lo.astype(dt), high=hi.astype(dt), shape=(obs.size,), dtype=cast(Any, dt))


def _refuse_forked_workers(client: Any) -> None:
    """Raise when an in-process client is about to be used by workers a Gymnasium
    ``AsyncVectorEnv`` will fork (see "Worker processes" in the module doc)."""
    if not is_inproc(client):
        return
    f = sys._getframe(1)
    while f is not None:
        me = f.f_locals.get("self") if f.f_code.co_name == "__init__" else None
        if me is not None and isinstance(me, gym.vector.AsyncVectorEnv):
            context = f.f_locals.get("context")
            method = multiprocessing.get_context(context).get_start_method()
            if method == "fork":
                raise RuntimeError(
                    "dgenv's in-process engine (client='inproc') cannot run in worker processes forked from "
                    "this one (Go's runtime does not survive fork()), and this AsyncVectorEnv forks "
                    f"(context={context!r}). Use a spawn context: gymnasium.make_vec(..., "
                    "vectorization_mode='async', vector_kwargs={'context': 'spawn'}) or "
                    "AsyncVectorEnv(..., context='spawn'); or a server client (client=None or a URL); "
                    "or dgenv.gymnasium.VectorEnv (vectorization_mode='vector_entry_point'), which needs no workers."
                )
            return
        f = f.f_back  # type: ignore[assignment]


def _illegal_mode(illegal_action: str) -> str:
    if illegal_action not in ("terminate", "raise"):
        raise ValueError(f"illegal_action {illegal_action!r}: want 'terminate' or 'raise'")
    return illegal_action


class MaskedMultiDiscrete(spaces.MultiDiscrete):
    """The VectorEnv's action space: ``MultiDiscrete([90] * N)`` whose ``sample(mask=...)``
    also takes the ``[N, 90]`` mask of ``info["action_mask"]`` (bool or int), as
    well as Gymnasium's tuple of int8 rows."""

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        """A random action per env; with ``mask``, a uniformly random legal one (0 where none is)."""
        if isinstance(mask, np.ndarray):
            mask = tuple(np.asarray(mask, dtype=np.int8).reshape(self.nvec.shape + (-1,)))
        return super().sample(mask=mask, probability=probability)


class VectorEnv(_GymVectorEnv):
    """``num_envs`` games on the server, one learner seat each, as a Gymnasium VectorEnv.

    Args:
        num_envs: games stepped at once.
        client: a dgenv client (:func:`dgenv.connect`, :func:`dgenv.serve`, :func:`dgenv.local`), a server
            URL, ``"inproc"``, or None for the shared local server (:mod:`dgenv._clients`).
        players: seats per table (the card game: 3..6; None: the game's default, 4).
        learner_seat: the seat this env plays; the others are played by ``opponent``.
        opponent: server bot for the other seats (``"heuristic"``, ``"random"``).
        reward: ``"points"`` or ``"zero_sum"``; the reward is the learner seat's.
        reward_scale: the rewards are multiplied by this (as in the SB3 and
            RLlib adapters; ``illegal_action_reward`` is not scaled).
        seed: seed of the first reset when ``reset`` gets none.
        obs_dtype: observation dtype (float32; None for the wire's uint8).
        autoreset_mode: ``"next_step"`` (default) or ``"same_step"`` (or a
            ``gymnasium.vector.AutoresetMode``); see the module doc.
        illegal_action: ``"terminate"`` (default) or ``"raise"``; see the module doc.
        illegal_action_reward: reward of an illegal action under ``"terminate"``.
        packing: ``"bits"`` to have obs and masks sent bit-packed (see
            :meth:`dgenv.Client.make`); for a server across a network.
        deals: deals per game (default: as many as players).
        game: the game (a name or ``{"name": ..., **params}``; None: the card game).
        options: an :class:`~dgenv.EnvOptions` holding any of these settings
            (a keyword argument that differs from its default wins).

    ``step`` returns ``(obs [N, D], rewards [N], terminations [N], truncations [N], info)``
    with ``info["action_mask"]`` ``[N, 90]`` bool, ``info["player"]``,
    ``info["scores"]`` ``[N, P]``, ``info["rewards_all"]`` ``[N, P]``,
    ``info["games"]`` ``[N]`` (games finished per env) and, under
    ``"terminate"``, ``info["illegal_action"]``. Each key ``k`` has its
    Gymnasium ``info["_k"]`` row mask.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

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
        obs_dtype: Optional[DTypeLike] = np.float32,
        autoreset_mode: Union[str, AutoresetMode] = "next_step",
        illegal_action: str = "terminate",
        illegal_action_reward: float = -1.0,
        deals: Optional[int] = None,
        packing: Optional[str] = None,
        game: GameLike = None,
        options: Optional[EnvOptions] = None,
    ) -> None:
        mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else _MODES.get(str(autoreset_mode).lower())
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode {autoreset_mode!r}: want 'next_step' or 'same_step'")
        o = adapter_options(options, VectorEnv.__init__, locals())
        obs_dtype = o.obs_dtype
        seed = o.seed
        self.illegal_action = _illegal_mode(str(o.illegal_action))
        self.illegal_action_reward = float(o.illegal_action_reward or 0.0)
        self.reward_scale = float(1.0 if o.reward_scale is None else o.reward_scale)
        self.client, self._own_client = own_client(o.client)
        seats = _one_seat(learner_seat, o)
        self.env: BatchEnv = self.client.make(**o.make_kwargs(num_envs=num_envs, learner_seats=seats))
        _check_seats(self.env, seats)
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.autoreset_mode: AutoresetMode = mode
        self.learner_seat = seats[0]
        self.num_envs = self.env.num_envs
        n, na = self.num_envs, self.env.num_actions
        self.single_observation_space = observation_space(self.env.spec.obs, obs_dtype)
        self.single_action_space = spaces.Discrete(na)
        self.observation_space = spaces.Box(
            low=np.broadcast_to(self.single_observation_space.low, (n, self.env.obs_size)),
            high=np.broadcast_to(self.single_observation_space.high, (n, self.env.obs_size)),
            dtype=cast(Any, self.single_observation_space.dtype),
        )
        self.action_space = MaskedMultiDiscrete(np.full(n, na, dtype=np.int64))
        self.render_mode = None
        self._seed = seed
        self._mask = np.zeros((n, na), dtype=bool)
        self._final_obs = np.zeros((n, self.env.obs_size), dtype=self.single_observation_space.dtype)
        self._final_obs.setflags(write=False)
        self._no_mask = np.zeros((n, na), dtype=bool)
        self._no_mask.setflags(write=False)
        self._all = np.ones(n, dtype=bool)
        self._ended = np.zeros(n, dtype=bool)  # NEXT_STEP: envs whose next step is their reset

    def _info(self, b: Batch, mask: np.ndarray, done: np.ndarray, illegal: Optional[np.ndarray]) -> dict[str, Any]:
        info: dict[str, Any] = {
            "action_mask": mask,
            "_action_mask": self._all,
            "player": b.player,
            "_player": self._all,
            "rewards_all": b.rewards,
            "_rewards_all": self._all,
            "games": b.episode,
            "_games": self._all,
            "scores": b.scores,
            "_scores": b.done,
        }
        if illegal is not None:
            info["illegal_action"] = illegal
            info["_illegal_action"] = illegal
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            info["final_obs"] = self._final_obs
            info["_final_obs"] = done
            # Gymnasium's same-step convention: the finished games' last infos
            # (TorchRL's GymWrapper puts them in the done rows of "next").
            info["final_info"] = {
                "action_mask": self._no_mask, "_action_mask": done,  # a finished game has no legal action
                "scores": b.scores, "_scores": done,
                "rewards_all": b.rewards, "_rewards_all": done,
                "games": b.episode, "_games": done,
            }
            info["_final_info"] = done
        return info

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
        b = self.env.reset(seed=None if seed is None else int(seed))
        self._mask = b.mask
        self._ended[:] = False
        return b.obs, self._info(b, b.mask, b.done, None)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Play one action per env (learner seat), then the opponents until the learner is to act."""
        n = self.num_envs
        a = np.asarray(actions)
        if a.shape != (n,):
            a = a.reshape(n)
        if a.dtype.kind not in "iu":
            a = action_array(a, n)  # the client's checks: integral values only (raises for these)
        a = a.astype(np.int64)
        resetting = self._ended if self.autoreset_mode == AutoresetMode.NEXT_STEP else None
        illegal: Optional[np.ndarray] = None
        if self.illegal_action == "terminate":
            legal = (a >= 0) & (a < self._mask.shape[1])
            legal[legal] = self._mask[np.flatnonzero(legal), a[legal]]
            if resetting is not None:
                legal |= resetting
            if not legal.all():
                illegal = ~legal
                a[illegal] = SKIP
        elif (a < 0).any() and (resetting is None or (a[~resetting] < 0).any()):
            # -1 would skip the env on the server: not a card
            k = int(np.flatnonzero((a < 0) if resetting is None else (a < 0) & ~resetting)[0])
            raise ValueError(f"actions[{k}] = {a[k]}: want a card id 0..{self._mask.shape[1] - 1}")
        if resetting is not None and resetting.any():
            a[resetting] = SKIP
        b = self.env.step(a)
        obs, mask, done = b.obs, b.mask, b.done
        rewards = np.array(b.rewards[:, self.learner_seat], dtype=np.float32)
        if self.reward_scale != 1.0:
            rewards *= self.reward_scale
        truncations = np.array(b.truncated, dtype=bool)
        terminations = np.array(done, dtype=bool)
        if illegal is not None:
            rewards[illegal] = self.illegal_action_reward
            terminations |= illegal
            # A truncated env already holds a new game: nothing to play out.
            abandoned = illegal & ~truncations
            if abandoned.any():
                # Play the abandoned games out now (under SAME_STEP the next
                # game's first observation is this step's).
                played_obs, played_mask, lost = self._play_out(abandoned, obs, mask)
                if lost is not None:  # the session was lost meanwhile: every env holds a new game
                    truncations |= lost
                    obs, mask = played_obs, played_mask
                elif self.autoreset_mode == AutoresetMode.SAME_STEP:
                    obs, mask = played_obs, played_mask
        ended = terminations | truncations
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            if ended.any():  # the terminal observation (zeros) and no legal action
                obs = obs if obs.flags.writeable else obs.copy()
                obs[ended] = 0
                mask = mask.copy()
                mask[ended] = False
            self._ended = ended
        self._mask = mask
        return obs, rewards, terminations, truncations, self._info(b, mask, ended, illegal)

    def _play_out(
        self, rows: np.ndarray, obs: np.ndarray, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """Finish the games of ``rows`` on the server (lowest legal card for the
        learner, the other envs skipped), so those envs start a new game.

        Returns ``obs`` and ``mask`` with those rows replaced by the new games'
        first ones, and None; or, when the session was lost (and re-created)
        meanwhile, the new session's obs and mask for every row and its
        ``truncated`` (every env's game was lost).
        """
        left = rows.copy()
        cur_mask = mask
        b: Optional[Batch] = None
        while left.any():
            a = np.full(self.num_envs, SKIP, dtype=np.int64)
            a[left] = np.argmax(cur_mask[left], axis=1)
            b = self.env.step(a)
            if b.truncated.any():
                return b.obs, b.mask, np.array(b.truncated, dtype=bool)
            cur_mask = b.mask
            left &= ~b.done
        assert b is not None
        obs = obs if obs.flags.writeable else obs.copy()
        mask = mask.copy()
        obs[rows] = b.obs[rows]
        mask[rows] = b.mask[rows]
        return obs, mask, None

    def action_masks(self) -> np.ndarray:
        """``[N, 90]`` bool mask of the legal actions for the current observations."""
        return self._mask

    def close_extras(self, **kwargs: Any) -> None:
        """End the server session (and close the client if this env opened it from a URL)."""
        _close(self)


class Env(_GymEnv):
    """One game on the server, one learner seat, as a Gymnasium Env.

    Args:
        client: a dgenv client (:func:`dgenv.connect`, :func:`dgenv.serve`, :func:`dgenv.local`), a server
            URL, ``"inproc"``, or None for the shared local server (:mod:`dgenv._clients`).
        players: seats per table (the card game: 3..6; None: the game's default, 4).
        learner_seat: the seat this env plays; the others are played by ``opponent``.
        opponent: server bot for the other seats.
        reward: ``"points"`` or ``"zero_sum"``.
        reward_scale: the rewards are multiplied by this (``illegal_action_reward`` is not).
        illegal_action: ``"terminate"`` (default) or ``"raise"``; see the module doc.
        illegal_action_reward: reward of an illegal action under ``"terminate"``.
        obs_dtype: observation dtype (float32; None for the wire's uint8).
        deals: deals per game (default: as many as players).
        game: the game (a name or ``{"name": ..., **params}``; None: the card game).
        options: an :class:`~dgenv.EnvOptions` holding any of these settings
            (a keyword argument that differs from its default wins).
        render_mode: None or ``"ansi"`` (a text summary of the learner's view).

    ``info["action_mask"]`` is the ``[90]`` int8 mask of the legal actions
    (``env.action_space.sample(mask=info["action_mask"])`` draws a legal one);
    :meth:`action_masks` gives it as bool. On termination the observation is
    all zeros (the game is over). When the game in flight was lost (the server
    restarted or the session expired: ``Batch.truncated``) the step returns
    ``truncated=True``, reward 0, the last observation again and
    ``info["session_lost"]`` True; call :meth:`reset` for a new game.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}

    def __init__(
        self,
        client: ClientLike = None,
        *,
        players: Optional[int] = None,
        learner_seat: int = 0,
        opponent: str = "heuristic",
        reward: str = "points",
        reward_scale: float = 1.0,
        illegal_action: str = "terminate",
        illegal_action_reward: float = -1.0,
        obs_dtype: Optional[DTypeLike] = np.float32,
        deals: Optional[int] = None,
        render_mode: Optional[str] = None,
        seed: Optional[int] = None,
        packing: Optional[str] = None,
        game: GameLike = None,
        options: Optional[EnvOptions] = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: want None or 'ansi'")
        o = adapter_options(options, Env.__init__, locals())
        _refuse_forked_workers(o.client)
        obs_dtype = o.obs_dtype
        self.illegal_action = _illegal_mode(str(o.illegal_action))
        self.client, self._own_client = own_client(o.client)
        seats = _one_seat(learner_seat, o)
        self.env: BatchEnv = self.client.make(**o.make_kwargs(num_envs=1, learner_seats=seats))
        _check_seats(self.env, seats)
        self.learner_seat = seats[0]
        self.illegal_action_reward = float(o.illegal_action_reward or 0.0)
        self.reward_scale = float(1.0 if o.reward_scale is None else o.reward_scale)
        self.observation_space = observation_space(self.env.spec.obs, obs_dtype)
        self.action_space = spaces.Discrete(self.env.num_actions)
        self.render_mode = render_mode
        self._obs = np.zeros(self.observation_space.shape, dtype=self.observation_space.dtype)
        self._mask = np.zeros(self.env.num_actions, dtype=np.int8)
        self._over = True

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new game; a seed makes it (and the bots' play) reproducible."""
        super().reset(seed=seed)
        b = self.env.reset(seed=seed)
        self._over = False
        return self._observe(b), {"action_mask": self._mask.copy()}

    def _observe(self, b: Batch) -> np.ndarray:
        self._obs = np.array(b.obs[0], dtype=self.observation_space.dtype)
        self._mask = b.mask[0].astype(np.int8)
        return self._obs

    def _end(self) -> np.ndarray:
        self._over = True
        self._obs = np.zeros_like(self._obs)
        self._mask = np.zeros_like(self._mask)
        return self._obs

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play ``action`` (a card id) for the learner seat, then the opponents' turns."""
        if self._over:
            raise RuntimeError("episode is over: call reset()")
        a = int(np.asarray(action).reshape(()))
        if self.illegal_action == "terminate" and not (0 <= a < self._mask.size and self._mask[a]):
            obs = self._end()
            return obs, self.illegal_action_reward, True, False, {"action_mask": self._mask.copy(), "illegal_action": True}
        b = self.env.step(np.array([a], dtype=np.int64))
        if b.truncated[0]:  # the game was lost with its session: end the episode there
            self._over = True
            self._mask = np.zeros_like(self._mask)
            return self._obs.copy(), 0.0, False, True, {"action_mask": self._mask.copy(), "session_lost": True}
        reward = float(b.rewards[0, self.learner_seat]) * self.reward_scale
        if b.done[0]:
            obs = self._end()
            return obs, reward, True, False, {"action_mask": self._mask.copy(), "scores": np.array(b.scores[0])}
        obs = self._observe(b)
        return obs, reward, False, False, {"action_mask": self._mask.copy()}

    def action_masks(self) -> np.ndarray:
        """``[num_actions]`` bool mask of the legal actions now."""
        return self._mask.astype(bool)

    def render(self) -> Optional[str]:  # type: ignore[override]
        """With ``render_mode="ansi"``: the learner's observation (its hand in the card game) and the legal actions, as text."""
        if self.render_mode != "ansi":
            return None
        legal = np.flatnonzero(self._mask)
        return f"seat {self.learner_seat} {describe_obs(self.env.spec, self._obs)} legal {legal.tolist()}"

    def close(self) -> None:
        """End the server session (and close the client if this env opened it from a URL)."""
        _close(self)


def _close(env: Any) -> None:
    """Close what the adapter opened; a constructor that failed half-way opened less
    (``__del__`` closes too: no AttributeError from a missing ``env``)."""
    batch = getattr(env, "env", None)
    if batch is not None:
        batch.close()
    if getattr(env, "_own_client", False):
        env.client.close()


if ENV_ID not in gym.registry:
    gym.register(
        id=ENV_ID,
        entry_point="dgenv.gymnasium:Env",
        vector_entry_point="dgenv.gymnasium:VectorEnv",
    )
