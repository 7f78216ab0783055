"""``python -m dgenv.<tool>`` piped into a reader that goes away (``| head``) ends quietly.

Each tool is run with stdout a pipe whose reading end is already closed, so
its first write or its flush fails with EPIPE however small the output is:
the tool must exit 1 with nothing on stderr (no traceback, no "Exception
ignored"), and keep its own exit codes when the pipe is open.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_lead import _write

TOOLS = ["evaluate", "expert", "export", "lead", "train"]


def _closed_pipe_run(args: list[str], module: bool = True) -> subprocess.CompletedProcess[str]:
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, *(["-m"] if module else []), *args], stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("code", [0, 3])
def test_run_keeps_the_exit_code_and_ends_quietly_on_a_closed_pipe(code: int) -> None:
    prog = f"from dgenv._cli import run\ndef main():\n    print('x' * 100000)\n    return {code}\nrun(main)"
    p = _closed_pipe_run(["-c", prog], module=False)
    assert (p.returncode, p.stderr) == (1, "")
    ok = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120)
    assert (ok.returncode, ok.stdout, ok.stderr) == (code, "x" * 100000 + "\n", "")


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_ends_through_run(tool: str) -> None:
    src = (Path(__file__).parents[1] / "src" / "dgenv" / f"{tool}.py").read_text()
    assert src.rstrip().endswith('if __name__ == "__main__":\n    from ._cli import run\n\n    run(main)')


def test_evaluate_table_into_a_closed_pipe(tmp_path: Path) -> None:
    p = _closed_pipe_run(["dgenv.evaluate", "--agents", "random,heuristic,random", "--games", "6", "--backend", "dgeval",
                          "--out", str(tmp_path / "ev"), "--quiet"])
    assert (p.returncode, p.stderr) == (1, "")
    assert (tmp_path / "ev" / "results.json").exists()  # the work is done and written; only the printing stopped


def test_lead_table_into_a_closed_pipe_and_its_error_codes(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    f = _write(tmp_path / "t.csv", ["policy:x", "search", "heuristic"], rng.integers(0, 150, (12, 3)), [7, 8])
    p = _closed_pipe_run(["dgenv.lead", str(f)])
    assert (p.returncode, p.stderr) == (1, "")
    ok = subprocess.run([sys.executable, "-m", "dgenv.lead", str(f)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.startswith("policy:x less search: "), ok.stderr
    bad = subprocess.run([sys.executable, "-m", "dgenv.lead", str(tmp_path / "missing.csv")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("dgenv.lead: "), bad.stderr
