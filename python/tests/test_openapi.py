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

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dgenv

pytest.importorskip("schemathesis")  # in the test extra: `make test` installs it

HERE = Path(__file__).resolve().parent
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
