"""Nothing a careless caller does in process kills Python: stale policy widths,
threads sharing an env, a free racing a reset, an env too large for memory.

Each crash scenario runs in a child process, so a regression shows as the
child's signal or abort (its return code and stderr), not as a dead test run;
the child reports the Python exception it got instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dgenv

REPO = Path(__file__).resolve().parents[2]


def run_child(code: str, timeout: float = 300) -> str:
    """Run ``code`` in a fresh Python with this checkout's dgenv; assert it exited
    normally (return code 0: no signal, no abort) and return its stdout."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python" / "src"))
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=env, timeout=timeout)
    assert p.returncode == 0, f"the child died with return code {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


@pytest.fixture
def same_name_policies(tmp_path: Path) -> tuple[Path, Path]:
    """Two directories each holding ``policy.onnx`` (the trainer's name for every
    output): a card-game policy (90 actions) and a duel policy (117)."""
    card, duel = tmp_path / "card", tmp_path / "duel"
    card.mkdir()
    duel.mkdir()
    shutil.copy(REPO / "policies" / "beat-heuristic.onnx", card / "policy.onnx")
    shutil.copy(REPO / "policies" / "duel.onnx", duel / "policy.onnx")
    return card, duel


def test_a_policy_reloaded_for_another_game_is_refused_not_written_past(same_name_policies) -> None:
    card, duel = same_name_policies
    out = run_child(f"""
        import ctypes
        import numpy as np
        import dgenv
        from dgenv import _capi

        n = 4096
        c = dgenv.local(policies={str(card)!r})
        (info,) = c.policies()
        obs = np.zeros((n, info["obs_size"]), np.uint8)
        # The masks are a view of a larger buffer of ones (rows of a bigger
        # batch, say): reading past their end finds legal-looking bytes.
        mask = np.ones(n * 117, np.uint8)[: n * 90].reshape(n, 90)
        c.act("policy", obs, mask, logits=True)  # the card-game width, seen once
        c.load_policies({str(duel)!r})  # the same name, another game's file
        (info,) = c.policies()
        print("duel actions", info["num_actions"])
        duel_obs = np.zeros((n, info["obs_size"]), np.uint8)
        try:
            c.act("policy", duel_obs, mask, logits=True)  # buffers 90 wide
            print("acted")
        except ValueError as e:
            print("ValueError:", e)
        # The engine checks the lengths itself, whatever Python worked out:
        # the card game's mask and logits buffers for the duel policy.
        lib, err = _capi.lib(), _capi.errbuf()
        acts, logits = np.empty(n, np.int32), np.empty((n, 90), np.float32)
        r = lib.dg_policy_act(b"policy", 6, duel_obs.ctypes.data, duel_obs.nbytes, mask.ctypes.data, mask.nbytes,
                              n, 1, 1.0, 0, acts.ctypes.data, acts.nbytes, logits.ctypes.data, logits.nbytes,
                              err, _capi.ERRCAP)
        try:
            _capi.check(r, err)
            print("acted")
        except dgenv.BadRequest as e:
            print("BadRequest:", e.details.get("field"), e)
    """)
    assert "duel actions 117" in out
    assert "ValueError: mask shape (4096, 90): want (4096, 117)" in out, out
    assert "BadRequest: mask" in out and "117" in out, out
    assert "acted" not in out


def test_every_buffer_length_is_checked_by_the_engine() -> None:
    """Raw calls with lengths that do not fit: an error each, nothing written."""
    out = run_child("""
        import ctypes
        import numpy as np
        import dgenv
        from dgenv import _capi

        env = dgenv.local().make(players=4, num_envs=8, seed=1)
        env.reset()
        lib, err, h = _capi.lib(), _capi.errbuf(), env._h
        acts = np.zeros(16, np.int32)
        arena = np.zeros(env._abytes + 64, np.uint8)
        calls = {
            "step with 4 actions": lambda: lib.dg_vec_step(h, acts.ctypes.data, 16, arena.ctypes.data, env._abytes, err, _capi.ERRCAP),
            "step into a short arena": lambda: lib.dg_vec_step(h, acts.ctypes.data, 32, arena.ctypes.data, env._abytes - 8, err, _capi.ERRCAP),
            "reset into a long arena": lambda: lib.dg_vec_reset(h, 1, 1, arena.ctypes.data, env._abytes + 64, err, _capi.ERRCAP),
            "random_actions into 16": lambda: lib.dg_vec_random_actions(h, acts.ctypes.data, 64, err, _capi.ERRCAP),
            "a null arena with a length": lambda: lib.dg_vec_reset(h, 1, 1, None, env._abytes, err, _capi.ERRCAP),
            "a negative length": lambda: lib.dg_vec_step(h, acts.ctypes.data, -32, arena.ctypes.data, env._abytes, err, _capi.ERRCAP),
        }
        for name, call in calls.items():
            try:
                _capi.check(call(), err)
                print(name, "-> accepted")
            except dgenv.BadRequest as e:
                print(name, "->", e.details.get("field"))
        status = (ctypes.c_int32 * 10)()
        spec = b'{"name": "david_goliath", "players": 4, "deals": 1}'
        st = lib.dg_state_new(spec, len(spec), err, _capi.ERRCAP)
        print("status into 10 ->", lib.dg_state_status(st, status, ctypes.sizeof(status)))
        print("untouched", list(status) == [0] * 10)
        print("step still works", env.step(env.random_actions()).mask.any(axis=1).all())
    """)
    for line in ("step with 4 actions -> actions", "step into a short arena -> arena", "reset into a long arena -> arena",
                 "random_actions into 16 -> actions", "a null arena with a length -> arena",
                 "a negative length -> actions", "status into 10 -> -1", "untouched True", "step still works True"):
        assert line in out, out


def test_eight_threads_stepping_one_env_never_crash_nor_mix_answers() -> None:
    """Eight threads call ``step(random_actions())`` on one env: each call runs
    whole (a sequence of two calls may interleave with another thread's, so an
    action drawn before another thread's step can be illegal: a clean
    IllegalActionError), and every Batch a thread keeps stays what it was."""
    out = run_child("""
        import threading
        import numpy as np
        import dgenv

        env = dgenv.local().make(players=4, num_envs=256, seed=1)
        env.reset()
        steps, illegal, bad = [0] * 8, [0] * 8, []

        def run(k):
            kept = []
            for t in range(150):
                try:
                    b = env.step(env.random_actions())
                except dgenv.IllegalActionError:
                    illegal[k] += 1
                    continue
                steps[k] += 1
                if not b.mask.any(axis=1).all():
                    bad.append(f"thread {k} step {t}: an env without a legal action")
                if t % 10 == 0:
                    kept.append((b, b.obs.copy(), b.mask.copy(), b.episode.copy()))
            for b, obs, mask, episode in kept:
                if not (np.array_equal(b.obs, obs) and np.array_equal(b.mask, mask) and np.array_equal(b.episode, episode)):
                    bad.append(f"thread {k}: a kept Batch changed under it")

        threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("steps", sum(steps), "illegal", sum(illegal))
        print("bad", bad[:3])
        env.step(env.random_actions())
        env.close()
        print("done")
    """)
    assert "bad []" in out and "done" in out, out
    steps = int(out.split("steps ")[1].split()[0])
    assert steps > 0, out


def test_closing_an_env_while_threads_reset_and_step_it_is_an_error_not_a_crash() -> None:
    """A free racing resets and steps, 100 times over: every thread ends on
    DgenvError("env is closed"), never a crash (Go's ``send on closed channel``)."""
    out = run_child("""
        import threading
        import dgenv

        client = dgenv.local()
        ends = {}
        for rnd in range(100):
            env = client.make(players=4, num_envs=128, seed=rnd, workers=2)
            env.reset()
            started = threading.Barrier(3)

            def run(k):
                first = True
                try:
                    while True:
                        if k == 0:
                            env.reset(seed=rnd)
                        else:
                            try:
                                env.step(env.random_actions())
                            except dgenv.IllegalActionError:
                                pass
                        if first:
                            started.wait()
                            first = False
                except dgenv.errors.DgenvError as e:
                    ends[type(e).__name__ + ": " + str(e)] = ends.get(type(e).__name__ + ": " + str(e), 0) + 1
                    if first:
                        started.abort()

            threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
            for t in threads:
                t.start()
            started.wait()  # both threads are calling
            env.close()
            for t in threads:
                t.join()
        print(ends)
    """)
    assert "{'DgenvError: env is closed': 200}" in out, out


def test_an_env_past_the_default_memory_budget_is_refused_at_creation() -> None:
    """2^20 float32 envs would need about 11 GiB: refused before anything is
    allocated (the child's address space is capped at 4 GiB, so an attempt
    to build it dies instead of passing)."""
    out = run_child("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import dgenv
        try:
            dgenv.local().make(players=4, num_envs=2**20)
            print("made")
        except dgenv.errors.TooLarge as e:
            print("TooLarge:", e.details["field"], e.details["limit"], e)
    """)
    assert f"TooLarge: memory_budget {2 << 30}" in out and "more than the whole memory_budget (2048 MiB)" in out, out


def test_memory_budget_counts_every_live_env_and_frees_with_close() -> None:
    out = run_child("""
        import dgenv
        try:
            dgenv.local(memory_budget=1).make(num_envs=1000)
        except dgenv.errors.TooLarge as e:
            cost = e.details["bytes_needed"]
        c = dgenv.local(memory_budget=cost + cost // 2)  # one env of 1000 fits, two do not
        a = c.make(num_envs=1000)
        try:
            c.make(num_envs=1000)
            print("second made")
        except dgenv.errors.LimitError as e:
            print("LimitError:", e.details["field"], e.details["bytes_in_use"] == cost, e)
        try:
            dgenv.local(memory_budget=cost + cost // 2).make(num_envs=1000)  # the budget is the process's
            print("other client's made")
        except dgenv.errors.LimitError as e:
            print("other client refused")
        a.close()
        c.make(num_envs=1000).close()
        print("after close: made")
    """)
    assert "LimitError: memory_budget True" in out and "memory_budget reached" in out, out
    assert "other client refused" in out and "after close: made" in out, out


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2GiB", True])
def test_memory_budget_must_be_a_positive_number_of_bytes(bad) -> None:
    with pytest.raises(ValueError, match="memory_budget"):
        dgenv.local(memory_budget=bad)
