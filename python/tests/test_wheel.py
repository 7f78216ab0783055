"""The wheel carries the server and dgeval: built here, installed in a fresh
venv, used (served, played, evaluated) from outside the repository with no Go on PATH."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from dgenv import server as dgserver

PYTHON_DIR = Path(__file__).resolve().parent.parent

PLAY = textwrap.dedent(
    """
    import os, subprocess, sys
    import numpy as np
    import dgenv
    from dgenv.server import find_server, packaged_server

    venv = sys.argv[1]
    assert dgenv.__file__.startswith(venv), dgenv.__file__       # the wheel's package, not the repo's
    assert packaged_server() is not None and find_server() == packaged_server()
    with dgenv.serve() as srv:
        assert str(srv.binary).startswith(venv), srv.binary
        env = srv.make(players=4, num_envs=2, seed=1, learner_seats=[0], opponent="heuristic")
        b = env.reset()
        rng = np.random.default_rng(0)
        steps = 0
        while not b.done.all():
            b = env.step(np.argmax(rng.random(b.mask.shape) * b.mask, axis=1))
            steps += 1
            assert steps < 1000
        print("played", steps, "steps; scores", b.scores.tolist())
    # The engine in process: the wheel's shared library, not the repository's.
    from dgenv import _capi
    with dgenv.local() as loc:
        assert str(_capi.lib().path).startswith(venv), _capi.lib().path
        env = loc.make(players=3, num_envs=4, seed=2)
        b = env.reset()
        for _ in range(50):
            b = env.step(np.argmax(rng.random(b.mask.shape) * b.mask, axis=1))
        print("in process:", int(b.episode.sum()), "games finished")
    # The console command runs the packaged binary.
    out = subprocess.run(["dgserver", "--help"], capture_output=True, text=True)
    assert "usage: dgserver" in out.stdout + out.stderr, out
    # Matches of bots only, and of a trained policy against bots, are played and
    # scored by the wheel's dgeval (Go's statistics).
    import json
    policy = sys.argv[2]
    for agents in ("heuristic,random,random,random", f"policy:{policy},heuristic,heuristic,heuristic"):
        out = subprocess.run([sys.executable, "-m", "dgenv.evaluate", "--agents", agents, "--games", "16",
                              "--quiet", "--out", "ev"], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        res = json.load(open("ev/results.json"))
        assert res["backend"] == "dgeval" and res["command"][0].startswith(venv), res["command"]
        assert res["games"] == 16 and [a["seats"] for a in res["agents"]] == [1, 3], res["agents"]
        print("evaluated", agents, [round(a["score"]["mean"], 2) for a in res["agents"]])
    print("ok")
    """
)


def test_wheel_carries_the_server_and_plays_without_go_or_repo(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        pytest.fail("building the wheel needs Go on PATH (make test has it: it builds bin/dgserver)")
    dist = tmp_path / "dist"
    # --no-build-isolation: the installed setuptools builds it (no download).
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(PYTHON_DIR)],
        check=True,
        timeout=600,
    )
    (wheel,) = dist.glob("dgenv-*.whl")
    assert "-py3-none-" in wheel.name and not wheel.name.endswith("-any.whl"), wheel.name  # a platform wheel
    with zipfile.ZipFile(wheel) as z:
        for exe in ("dgserver", "dgeval"):  # the server, and the match runner of python -m dgenv.evaluate
            info = z.getinfo(f"dgenv/_bin/{exe}")
            assert info.file_size > 1_000_000 and (info.external_attr >> 16) & 0o111  # an executable binary
        assert any(n.endswith("entry_points.txt") and b"dgserver = dgenv.server:main" in z.read(n) for n in z.namelist())
        lib = z.getinfo("dgenv/libdgenv.so")  # the engine for dgenv.local()
        assert lib.file_size > 1_000_000
        assert not any(n.endswith(".h") for n in z.namelist())

    venv = tmp_path / "venv"
    # A venv without pip (no ensurepip needed) that sees this interpreter's
    # site-packages through a .pth file, after its own: the dependencies
    # (numpy, msgpack) and pip itself come from there without downloading,
    # pip run by the venv's python installs into the venv, and the .pth files
    # of those folders (e.g. an editable dgenv) are not processed.
    # --ignore-installed puts the wheel's dgenv in the venv even where this
    # environment has a dgenv, which it then shadows.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    vpy = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    parent = [p for p in sys.path if p.endswith("-packages") and Path(p).is_dir()]
    (Path(purelib) / "_parent_env.pth").write_text("\n".join(parent) + "\n")
    subprocess.run(
        [str(vpy), "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--ignore-installed",
         "--disable-pip-version-check", str(wheel)],
        check=True,
        timeout=300,
    )

    outside = tmp_path / "elsewhere"  # no go.mod above it
    outside.mkdir()
    no_go = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "go").exists()]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DGENV_SERVER", "DGENV_URL", "GOROOT")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *no_go])
    script = outside / "play.py"
    script.write_text(PLAY)
    r = subprocess.run(
        [str(vpy), str(script), str(venv.resolve()), str(PYTHON_DIR.parent / "policies" / "beat-heuristic.onnx")],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "played" in r.stdout and r.stdout.rstrip().endswith("ok"), r.stdout


def test_a_build_from_python_reports_its_progress(tmp_path: Path) -> None:
    repo = dgserver.find_repo(PYTHON_DIR)
    assert repo is not None
    log = io.StringIO()
    out = tmp_path / "dgserver"
    dgserver._build(repo, out, progress=log)
    assert out.is_file() and os.access(out, os.X_OK)
    lines = log.getvalue().splitlines()
    assert lines[0].startswith(f"dgenv: building {out}") and "first build" in lines[0]
    assert lines[-1].startswith(f"dgenv: built {out} in "), lines


def test_the_console_script_is_not_taken_for_the_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "dgserver"
    fake.write_text("#!/usr/bin/python3\nimport sys\nfrom dgenv.server import main\nsys.exit(main())\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("DGENV_SERVER", raising=False)
    assert dgserver.find_server() != fake
