"""docs/python.md's Ray cluster steps, run: a head and a second node started
with ``ray start`` on this machine (separate temp dirs and ports), joined with
the cluster's auth token as the docs say, and one PPO iteration of
``python -m dgenv.rllib_train --address`` with an env runner on each node.

Ray (2.59 on) turns token authentication on for a head that finds a token
(``~/.ray/auth_token``, left by any earlier ``ray.init()``), and a second node
started without ``RAY_AUTH_MODE=token`` and the token is refused
(``InvalidAuthToken``). Here the token is given by ``RAY_AUTH_TOKEN`` on every
node and to the driver, never read from or written to ``~/.ray``.

Every Ray process this test starts is stopped at the end, whatever happens:
the process group of its ``ray start --block``, then by pid any descendant
(Ray's workers have process groups of their own) that outlives it.
``ray stop`` would stop every Ray on the machine, other users' too.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import tempfile
import time
from pathlib import Path
from typing import IO, Optional

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class _Node:
    """One ``ray start --block`` in its own process group, its output collected."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.lines: list[str] = []
        self.up = False  # it said "Ray runtime started"
        self.started = threading.Event()  # it said so, or its output ended
        self.proc = subprocess.Popen(
            # `ray start`, by this interpreter's Ray (the `ray` command may not be on PATH)
            [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, out: Optional[IO[str]]) -> None:
        assert out is not None
        with open(self.log, "w") as f:
            for line in out:
                f.write(line)
                self.lines.append(line)
                if "Ray runtime started" in line:
                    self.up = True
                    self.started.set()
        self.started.set()  # exited: wait() below tells

    def wait_started(self, timeout: float) -> None:
        if not self.started.wait(timeout) or not self.up:
            raise AssertionError(f"ray start did not start (exit {self.proc.poll()}):\n" + "".join(self.lines[-30:]))

    def stop(self) -> set[int]:
        """SIGTERM to the whole group (ray start shuts its node down), then SIGKILL to what is left.

        Ray's workers run in process groups of their own: they are found as
        descendants of ``ray start`` before anything is stopped, and killed by
        pid when they outlive the node. Returns those pids."""
        pids = _descendants(self.proc.pid)
        for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            if sig == signal.SIGKILL:
                for pid in pids:
                    if _alive(pid):
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                self.proc.poll()  # reap ray start itself
                if self.proc.returncode is not None and not any(_alive(p) for p in pids):
                    return pids
                time.sleep(0.2)
        return pids


def _stat(pid: int) -> Optional[tuple[int, str]]:
    """(parent pid, state) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
    return int(fields[1]), fields[0]


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] != "Z"  # a zombie has exited (init reaps it)


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(int(d.name))
            if st is not None:
                children.setdefault(st[0], []).append(int(d.name))
    out: set[int] = set()
    todo = [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _leftovers(tag: str) -> list[str]:
    """Processes whose command line names this test's temp dir (Ray's daemons and workers all do)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if tag in cmd:
            found.append(f"{d.name}: {cmd[:200]}")
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")
def test_ppo_iteration_on_a_two_node_cluster_with_token_auth() -> None:
    # Ray's Unix sockets live under --temp-dir, and their paths may not exceed 107 bytes: a short dir.
    tmp_path = Path(tempfile.mkdtemp(prefix="dgray-"))
    token = secrets.token_hex(16)
    env = dict(os.environ)
    env.update(
        RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token,  # the docs' steps: the same mode and token on every node
        RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p),
    )
    tag = str(tmp_path)
    gcs, agent_h, agent_w, metrics_h, metrics_w = _free_ports(5)
    common = ["--num-cpus", "1", "--disable-usage-stats"]
    nodes: list[_Node] = []
    try:
        head = _Node(["--head", "--port", str(gcs), "--include-dashboard", "false", "--temp-dir", str(tmp_path / "head"),
                      "--dashboard-agent-listen-port", str(agent_h), "--metrics-export-port", str(metrics_h), *common],
                     env, tmp_path / "head.log")
        nodes.append(head)
        head.wait_started(180)
        worker = _Node(["--address", f"127.0.0.1:{gcs}", "--temp-dir", str(tmp_path / "worker"),
                        "--dashboard-agent-listen-port", str(agent_w), "--metrics-export-port", str(metrics_w), *common],
                       env, tmp_path / "worker.log")
        nodes.append(worker)
        worker.wait_started(180)

        # One CPU a node and one per env runner: the two runners land on the two nodes.
        # Each starts its own dgserver on its node's loopback (no --url).
        r = subprocess.run(
            [sys.executable, "-m", "dgenv.rllib_train", "--address", f"127.0.0.1:{gcs}", "--env-runners", "2",
             "--iterations", "1", "--opponent", "heuristic", "--players", "3", "--deals", "1",
             "--train-batch-size", "128", "--minibatch-size", "64", "--epochs", "1", "--hiddens", "16", "--seed", "1"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=420,
        )
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
        lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        assert len(lines) == 1 and lines[0]["env_steps"] >= 128, r.stdout
        assert lines[0]["env_runner_nodes"] == 2, r.stdout
    finally:
        started = set().union(*(n.stop() for n in reversed(nodes)))
    left = _leftovers(tag) + [f"{p} (a descendant of ray start)" for p in started if _alive(p)]
    assert not left, "Ray processes left running:\n" + "\n".join(left)
    shutil.rmtree(tmp_path, ignore_errors=True)
