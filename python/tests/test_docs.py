"""Every Python code block of README.md and docs/python.md runs as written.

Each block runs on its own, in a fresh interpreter, from a folder outside the
repository: a snippet a user copies must need nothing from the blocks around
it. A block preceded by an HTML comment ``<!-- snippet: long (why) -->`` (a
training run, a Ray cluster) is not run here; the test lists them, so a new
mark shows up in review.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
DOCS = [REPO / "README.md", REPO / "docs" / "python.md"]
BLOCK = re.compile(r"(?:<!--\s*snippet:\s*(?P<mark>[^>]*?)\s*-->\s*\n)?^```python\n(?P<code>.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, str, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("code"))
            out.append((f"{doc.relative_to(REPO)}:{line}", m.group("mark") or "", m.group("code")))
    return out


BLOCKS = _blocks()
RUN = [b for b in BLOCKS if not b[1].startswith("long")]


def test_the_docs_have_python_blocks_and_few_are_marked_long() -> None:
    assert len(BLOCKS) >= 8
    long = [(where, mark) for where, mark, _ in BLOCKS if mark.startswith("long")]
    assert len(long) <= 3, long
    assert all(re.fullmatch(r"long \(.+\)", mark) for _, mark in long), long  # each says why


@pytest.mark.parametrize("where,mark,code", RUN, ids=[b[0] for b in RUN])
def test_snippet_runs_as_written(where: str, mark: str, code: str, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "python" / "src"), env.get("PYTHONPATH", "")])
    env.pop("DGENV_URL", None)
    if (REPO / "bin" / "dgserver").is_file():  # built by make test: no staleness check per snippet
        env.setdefault("DGENV_SERVER", str(REPO / "bin" / "dgserver"))
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, f"{where}:\n{code}\n--- stdout ---\n{r.stdout[-3000:]}\n--- stderr ---\n{r.stderr[-3000:]}"
