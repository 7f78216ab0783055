"""The OpenAPI document against a live server, with schemathesis.

``st run`` reads ``GET /v1/openapi.json`` (the document the server embeds,
server/openapi.json), generates requests for every operation from it, valid
and invalid, in JSON and msgpack (schemathesis_hooks.py), follows its links
(create -> reset/step/record/delete) in a stateful phase, and checks every
answer: no 5xx, a documented status, content type and headers, a body that
matches its schema, invalid requests refused, 405 with Allow for undeclared
methods. Generation is deterministic (the same requests every run) and
bounded (``-n`` examples per operation: about 1,300 requests, ~10 s).

One check is off: positive_data_acceptance (every schema-valid request must
succeed). Some rules span fields and the server's configuration (a learner
seat must be below game.players, num_envs at most max_envs_per_session), which
a schema cannot say; such requests rightly answer 400.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import msgpack
import numpy as np
import pytest

import dgenv

pytest.importorskip("schemathesis")  # in the test extra: `make test` installs it
import jsonschema  # noqa: E402  (schemathesis's dependency)
import requests  # noqa: E402  (likewise)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
EXAMPLES_PER_OPERATION = 50


def test_every_answer_matches_the_openapi_document(tmp_path: Path) -> None:
    # Small caps: schemathesis creates sessions of every size the document allows.
    env = {
        "DGSERVER_LIMITS_MAX_ENVS_PER_SESSION": "16",
        "DGSERVER_LIMITS_MAX_SEARCH_ENVS": "1",
        "DGSERVER_LIMITS_MAX_SESSIONS": "32",
        "DGSERVER_ENGINE_WORKERS": "1",
    }
    with dgenv.serve(env=env, timeout=120) as srv:
        cmd = [
            sys.executable, "-m", "schemathesis.cli", "run", srv.url + "/v1/openapi.json",
            "--checks", "all",
            "--exclude-checks", "positive_data_acceptance",
            "--max-examples", str(EXAMPLES_PER_OPERATION),
            "--generation-deterministic",
            "--request-timeout", "30",
            "--no-color",
            "--report", "junit", "--report-dir", str(tmp_path),
        ]
        child_env = dict(os.environ)
        child_env["SCHEMATHESIS_HOOKS"] = "schemathesis_hooks"
        child_env["PYTHONPATH"] = os.pathsep.join([str(HERE), child_env.get("PYTHONPATH", "")])
        p = subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert srv.running, "the server died under schemathesis:\n" + "\n".join(srv.log)
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"schemathesis failed (exit {p.returncode}):\n{out[-20000:]}"
    m = re.search(r"Selected: (\d+)/(\d+)\s+Tested: (\d+)", out)
    assert m and m.group(1) == m.group(2) == m.group(3) and int(m.group(1)) >= 10, out[-5000:]
    assert " passed" in out and "generated" in out, out[-5000:]


# Random requests rarely make a valid session (some rules span fields), so
# the answers of live sessions are checked here too: every kind of session,
# both formats, each route's answer against its schema in the served document.


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[dgenv.LocalServer, dict]]:
    with dgenv.serve(args=["--policies", str(REPO / "policies")], timeout=120) as srv:
        doc = requests.get(srv.url + "/v1/openapi.json", timeout=30).json()
        yield srv, doc


def _as_json(v: Any) -> Any:
    """A msgpack answer as its JSON form: bin values as base64."""
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, dict):
        return {k: _as_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_as_json(x) for x in v]
    return v


class Api:
    """Requests in one format, each answer checked against the document."""

    def __init__(self, url: str, doc: dict, fmt: str) -> None:
        self.url, self.doc, self.fmt = url, doc, fmt
        self.ct = "application/json" if fmt == "json" else "application/msgpack"

    def __call__(self, method: str, path: str, body: Any = None, *, status: int = 200) -> Any:
        data = None
        if body is not None:
            data = json.dumps(body).encode() if self.fmt == "json" else msgpack.packb(body, use_bin_type=True)
        r = requests.request(method, self.url + path, data=data, headers={"Content-Type": self.ct, "Accept": self.ct}, timeout=60)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.content[:300]!r}"
        assert r.headers["Content-Type"] == self.ct
        ans = r.json() if self.fmt == "json" else _as_json(msgpack.unpackb(r.content, raw=False))
        op = self._operation(method, path)
        resp = op["responses"][str(status)]
        if "$ref" in resp:
            resp = self.doc["components"]["responses"][resp["$ref"].rsplit("/", 1)[1]]
        schema = dict(self.doc, **resp["content"][self.ct]["schema"])  # refs resolve against the document
        jsonschema.Draft202012Validator(schema).validate(ans)
        return ans

    def _operation(self, method: str, path: str) -> dict:
        for template, item in self.doc["paths"].items():
            if re.fullmatch(re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)), path.split("?", 1)[0]):
                return item[method.lower()]
        raise AssertionError(f"{method} {path} is not in the document")


def _tensor(t: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(t["data"]), t["dtype"]).reshape(t["shape"])


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@pytest.mark.parametrize(
    "settings",
    [
        {"game": {"players": 4, "deals": 1}, "num_envs": 3, "learner_seats": [0], "opponent": "heuristic"},
        {"game": {"players": 3, "deals": 2, "first_dealer": 2}, "num_envs": 2, "obs_dtype": "<f4", "reward": "zero_sum"},
        {"game": {"players": 6}, "num_envs": 2, "packing": "bits", "learner_seats": [1, 4], "opponent": "random"},
        {"game": {"players": 4}, "num_envs": 2, "learner_seats": [0], "opponent": "policy:beat-heuristic"},
    ],
    ids=["heuristic", "f4-zero-sum", "packed", "policy"],
)
def test_live_answers_match_their_schemas(served, fmt: str, settings: dict) -> None:
    srv, doc = served
    api = Api(srv.url, doc, fmt)
    for route in ("/v1/healthz", "/v1/readyz", "/v1/policies"):
        api("GET", route)
    s = api("POST", "/v1/sessions", dict(settings, seed=5, request_id=f"live-{fmt}"))
    sid = s["session"]
    assert api("POST", "/v1/sessions", dict(settings, seed=5, request_id=f"live-{fmt}"))["session"] == sid
    api("POST", "/v1/sessions", dict(settings, seed=6, request_id=f"live-{fmt}"), status=409)
    path = f"/v1/sessions/{sid}"
    b = api("POST", path + "/reset", {"seed": 1, "seq": 0})
    n = s["spec"]["num_envs"]
    for k in range(60):  # through the end of a game: done, scores and finished records
        mask = _tensor(b["mask"]) if "mask" in b else np.unpackbits(_tensor(b["mask_bits"]), axis=1, count=90, bitorder="little")
        actions = [int(np.flatnonzero(mask[i])[0]) for i in range(n)]
        if k == 3:
            illegal = [int(np.flatnonzero(mask[0] == 0)[0])] + actions[1:]
            api("POST", path + "/step", {"actions": illegal, "seq": b["seq"]}, status=422)
            api("POST", path + "/step", {"actions": actions, "seq": b["seq"] + 5}, status=409)
        b = api("POST", path + "/step", {"actions": actions, "seq": b["seq"]})
    assert api("GET", path)["seq"] == b["seq"] == 61
    rec = api("GET", path + "/envs/0/record")
    assert rec["finished"] is not None or rec["current"] is not None
    api("GET", path + f"/envs/{n}/record", status=400)
    if "obs" in b and s["spec"]["players"] == 4:
        obs = _tensor(b["obs"]).astype(np.float32)
        m = _tensor(b["mask"])
        body = {"obs": {"dtype": "<f4", "shape": list(obs.shape), "data": obs.tobytes()}, "mask": {"dtype": "<u1", "shape": list(m.shape), "data": m.tobytes()}, "logits": True}
        if fmt == "json":
            for t in ("obs", "mask"):
                body[t]["data"] = base64.b64encode(body[t]["data"]).decode()
        api("POST", "/v1/policies/beat-heuristic/act", body)
    api("DELETE", path)
    api("GET", path, status=404)


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_live_duel_positions_match_their_schemas(served, fmt: str) -> None:
    """A duel to its end; its positions from the session and from the record sent back agree, each answer to its schema."""
    srv, doc = served
    api = Api(srv.url, doc, fmt)
    s = api("POST", "/v1/sessions", {"game": {"name": "duel"}, "num_envs": 1, "seed": 3, "learner_seats": [0], "opponent": "random"})
    path = f"/v1/sessions/{s['session']}"
    b = api("POST", path + "/reset", {"seed": 2, "seq": 0})
    rng = np.random.default_rng(0)
    for _ in range(5000):
        mask = _tensor(b["mask"])
        b = api("POST", path + "/step", {"actions": [int(rng.choice(np.flatnonzero(mask[0])))], "seq": b["seq"]})
        done = _tensor(b["done"]) if isinstance(b["done"], dict) else b["done"]
        if done[0]:
            break
    else:
        raise AssertionError("no duel ended in 5,000 steps")
    from_session = api("GET", path + "/envs/0/positions?game=finished")
    rec = api("GET", path + "/envs/0/record")
    assert rec["finished"] is not None
    from_record = api("POST", "/v1/positions", rec)
    assert from_record == from_session
    assert len(from_session["positions"]) >= 2
    api("POST", "/v1/positions", {"nope": 1}, status=400)
    api("DELETE", path)
