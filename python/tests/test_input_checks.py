"""Record indices and action arrays are checked alike in both transports:
nothing is wrapped, rounded or reshaped into something else."""

from __future__ import annotations

import numpy as np
import pytest

import dgenv
from dgenv import inproc

N = 4


@pytest.fixture(params=["inproc", "http"])
def env(request, make):
    if request.param == "inproc":
        e = inproc.make(num_envs=N, seed=3)
        yield e
        e.close()
    else:
        yield make(num_envs=N, seed=3)


def first_legal(b: dgenv.Batch) -> np.ndarray:
    return np.argmax(b.mask, axis=1).astype(np.int64)


@pytest.mark.parametrize("k", [2**70, 2**64, 2**63, -1, N, 1.5, 1.0, True, False, "1", None, np.float64(1.0)])
def test_record_refuses_what_is_not_an_env_index(env, k) -> None:
    env.reset(seed=1)
    want = env.record(1)
    with pytest.raises(dgenv.BadRequest) as e:
        env.record(k)
    assert e.value.details.get("field") == "k"
    assert env.record(1) == want


def test_record_takes_python_and_numpy_integers(env) -> None:
    env.reset(seed=1)
    assert env.record(np.int64(3)) == env.record(3)
    assert env.record(np.uint8(0)) == env.record(0)


@pytest.mark.parametrize("shape", [(2, 2), (N, 1), (1, N), ()])
def test_step_refuses_actions_of_another_shape(env, shape) -> None:
    b = env.reset(seed=1)
    a = first_legal(b)
    bad = a[0] if shape == () else a.reshape(shape)
    before = [env.record(k)["current"] for k in range(N)]
    with pytest.raises(ValueError, match="shape"):
        env.step(bad)
    assert [env.record(k)["current"] for k in range(N)] == before, "a refused step changed a game"
    env.step(a)  # the same actions as [N] are fine


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_step_refuses_float_actions_skip_included(env, dtype) -> None:
    b = env.reset(seed=1)
    a = first_legal(b)
    for bad in (a.astype(dtype), np.concatenate([[-1.0], a[1:]]).astype(dtype)):
        with pytest.raises(ValueError, match="dtype"):
            env.step(bad)
    with pytest.raises(ValueError, match="dtype"):
        env.step([-1.0] + a[1:].tolist())
    with pytest.raises(ValueError, match="dtype"):
        env.step(a.astype(bool))


@pytest.mark.parametrize("form", ["list", "int64", "int32", "int16"])
def test_an_integer_minus_one_skips_its_env_in_any_integer_form(env, form) -> None:
    b = env.reset(seed=1)
    a = first_legal(b)
    a[0] = -1
    acts = a.tolist() if form == "list" else a.astype(form)
    before = [env.record(k)["current"] for k in range(N)]
    env.step(acts)
    after = [env.record(k)["current"] for k in range(N)]
    assert after[0] == before[0], "env 0 was stepped"
    assert all(after[k] != before[k] for k in range(1, N)), "the other envs were not stepped"
