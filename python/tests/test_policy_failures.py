"""A served policy is pinned by its file's SHA-256, and one whose network gives
non-finite logits fails the request instead of playing the first legal action
(both transports)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

import dgenv

OVERFLOW = Path(__file__).resolve().parents[2] / "env" / "policy" / "testdata" / "overflow.onnx"


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("policies")
    shutil.copy(OVERFLOW, d / "overflow.onnx")
    return d


@pytest.fixture(scope="module", params=["inproc", "http"])
def client(request, policy_dir):
    if request.param == "inproc":
        yield dgenv.local(policies=policy_dir)
        return
    srv = dgenv.serve(args=["--policies", str(policy_dir)])
    yield srv
    srv.close()


def test_policies_give_each_files_sha256(client, policy_dir) -> None:
    # (In process the engine is one per Python process: other tests' policies may be loaded too.)
    (p,) = [p for p in client.policies() if p["name"] == "overflow"]
    assert p["sha256"] == hashlib.sha256((policy_dir / "overflow.onnx").read_bytes()).hexdigest()


def test_non_finite_logits_fail_the_act_request(client) -> None:
    obs = np.zeros((3, 874), np.uint8)
    obs[:, :2] = 1  # two nonzero values: Inf - Inf in the network
    mask = np.zeros((3, 90), np.uint8)
    mask[:, 5] = 1
    with pytest.raises(dgenv.InternalError, match="non-finite logits"):
        client.act("overflow", obs, mask)


def test_a_session_against_it_fails(client) -> None:
    # (In process the panic is internal, as the HTTP server's 500, and its
    # message carries the panic: libdgenv has no log.)
    with pytest.raises(dgenv.ServerError, match="non-finite logits"):
        with client.make(num_envs=2, seed=1, learner_seats=[0], opponent="policy:overflow") as env:
            env.reset()
            for _ in range(4):
                env.step(env.random_actions())
