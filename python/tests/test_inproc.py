"""The engine in this process (dgenv.local()): the same batches as the server, errors, threads, fork."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import dgenv
from dgenv import inproc
from dgenv.errors import BadRequest, IllegalActionError

from conftest import random_legal

REPO = Path(__file__).resolve().parents[2]
FIELDS = ("obs", "mask", "player", "rewards", "done", "scores", "episode")


@pytest.fixture(scope="module")
def local() -> inproc.LocalClient:
    return dgenv.local()


def play_both(a: dgenv.BatchEnv, b: dgenv.BatchEnv, steps: int, seed: int) -> int:
    """Step two envs with the same random legal actions; assert every batch is identical. Returns games ended."""
    rng = np.random.default_rng(seed)
    ba, bb = a.reset(seed=seed), b.reset(seed=seed)
    ended = 0
    for t in range(steps + 1):
        for f in FIELDS:
            x, y = getattr(ba, f), getattr(bb, f)
            assert x.dtype == y.dtype and x.shape == y.shape, f"step {t}: {f} {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
            assert np.array_equal(x, y), f"step {t}: {f} differs in-process and over HTTP"
        ended += int(ba.done.sum())
        if t < steps:
            act = random_legal(ba.mask, rng)
            ba, bb = a.step(act), b.step(act)
    return ended


@pytest.mark.parametrize("players", [3, 4, 5, 6])
def test_same_seeds_and_actions_give_identical_batches_in_process_and_over_http(make, local, players: int) -> None:
    n = 16
    steps = 15 * players * 2 + 7  # past the end of the first game's second deal...
    kw = dict(players=players, num_envs=n, seed=players, deals=2)
    http_env, local_env = make(**kw), local.make(**kw)
    try:
        assert local_env.spec.obs == http_env.spec.obs
        assert (local_env.spec.players, local_env.spec.num_envs, local_env.spec.learner_seats) == (
            http_env.spec.players, http_env.spec.num_envs, http_env.spec.learner_seats)
        ended = play_both(local_env, http_env, steps, seed=players)
        assert ended == n  # ...so every env finished a game and auto-reset on the way
    finally:
        local_env.close()


@pytest.mark.parametrize("kw", [
    dict(players=4, learner_seats=[0], opponent="heuristic", reward="zero_sum"),
    dict(players=5, learner_seats=[1, 3], opponent="random", packing="bits"),
    dict(players=3, packing="bits", obs_dtype=None),
])
def test_opponents_rewards_and_packing_give_identical_batches(make, local, kw) -> None:
    http_env, local_env = make(num_envs=8, seed=3, **kw), local.make(num_envs=8, seed=3, **kw)
    try:
        assert local_env.spec.obs == http_env.spec.obs
        play_both(local_env, http_env, 70, seed=5)
        assert local_env.record(2) == http_env.record(2)
    finally:
        local_env.close()


def test_served_policy_plays_the_same_in_process_and_over_http(local) -> None:
    policies = REPO / "policies"
    local.load_policies(policies)
    names = [p["name"] for p in local.policies()]
    assert "beat-heuristic" in names and "policy:beat-heuristic" in local.bots()
    kw = dict(players=4, num_envs=4, seed=9, learner_seats=[0], opponent="policy:beat-heuristic")
    with dgenv.serve(args=["--policies", str(policies)]) as srv:
        http_env, local_env = srv.make(**kw), local.make(**kw)
        try:
            play_both(local_env, http_env, 40, seed=2)
            b = local_env.last
            obs = b.obs.astype(np.uint8)
            act = local.act("beat-heuristic", obs, b.mask)
            assert act.shape == (4,) and b.mask[np.arange(4), act].all()
        finally:
            local_env.close()
            http_env.close()


def test_batches_stay_valid_after_later_steps(local) -> None:
    env = local.make(players=4, num_envs=3, seed=1)
    rng = np.random.default_rng(0)
    first = env.reset()
    kept = first.obs.copy(), first.mask.copy()
    b = first
    for _ in range(300):  # several blocks of answers
        b = env.step(random_legal(b.mask, rng))
    assert np.array_equal(first.obs, kept[0]) and np.array_equal(first.mask, kept[1])
    env.close()


def test_illegal_action_and_bad_parameters_raise_the_servers_errors(local) -> None:
    env = local.make(players=4, num_envs=2, seed=1)
    b = env.reset()
    bad = np.flatnonzero(~b.mask[1])[0]
    good = np.flatnonzero(b.mask[0])[0]
    with pytest.raises(IllegalActionError) as ei:
        env.step(np.array([good, bad]))
    assert ei.value.env == 1 and ei.value.action == bad and ei.value.legal == np.flatnonzero(b.mask[1]).tolist()
    # (-1 in any integer dtype is the skip, as over HTTP: tests/test_input_checks.py)
    for big in (np.array([good, 2**40]), np.array([good, -2], dtype=np.int64), np.array([good, 2**32 - 1], np.uint32)):
        with pytest.raises(IllegalActionError):
            env.step(big)
    with pytest.raises(ValueError):
        env.step(np.array([1, 2, 3]))
    again = env.step(np.array([good, np.flatnonzero(b.mask[1])[0]]))  # nothing changed: still usable
    assert again.obs.shape == b.obs.shape
    env.close()
    with pytest.raises(dgenv.DgenvError):
        env.step(np.array([0, 0]))
    with pytest.raises(BadRequest) as ei:
        local.make(players=7)
    assert ei.value.details.get("field") == "game.players"
    with pytest.raises(BadRequest):
        local.make(players=4, learner_seats=[0])  # opponent required
    with pytest.raises(BadRequest):
        local.make(players=4, learner_seats=[0], opponent="nobody")
    with pytest.raises(BadRequest):
        local.make(packing="zip")
    with pytest.raises(BadRequest):
        local.make(seed=-1)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_minus_one_skips_an_env_in_any_integer_dtype(local, dtype) -> None:
    # -1 is "skip" (docs/api.md) over HTTP and in int32; int64 actions (numpy's
    # default, and the Gymnasium VectorEnv's, whose next_step auto-reset skips
    # the env that ended) must skip too, not raise.
    env = local.make(players=4, num_envs=2, seed=1)
    b = env.reset()
    good = int(np.flatnonzero(b.mask[0])[0])
    b2 = env.step(np.array([good, -1], dtype=dtype))
    assert (b2.obs[1] == b.obs[1]).all() and (b2.mask[1] == b.mask[1]).all() and b2.player[1] == b.player[1]
    assert not (b2.obs[0] == b.obs[0]).all()
    env.close()


def test_vector_env_in_process_plays_past_the_end_of_games(local) -> None:
    from dgenv.gymnasium import VectorEnv

    v = VectorEnv(4, local, players=3, deals=1, seed=1)  # next_step: the env that ended is skipped a step
    _, info = v.reset()
    for _ in range(60):
        _, _, _, _, info = v.step(v.action_space.sample(mask=info["action_mask"]))
    assert info["games"].min() >= 1
    v.close()


def test_step_async_overlaps_and_returns_the_same_batches(local) -> None:
    a, b = local.make(players=4, num_envs=64, seed=4), local.make(players=4, num_envs=64, seed=4)
    rng = np.random.default_rng(1)
    ba, bb = a.reset(), b.reset()
    for _ in range(50):
        act = random_legal(ba.mask, rng)
        a.step_async(act)
        with pytest.raises(dgenv.DgenvError):
            a.step(act)  # one request in flight at a time, as over HTTP
        bb = b.step(act)
        ba = a.step_wait()
        assert np.array_equal(ba.obs, bb.obs) and np.array_equal(ba.rewards, bb.rewards)
    a.close(), b.close()


def test_threads_step_their_own_envs_in_parallel_and_match_a_serial_run(local) -> None:
    def run(seed: int, out: dict) -> None:
        env = local.make(players=4, num_envs=32, seed=seed, obs_dtype=None)
        rng = np.random.default_rng(seed)
        b = env.reset()
        total = np.zeros(4)
        for _ in range(200):
            b = env.step(random_legal(b.mask, rng))
            total += b.rewards.sum(axis=0)
        out[seed] = (total, b.obs.copy())
        env.close()

    par: dict = {}
    threads = [threading.Thread(target=run, args=(s, par)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ser: dict = {}
    for s in range(4):
        run(s, ser)
    for s in range(4):
        assert np.array_equal(par[s][0], ser[s][0]) and np.array_equal(par[s][1], ser[s][1])


@pytest.mark.parametrize("client", ["inproc", "local()"])
def test_every_single_game_adapter_runs_in_process_and_passes_its_librarys_checks(client) -> None:
    from gymnasium.utils.env_checker import check_env
    from pettingzoo.test import api_test, parallel_api_test

    import dgenv.gymnasium as dg_gym
    import dgenv.pettingzoo as dg_pz
    from dgenv.openspiel import Environment

    c = "inproc" if client == "inproc" else dgenv.local()
    genv = dg_gym.Env(c, players=4, opponent="random")
    assert isinstance(genv.env, inproc.LocalBatchEnv)
    check_env(genv, skip_render_check=True)
    venv = dg_gym.VectorEnv(4, c, players=3, seed=1)
    assert isinstance(venv.env, inproc.LocalBatchEnv)
    venv.reset(seed=1)
    venv.close()
    aec = dg_pz.env(c, players=4)
    assert isinstance(aec.unwrapped.env, inproc.LocalBatchEnv)
    api_test(aec, num_cycles=200)
    parallel_api_test(dg_pz.parallel_env(c, players=3), num_cycles=200)
    env = Environment(c, players=3, seed=1)
    assert isinstance(env.env, inproc.LocalBatchEnv)
    ts = env.reset()
    n = 0
    while not ts.last():
        p = ts.observations["current_player"]
        ts = env.step([ts.observations["legal_actions"][p][0]])
        n += 1
    assert n == 3 * 15 * 3
    env.close()


def _child_steps(q) -> None:  # pragma: no cover - runs in a forked child
    try:
        env = dgenv.local().make(players=4, num_envs=1, seed=1)
        env.reset()
        q.put("worked")
    except inproc._capi.ForkedError as e:
        q.put(f"ForkedError: {e}")
    except BaseException as e:  # anything else is a failure of the test
        q.put(f"{type(e).__name__}: {e}")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_fork_after_load_fails_clearly_and_spawn_works(local) -> None:
    local.make(num_envs=1).close()  # the library is loaded in this process
    for method, want in (("fork", "ForkedError: the Go engine"), ("spawn", "worked")):
        ctx = mp.get_context(method)
        q = ctx.Queue()
        p = ctx.Process(target=_child_steps, args=(q,))
        p.start()
        got = q.get(timeout=120)
        p.join(timeout=60)
        assert got.startswith(want), f"{method}: {got}"
        if method == "fork":
            assert "spawn" in got  # the message names the fix


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_interrupts_a_loop_of_go_calls() -> None:
    code = textwrap.dedent("""
        import sys, numpy as np, dgenv
        env = dgenv.local().make(players=4, num_envs=256, seed=1, obs_dtype=None)
        b = env.reset()
        try:
            print("ready", flush=True)
            while True:
                b = env.step(np.argmax(b.mask, axis=1))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    envv = dict(os.environ, PYTHONPATH=str(REPO / "python" / "src"))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=envv)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGINT)
        assert p.stdout.readline().strip() == "interrupted"
        assert p.wait(timeout=60) == 0
    finally:
        if p.poll() is None:
            p.kill()


def test_async_batch_env_runs_in_process_and_matches_plain_batches(local) -> None:
    pool = dgenv.AsyncBatchEnv(local, num_envs=8, batch_size=4, seed=1, players=4, obs_dtype=None)
    plain = [local.make(players=4, num_envs=4, seed=1 + k, obs_dtype=None) for k in range(2)]
    want = [e.reset() for e in plain]
    rng = np.random.default_rng(0)
    pool.async_reset()
    for _ in range(20):
        env_id, b = pool.recv()
        k = int(env_id[0]) // 4
        assert np.array_equal(b.obs, want[k].obs) and np.array_equal(b.mask, want[k].mask)
        act = random_legal(b.mask, rng)
        pool.send(act, env_id)
        want[k] = plain[k].step(act)
    pool.close()
    for e in plain:
        e.close()


def test_a_freed_or_made_up_handle_is_an_error_not_a_crash(local) -> None:
    import ctypes

    env = local.make(players=4, num_envs=2, seed=1)
    env.reset()
    h, lib = env._h, env._lib
    env.close()
    env.close()  # idempotent
    lib.dg_free(h)  # freeing twice does nothing
    err = ctypes.create_string_buffer(inproc._capi.ERRCAP)
    arena = np.empty(env._abytes, np.uint8)
    for handle in (h, 10**9, -5):
        assert lib.dg_vec_step(handle, env._act_ptr, env._act_bytes, arena.ctypes.data, arena.nbytes, err, len(err)) == -1
        with pytest.raises(dgenv.errors.NotFound):
            inproc._capi.raise_error(err)
    assert lib.dg_state_apply(h, 0, None, 0, err, len(err)) == -1
    assert lib.dg_state_clone(h) == -1


def test_games_are_the_servers_list(client, local) -> None:
    got = local.games()
    assert [g.name for g in got] == [g.name for g in client.games()]
    assert got == client.games()
    assert local.game().name == "david_goliath" and local.game("duel") == client.game("duel")
    with pytest.raises(KeyError, match="no game 'nope'"):
        local.game("nope")


def _rank_of_draws(mask: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each env's legal count and the drawn action's index among its legal actions."""
    counts = mask.sum(axis=1)
    ranks = np.array([int(np.flatnonzero(mask[i]).tolist().index(int(a[i]))) for i in range(len(a))])
    return counts, ranks


@pytest.mark.parametrize("transport", ["inproc", "http"])
def test_random_actions_are_legal_uniform_seeded_and_fill_out(make, local, transport: str) -> None:
    n = 2048
    mk = local.make if transport == "inproc" else make
    env = mk(players=4, num_envs=n, seed=11, deals=1)
    try:
        with pytest.raises(dgenv.DgenvError, match="reset") if transport == "http" else _no_error():
            env.random_actions()
        b = env.reset(seed=5)
        a = env.random_actions()
        assert a.dtype == np.int32 and a.shape == (n,)
        assert b.mask[np.arange(n), a].all()
        # Uniform over each env's legal actions: the first and the last legal
        # action each come up about sum(1/count) times (5 sigma; seeded, so not flaky).
        draws = [a] + [env.random_actions() for _ in range(3)]
        counts, _ = _rank_of_draws(b.mask, a)
        for pos in ("first", "last"):
            hits = 0
            for d in draws:
                _, r = _rank_of_draws(b.mask, d)
                hits += int(((r == 0) if pos == "first" else (r == counts - 1)).sum())
            p = 1.0 / counts
            mean, sd = len(draws) * p.sum(), np.sqrt(len(draws) * (p * (1 - p)).sum())
            assert abs(hits - mean) < 5 * sd, (pos, hits, mean, sd)
        # Reproducible: a seeded reset re-seeds the draws.
        env.reset(seed=5)
        assert np.array_equal(env.random_actions(), a)
        out = np.full(n, -1, dtype=np.int32)
        assert env.random_actions(out) is out and b.mask[np.arange(n), out].all()
        with pytest.raises(ValueError, match="int32"):
            env.random_actions(np.zeros(n, dtype=np.int64))
        with pytest.raises(ValueError, match="int32"):
            env.random_actions(np.zeros(n + 1, dtype=np.int32))
        # Random play through the draws: every env finishes games.
        for _ in range(200):
            b = env.step(env.random_actions(out))
        assert (b.episode >= 1).all()
    finally:
        if transport == "inproc":
            env.close()


def test_random_actions_draw_the_duels_actions_too(local) -> None:
    env = local.make(game="duel", num_envs=64, seed=2)
    try:
        b = env.reset()
        for _ in range(50):
            a = env.random_actions()
            assert b.mask[np.arange(64), a].all()
            b = env.step(a)
    finally:
        env.close()


class _no_error:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_bots_of_any_game_come_from_the_engines_registry(local) -> None:
    games = {g.name for g in local.games()}
    assert {"david_goliath", "duel"} <= games
    assert local.bots() == local.bots("david_goliath")  # the default game's
    assert "search" in local.bots() and "heuristic" in local.bots("duel")
    with pytest.raises(dgenv.BadRequest, match="unknown") as e:
        local.bots("no_such_game")
    assert e.value.details["field"] == "game" and "duel" in e.value.details["games"]
