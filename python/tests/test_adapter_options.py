"""Every adapter honours or refuses every EnvOptions field: never a silent drop.

For each adapter and each field of :class:`dgenv.EnvOptions`, the field is
given a value other than its default. The adapter either refuses it with a
ValueError naming the field, or the value shows: in what reached the
server's create, or in the play (the observation dtype, the reward scale, the
illegal-action convention).
"""

from __future__ import annotations

import dataclasses
import gc
import sys
from typing import Any, Callable

import numpy as np
import pytest

import dgenv
from dgenv import EnvOptions

BASE: dict[str, Any] = {"players": 3, "deals": 1, "seed": 3}


class Driver:
    """One adapter, driven through its own API: reset, step, and what the play shows."""

    name = ""
    multi_agent = False  # every seat is an agent unless an opponent is set

    def make(self, o: EnvOptions) -> Any:
        raise NotImplementedError

    def batch(self, e: Any) -> dgenv.BatchEnv:
        return e.env

    def reset(self, e: Any) -> tuple[np.ndarray, np.ndarray]:
        """(observation of the one to act, its bool mask)."""
        raise NotImplementedError

    def step(self, e: Any, a: int) -> tuple[float, np.ndarray, bool]:
        """(the step's reward summed over the agents, the next bool mask, the game ended)."""
        raise NotImplementedError

    def close(self, e: Any) -> None:
        e.close()


class GymVector(Driver):
    name = "gymnasium.VectorEnv"

    def make(self, o: EnvOptions) -> Any:
        from dgenv.gymnasium import VectorEnv

        return VectorEnv(1, options=o)

    def reset(self, e: Any) -> tuple[np.ndarray, np.ndarray]:
        obs, info = e.reset()
        return obs[0], info["action_mask"][0]

    def step(self, e: Any, a: int) -> tuple[float, np.ndarray, bool]:
        _, r, term, trunc, info = e.step(np.array([a]))
        return float(r[0]), info["action_mask"][0], bool(term[0] or trunc[0])


class GymEnv(Driver):
    name = "gymnasium.Env"

    def make(self, o: EnvOptions) -> Any:
        from dgenv.gymnasium import Env

        return Env(options=o)

    def reset(self, e: Any) -> tuple[np.ndarray, np.ndarray]:
        obs, info = e.reset()
        return obs, info["action_mask"].astype(bool)

    def step(self, e: Any, a: int) -> tuple[float, np.ndarray, bool]:
        _, r, term, trunc, info = e.step(a)
        return float(r), info["action_mask"].astype(bool), bool(term or trunc)


class PZAEC(Driver):
    name = "pettingzoo.AECEnv"
    multi_agent = True

    def make(self, o: EnvOptions) -> Any:
        from dgenv.pettingzoo import env

        return env(options=o)  # wrapped, as PettingZoo's classic games

    def batch(self, e: Any) -> dgenv.BatchEnv:
        return e.unwrapped.env

    def reset(self, e: Any) -> tuple[np.ndarray, np.ndarray]:
        e.reset()
        o = e.observe(e.agent_selection)
        return o["observation"], o["action_mask"].astype(bool)

    def step(self, e: Any, a: int) -> tuple[float, np.ndarray, bool]:
        e.step(a)
        r = float(sum(e.rewards.values()))
        done = all(e.terminations.values()) or all(e.truncations.values())
        return r, e.observe(e.agent_selection)["action_mask"].astype(bool), done


class PZParallel(Driver):
    name = "pettingzoo.ParallelEnv"
    multi_agent = True

    def make(self, o: EnvOptions) -> Any:
        from dgenv.pettingzoo import ParallelEnv

        return ParallelEnv(options=o)

    def batch(self, e: Any) -> dgenv.BatchEnv:
        return e.aec.env

    def _turn(self, obs: dict, infos: dict) -> tuple[np.ndarray, np.ndarray]:
        (agent,) = [a for a, i in infos.items() if i["to_act"]]
        self.agent = agent
        return obs[agent]["observation"], obs[agent]["action_mask"].astype(bool)

    def reset(self, e: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._turn(*e.reset())

    def step(self, e: Any, a: int) -> tuple[float, np.ndarray, bool]:
        from dgenv.pettingzoo import NOOP

        obs, r, term, trunc, infos = e.step({x: a if x == self.agent else NOOP for x in e.agents})
        if not e.agents:
            return float(sum(r.values())), np.zeros(90, bool), True
        return float(sum(r.values())), self._turn(obs, infos)[1], False


class SB3(Driver):
    name = "sb3.VecEnv"

    def make(self, o: EnvOptions) -> Any:
        from dgenv.sb3 import VecEnv

        return VecEnv(1, options=o)

    def reset(self, e: Any) -> tuple[np.ndarray, np.ndarray]:
        obs = e.reset()
        return obs[0], e.action_masks()[0]

    def step(self, e: Any, a: int) -> tuple[float, np.ndarray, bool]:
        e.step_async(np.array([a]))
        _, r, dones, _ = e.step_wait()
        return float(r[0]), e.action_masks()[0], bool(dones[0])


class RLlib(Driver):
    name = "rllib.MultiAgentEnv"
    multi_agent = True

    def make(self, o: EnvOptions) -> Any:
        from dgenv.rllib import MultiAgentEnv

        return MultiAgentEnv({"options": o})

    def _turn(self, obs: dict) -> tuple[np.ndarray, np.ndarray]:
        ((self.agent, o),) = obs.items()
        return o["observations"], o["action_mask"] > 0

    def reset(self, e: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._turn(e.reset()[0])

    def step(self, e: Any, a: int) -> tuple[float, np.ndarray, bool]:
        obs, r, term, trunc, _ = e.step({self.agent: a})
        if term["__all__"] or trunc["__all__"]:
            return float(sum(r.values())), np.zeros(90, bool), True
        return float(sum(r.values())), self._turn(obs)[1], False


class OpenSpielEnv(Driver):
    name = "openspiel.Environment"
    multi_agent = True

    def make(self, o: EnvOptions) -> Any:
        from dgenv.openspiel import Environment

        return Environment(options=o)

    def _turn(self, e: Any, ts: Any) -> tuple[np.ndarray, np.ndarray]:
        p = ts.observations["current_player"]
        mask = np.zeros(e.env.num_actions, bool)
        mask[ts.observations["legal_actions"][p]] = True
        # info_state holds Python numbers; their dtype is the one the env converts from
        return np.asarray(ts.observations["info_state"][p], dtype=e._seen.dtype), mask

    def reset(self, e: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._turn(e, e.reset())

    def step(self, e: Any, a: int) -> tuple[float, np.ndarray, bool]:
        ts = e.step([a])
        if ts.last():
            return float(sum(ts.rewards)), np.zeros(90, bool), True
        return float(sum(ts.rewards)), self._turn(e, ts)[1], False


DRIVERS = [GymVector(), GymEnv(), PZAEC(), PZParallel(), SB3(), RLlib(), OpenSpielEnv()]


def play(d: Driver, e: Any) -> float:
    """A whole game, lowest legal action each turn: the rewards' sum."""
    _, mask = d.reset(e)
    total, done = 0.0, False
    while not done:
        r, mask, done = d.step(e, int(np.flatnonzero(mask)[0]))
        total += r
    return total


def illegal(d: Driver, e: Any) -> float:
    _, mask = d.reset(e)
    return d.step(e, int(np.flatnonzero(~mask)[0]))[0]


# Each field: a value other than its default, and how to see it was honoured.
Check = Callable[[Driver, Any, dgenv.LocalServer], None]


def _created(field: str, want: Any) -> Check:
    def check(d: Driver, e: Any, server: dgenv.LocalServer) -> None:
        body = d.batch(e)._create_body
        got = body.get("game", {}).get(field) if field in ("players", "deals", "name") else body.get(field)
        assert got == want, f"create's {field} = {got!r}, want {want!r}"

    return check


def _spec(attr: str, want: Any) -> Check:
    def check(d: Driver, e: Any, server: dgenv.LocalServer) -> None:
        got = getattr(d.batch(e).spec, attr)
        assert got == want, f"spec.{attr} = {got!r}, want {want!r}"

    return check


def _packed(d: Driver, e: Any, server: dgenv.LocalServer) -> None:
    assert d.batch(e).spec.obs.packed is not None, "obs and mask do not travel packed"


def _uint8(d: Driver, e: Any, server: dgenv.LocalServer) -> None:
    obs, _ = d.reset(e)
    assert obs.dtype == np.uint8, f"observation dtype {obs.dtype}, want uint8"


def _raises(d: Driver, e: Any, server: dgenv.LocalServer) -> None:
    with pytest.raises(dgenv.IllegalActionError):
        illegal(d, e)


def _illegal_reward(d: Driver, e: Any, server: dgenv.LocalServer) -> None:
    assert illegal(d, e) == -7.0


def _scaled(d: Driver, e: Any, server: dgenv.LocalServer) -> None:
    plain = d.make(EnvOptions(client=server, **BASE, **_opponent(d)))
    try:
        want = 0.5 * play(d, plain)
    finally:
        d.close(plain)
    assert want != 0, "the reference game scored nothing"
    assert play(d, e) == pytest.approx(want), "reward_scale=0.5 did not halve the rewards"


def _own_client(d: Driver, e: Any, server: dgenv.LocalServer) -> None:
    assert d.batch(e).client.url == server.url


FIELDS: dict[str, tuple[Any, Check]] = {
    "game": ({"name": "david_goliath", "first_dealer": 2}, lambda d, e, s: _spec("params", {"players": 3, "deals": 1, "first_dealer": 2})(d, e, s)),
    "players": (4, _spec("players", 4)),
    "deals": (2, _created("deals", 2)),
    "seed": (11, _created("seed", 11)),
    "obs_dtype": ("uint8", _uint8),
    "packing": ("bits", _packed),
    "opponent": ("random", _spec("opponent", "random")),
    "learner_seats": ([1], _spec("learner_seats", (1,))),
    "reward": ("zero_sum", _created("reward", "zero_sum")),
    "illegal_action": ("raise", _raises),
    "illegal_action_reward": (-7.0, _illegal_reward),
    "reward_scale": (0.5, _scaled),
    "client": (None, _own_client),  # the value is the server's URL
}


def test_the_table_covers_every_field() -> None:
    assert set(FIELDS) == {f.name for f in dataclasses.fields(EnvOptions)}


def _opponent(d: Driver) -> dict[str, Any]:
    # Single-seat adapters need an opponent; every-seat ones refuse one (checked as its own field).
    return {} if d.multi_agent else {"opponent": "heuristic"}


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: d.name)
def test_every_adapter_honours_or_refuses_every_option(server: dgenv.LocalServer, driver: Driver, field: str) -> None:
    value, check = FIELDS[field]
    kw: dict[str, Any] = {**BASE, "client": server, **_opponent(driver)}
    if field == "client":
        value = server.url
    if field == "players":
        kw.pop("players")
    if field == "learner_seats" and isinstance(driver, RLlib):
        kw["opponent"] = "random"  # RLlib's learner seats come with an opponent (the others refuse both)
    kw[field] = value
    try:
        e = driver.make(EnvOptions(**kw))
    except ValueError as err:
        assert field in str(err), f"{driver.name} refused options.{field} with a message not naming it: {err}"
        return
    try:
        check(driver, e, server)
    finally:
        driver.close(e)


def test_vector_env_scales_rewards_as_sb3_does(server: dgenv.LocalServer) -> None:
    from dgenv.gymnasium import VectorEnv

    d = GymVector()
    plain, scaled = VectorEnv(1, server, opponent="heuristic", **BASE), VectorEnv(1, server, opponent="heuristic", reward_scale=0.01, **BASE)
    try:
        want = play(d, plain)
        assert want != 0 and play(d, scaled) == pytest.approx(0.01 * want)
        assert scaled.reward_scale == 0.01
    finally:
        plain.close()
        scaled.close()


def test_a_failed_constructor_leaves_nothing_for_del_to_trip_on(server: dgenv.LocalServer) -> None:
    from dgenv.gymnasium import Env, VectorEnv
    from dgenv.pettingzoo import AECEnv, ParallelEnv
    from dgenv.sb3 import VecEnv

    seen: list[Any] = []
    old = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        for make in (
            lambda: VectorEnv(2, server, players=3, learner_seat=5),
            lambda: Env(server, players=3, learner_seat=5),
            lambda: VecEnv(2, server, players=3, learner_seat=5),
            lambda: AECEnv(server, options=EnvOptions(opponent="random")),
            lambda: ParallelEnv(server, options=EnvOptions(opponent="random")),
        ):
            with pytest.raises(ValueError):
                make()
            gc.collect()
    finally:
        sys.unraisablehook = old
    assert not seen, [f"{u.exc_type.__name__}: {u.exc_value} in {u.object!r}" for u in seen]
