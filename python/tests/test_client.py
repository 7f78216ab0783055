"""The batch client against the real server: shapes, dtypes, sections, determinism, errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import dgenv
from dgenv.client import HttpBatchEnv as BatchEnv

from conftest import random_legal


@pytest.mark.parametrize("players", [3, 4, 5, 6])
def test_reset_answers_every_field_with_its_shape_and_dtype(make, players: int) -> None:
    n = 5
    env = make(players=players, num_envs=n, seed=1)
    b = env.reset()
    d = env.obs_size
    assert env.spec.players == players and env.spec.num_envs == n and env.spec.num_actions == 90
    assert env.spec.obs.dtype == np.dtype("<u1")
    want = {
        "obs": ((n, d), np.float32),
        "mask": ((n, 90), np.bool_),
        "player": ((n,), np.int8),
        "rewards": ((n, players), np.float32),
        "done": ((n,), np.bool_),
        "scores": ((n, players), np.int32),
        "episode": ((n,), np.int64),
    }
    for name, (shape, dtype) in want.items():
        a = getattr(b, name)
        assert a.shape == shape, f"{name}.shape = {a.shape}, want {shape}"
        assert a.dtype == dtype, f"{name}.dtype = {a.dtype}, want {dtype}"
    assert not b.done.any() and not b.rewards.any() and not b.scores.any() and not b.episode.any()


@pytest.mark.parametrize("players", [3, 4, 6])
def test_required_sections_have_their_documented_shapes(make, players: int) -> None:
    env = make(players=players, num_envs=3, seed=2)
    b = env.reset()
    assert env.section(b.obs, "hand").shape == (3, 90)
    assert env.section(b.obs, "current_trick").shape == (3, players, 90)
    assert env.section(b.obs, "prize_counts").shape == (3, players, 5)
    # Every seat holds 15 cards at the start and may lead any of them.
    hand = env.section(b.obs, "hand")
    assert (hand.sum(axis=1) == 15).all()
    np.testing.assert_array_equal(b.mask, hand == 1)
    # Sections tile the observation and stay within their stated ranges.
    secs = sorted(env.spec.obs.sections, key=lambda s: s.offset)
    assert secs[0].offset == 0 and secs[-1].offset + secs[-1].size == env.obs_size
    for a, c in zip(secs, secs[1:]):
        assert a.offset + a.size == c.offset, f"{a.name} ends at {a.offset + a.size}, {c.name} starts at {c.offset}"
    lo, hi = env.spec.obs.low_high()
    assert ((b.obs >= lo) & (b.obs <= hi)).all()


def test_section_of_one_observation_is_a_view(make) -> None:
    env = make(num_envs=2, seed=3)
    b = env.reset()
    one = env.section(b.obs[1], "current_trick")
    assert one.shape == (4, 90)
    assert np.shares_memory(one, b.obs)
    with pytest.raises(KeyError):
        env.section(b.obs, "no_such_section")


def test_raw_wire_observations_equal_the_float_ones(make) -> None:
    f = make(num_envs=4, seed=9)
    r = make(num_envs=4, seed=9, obs_dtype=None)
    bf, br = f.reset(), r.reset()
    assert br.obs.dtype == np.uint8
    np.testing.assert_array_equal(bf.obs, br.obs.astype(np.float32))


def test_same_seed_and_actions_give_identical_batches(make) -> None:
    a = make(num_envs=16, seed=77, learner_seats=[1], opponent="heuristic")
    b = make(num_envs=16, seed=77, learner_seats=[1], opponent="heuristic")
    rng = np.random.default_rng(5)
    ba, bb = a.reset(), b.reset()
    for _ in range(80):
        for x, y in zip(ba, bb):
            np.testing.assert_array_equal(x, y)
        act = random_legal(ba.mask, rng)
        ba, bb = a.step(act), b.step(act)


@pytest.mark.parametrize("players", [3, 6])
@pytest.mark.parametrize("obs_dtype", [None, np.float32])
def test_bit_packed_sessions_give_the_same_batches(make, players: int, obs_dtype) -> None:
    plain = make(players=players, num_envs=9, seed=21, deals=1, obs_dtype=obs_dtype)
    packed = make(players=players, num_envs=9, seed=21, deals=1, obs_dtype=obs_dtype, packing="bits")
    assert plain.spec.obs.packed is None
    pk = packed.spec.obs.packed
    assert pk is not None and pk.mask_bytes == 12 and pk.obs_bytes == (packed.obs_size + 7) // 8
    assert packed.spec.raw["packing"] == "bits"
    rng = np.random.default_rng(8)
    ba, bb = plain.reset(), packed.reset()
    for _ in range(16 * players):  # past the end of a one-deal game and its auto-reset
        for name, x, y in zip(ba._fields, ba, bb):
            assert x.dtype == y.dtype and x.shape == y.shape, name
            np.testing.assert_array_equal(x, y, err_msg=name)
        act = random_legal(ba.mask, rng)
        ba, bb = plain.step(act), packed.step(act)
    assert bb.done.any() or ba.episode.sum() > 0


def test_unknown_packing_is_a_bad_request(client: dgenv.Client) -> None:
    with pytest.raises(dgenv.BadRequest) as ei:
        client.make(packing="zip")
    assert "packing" in ei.value.message


def test_reset_with_seed_replays_and_zeroes_episodes(make) -> None:
    env = make(num_envs=4, seed=11)
    first = env.reset(seed=123)
    rng = np.random.default_rng(0)
    b = first
    for _ in range(10):
        b = env.step(random_legal(b.mask, rng))
    again = env.reset(seed=123)
    np.testing.assert_array_equal(first.obs, again.obs)
    np.testing.assert_array_equal(first.mask, again.mask)
    other = env.reset()  # continues the streams: a different deal
    assert not np.array_equal(other.obs, again.obs)


def test_learner_seats_always_act_and_opponents_move_inside_the_step(make) -> None:
    env = make(players=4, num_envs=32, seed=4, learner_seats=[2], opponent="random")
    rng = np.random.default_rng(1)
    b = env.reset()
    for _ in range(70):  # past the end of the first deal
        assert (b.player == 2).all()
        b = env.step(random_legal(b.mask, rng))
    assert env.spec.learner_seats == (2,) and env.spec.opponent == "random"


def test_illegal_action_raises_with_env_action_legal_and_changes_nothing(make) -> None:
    env = make(num_envs=8, seed=21)
    twin = make(num_envs=8, seed=21)
    b, tb = env.reset(), twin.reset()
    np.testing.assert_array_equal(b.obs, tb.obs)
    actions = np.argmax(b.mask, axis=1)
    bad = actions.copy()
    illegal = np.flatnonzero(~b.mask[5])[0]
    bad[5] = illegal
    with pytest.raises(dgenv.IllegalActionError) as ei:
        env.step(bad)
    e = ei.value
    assert (e.status, e.code) == (422, "illegal_action")
    assert (e.env, e.action) == (5, illegal)
    assert e.legal == np.flatnonzero(b.mask[5]).tolist()
    # The refused step left every env as it was: it now steps like its twin.
    after, tafter = env.step(actions), twin.step(actions)
    for x, y in zip(after, tafter):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("action", [90, -2, 1000, 40000])  # -1 is "skip this env" (docs/api.md)
def test_out_of_range_action_is_a_bad_request(make, action: int) -> None:
    env = make(num_envs=2, seed=1)
    env.reset()
    with pytest.raises((dgenv.BadRequest, dgenv.IllegalActionError)) as ei:
        env.step(np.array([action, action]))
    assert ei.value.status in (400, 422)


def test_wrong_number_of_actions(make) -> None:
    env = make(num_envs=3, seed=1)
    env.reset()
    with pytest.raises(ValueError):
        env.step([0, 1])
    # The server refuses it too (sent raw, past the client's check).
    with pytest.raises(dgenv.BadRequest):
        env._call("POST", "/step", {"actions": [0, 1]})


def test_plain_list_of_actions_is_accepted(make) -> None:
    env = make(num_envs=3, seed=1)
    b = env.reset()
    acts = [int(x) for x in np.argmax(b.mask, axis=1)]
    env.step(acts)


def test_bad_session_parameters_are_bad_requests(client: dgenv.Client) -> None:
    with pytest.raises(dgenv.BadRequest) as ei:
        client.make(players=9)
    assert "players" in ei.value.message
    with pytest.raises(dgenv.BadRequest):
        client.make(num_envs=0)
    with pytest.raises(dgenv.BadRequest):
        client.make(reward="nope")
    with pytest.raises(dgenv.BadRequest):
        client.make(learner_seats=[0], opponent="no-such-bot")


def test_deleted_session_is_not_found(client: dgenv.Client) -> None:
    env = client.make(num_envs=2, seed=1, recover=False)  # recover: see test_resilience.py
    env.reset()
    client._request("DELETE", f"/v1/sessions/{env.session}", session_route=True)
    with pytest.raises(dgenv.SessionNotFound) as ei:
        env.reset()
    assert ei.value.status == 404 and ei.value.code == "not_found"
    env.close()  # idempotent, and quiet about the session being gone
    with pytest.raises(dgenv.DgenvError):
        env.reset()


def test_unknown_session_is_not_found(client: dgenv.Client) -> None:
    ghost = BatchEnv(client, "does-not-exist", client.make(num_envs=1).spec)
    with pytest.raises(dgenv.SessionNotFound):
        ghost.step([0])


def test_concurrent_requests_on_one_session_are_busy() -> None:
    # busy_wait 0: a request that finds its session in use answers 409 at
    # once (by default it first waits up to 2 s for it).
    with dgenv.serve(env={"DGSERVER_LIMITS_BUSY_WAIT": "0s"}, timeout=120) as client:
        _concurrent_requests_are_busy(client)


def _concurrent_requests_are_busy(client: dgenv.Client) -> None:
    made = client.make(num_envs=65536, seed=1, obs_dtype=None)
    # Two connections on the same session, neither sending seq (two clients
    # of one session do not share its history): one of two overlapping
    # requests is refused.
    env = BatchEnv(client, made.session, made.spec, obs_dtype=None)
    b = env.reset(seed=1)
    acts = np.argmax(b.mask, axis=1)
    other = BatchEnv(client, env.session, env.spec, obs_dtype=None)
    errors: list[BaseException] = []

    def hammer() -> None:
        for _ in range(20):
            other.seq = None  # seq-less: each client's answers move the session's seq past the other's
            try:
                other.reset(seed=1)
            except dgenv.BusyError as e:
                errors.append(e)
                return

    busy = 0
    t = threading.Thread(target=hammer)
    t.start()
    for _ in range(20):
        env.seq = None
        try:
            env.reset(seed=1)
        except dgenv.BusyError:
            busy += 1
        if errors:
            break
    t.join()
    other._http.close()
    assert busy or errors, "two overlapping requests on one session never answered 409 busy"
    e = (errors or [None])[0]
    if e is not None:
        assert (e.status, e.code) == (409, "busy")
    env.seq = None
    env.step(acts)  # the session is still usable
    made.close()


def test_record_of_a_fresh_env_has_no_finished_game(make) -> None:
    env = make(num_envs=2, seed=5)
    env.reset()
    rec = env.record(1)
    assert rec["finished"] is None
    cur = rec["current"]
    assert len(cur["deals"][0]["hands"]) == 4
    assert all(len(h) == 15 for h in cur["deals"][0]["hands"])
    with pytest.raises(dgenv.BadRequest):
        env.record(2)


def test_connect_checks_the_server(server: dgenv.LocalServer) -> None:
    c = dgenv.connect(server.url)
    assert c.healthy() and c.ready()
    c.close()
    with pytest.raises(dgenv.ServerUnavailable):
        dgenv.connect("http://127.0.0.1:9", timeout=2)


def test_too_large_body(client: dgenv.Client) -> None:
    with pytest.raises(dgenv.TooLarge) as ei:
        client._request("POST", "/v1/sessions", {"game": {"players": 4}, "opponent": "x" * 200_000})
    assert ei.value.status == 413


def test_step_async_and_wait_equal_step(make) -> None:
    n = 2048  # big enough for the zero-copy path
    a = make(num_envs=n, seed=31, obs_dtype=None)
    b = make(num_envs=n, seed=31, obs_dtype=None)
    ba, bb = a.reset(), b.reset()
    for _ in range(5):
        act = np.argmax(ba.mask, axis=1)
        a.step_async(act)
        with pytest.raises(dgenv.DgenvError):
            a.step_async(act)  # one request in flight per env
        bb = b.step(act)
        ba = a.step_wait()
        for x, y in zip(ba, bb):
            np.testing.assert_array_equal(x, y)
    # Arrays from earlier answers stay valid (each answer owns its buffer).
    keep = ba.obs.copy()
    a.step(np.argmax(ba.mask, axis=1))
    np.testing.assert_array_equal(ba.obs, keep)


def test_illegal_step_async_raises_at_wait(make) -> None:
    env = make(num_envs=4, seed=2)
    b = env.reset()
    bad = np.array([np.flatnonzero(~m)[0] for m in b.mask])
    env.step_async(bad)
    with pytest.raises(dgenv.IllegalActionError):
        env.step_wait()
    env.step(np.argmax(b.mask, axis=1))
