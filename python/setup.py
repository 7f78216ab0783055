"""Build hooks: the wheel carries the Go server and match runner, compiled by ``go build``.

``pip wheel ./python`` (or ``python -m build --wheel python``), run in a checkout
of the repository with Go installed, compiles each entry of ``GO_BUILDS`` into
the package and tags the wheel for this platform (``py3-none-<platform>``: the
binaries do not depend on the Python version). Installing that wheel needs no
Go. An editable install (``pip install -e``) builds nothing: ``dgenv.serve()``
then builds and uses the repository's ``bin/dgserver``.

Everything else (name, dependencies, extras) is in pyproject.toml.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

MODULE = "github.com/davidgoliath/dgenv"

# What the wheel carries: (Go package, output path inside the dgenv package,
# -buildmode or None). dgeval plays and scores matches for `python -m
# dgenv.evaluate` (dgenv.server.find_binary finds both in _bin first). The
# shared library is the engine for in-process use (dgenv.local(); dgenv/_capi.py
# looks for it next to itself), built with CGO_ENABLED=1.
GO_BUILDS: list[tuple[str, str, Optional[str]]] = [
    ("./cmd/dgserver", "_bin/dgserver", None),
    ("./cmd/dgeval", "_bin/dgeval", None),
    ("./cmd/libdgenv", "libdgenv.dylib" if sys.platform == "darwin" else "libdgenv.so", "c-shared"),
]


def _repo() -> Path:
    """The Go repository this package sits in (or $DGENV_GO_SOURCE)."""
    here = os.environ.get("DGENV_GO_SOURCE") or str(Path(__file__).resolve().parent.parent)
    root = Path(here)
    gm = root / "go.mod"
    if not gm.is_file() or gm.read_text().splitlines()[0].strip() != f"module {MODULE}":
        sys.exit(
            f"dgenv: no Go sources at {root} (go.mod of {MODULE}): build the wheel from a checkout of the "
            "repository (pip wheel ./python, or python -m build --wheel python), or set $DGENV_GO_SOURCE to one"
        )
    return root


def _go_build(repo: Path, pkg: str, out: Path, mode: Optional[str]) -> None:
    go = shutil.which(os.environ.get("GO", "go"))
    if go is None:
        sys.exit("dgenv: building the wheel compiles the server with Go, and `go` is not on PATH (https://go.dev/dl)")
    out.parent.mkdir(parents=True, exist_ok=True)
    # The flags of the repository's `go build` (Makefile) but for -ldflags, which
    # only changes the link: the compiled packages come from Go's build cache.
    cmd = [go, "build", "-v", "-ldflags=-s -w", "-o", str(out.resolve())]
    if mode:
        cmd.append(f"-buildmode={mode}")
    cmd.append(pkg)
    env = dict(os.environ)
    if mode == "c-shared":
        env["CGO_ENABLED"] = "1"
    print(f"dgenv: {' '.join(cmd[1:])} (in {repo}; a first build takes about a minute)", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    # -v names each package as it compiles: the build's progress.
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    n = 0
    for line in proc.stdout:
        n += 1
        print(f"dgenv: [{time.monotonic() - t0:5.1f}s] {line.rstrip()}", file=sys.stderr, flush=True)
    if proc.wait() != 0:
        sys.exit(f"dgenv: go build {pkg} failed (exit status {proc.returncode}); its output is above")
    os.chmod(out, 0o755)
    if mode == "c-shared":
        out.with_suffix(".h").unlink(missing_ok=True)  # the C header is for C callers, not the wheel
    print(f"dgenv: built {out.name} ({n} packages compiled) in {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)


class BuildPyWithGo(build_py):
    """build_py, then the Go binaries into the build's dgenv package (not for editable installs)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        repo = _repo()
        for pkg, rel, mode in GO_BUILDS:
            _go_build(repo, pkg, Path(self.build_lib) / "dgenv" / rel, mode)


class BinaryDistribution(Distribution):
    """Holds native code: installed in platlib, in a platform wheel."""

    def has_ext_modules(self) -> bool:
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for this platform (it holds native binaries), for any Python 3."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=BinaryDistribution, cmdclass={"build_py": BuildPyWithGo, "bdist_wheel": PlatformWheel})
