"""Start the Go batch server from Python: ``dgenv.serve()``.

The binary is found in this order (:func:`find_server`): the ``binary``
argument; the one packaged in this wheel (``dgenv/_bin/dgserver``, built into
it by ``pip wheel ./python``); the environment variable ``DGENV_SERVER``;
``dgserver`` on PATH; then, inside the repository, ``bin/dgserver`` (built with
``go build`` when missing or older than the Go sources, with its progress on
stderr). It is started on a free loopback port (``--addr 127.0.0.1:0``) or,
with ``transport="unix"``, on a Unix socket in a private temporary directory;
the address it prints is parsed, and :func:`serve` returns once ``/v1/readyz``
answers. Leaving the ``with`` block (or :meth:`LocalServer.stop`, or the
interpreter's exit) stops it.

The wheel also installs a ``dgserver`` command (:func:`main`) that runs the
packaged binary with the given arguments.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections import deque
from pathlib import Path
from typing import IO, Mapping, NoReturn, Optional, Sequence, Union

from .client import Client
from .errors import ServerStartError

__all__ = ["serve", "LocalServer", "find_server", "find_binary", "find_repo", "packaged_server", "main"]

MODULE = "github.com/davidgoliath/dgenv"
ENV_VAR = "DGENV_SERVER"
PACKAGED = Path(__file__).resolve().parent / "_bin" / "dgserver"  # in a wheel built by setup.py

# "listening on http://127.0.0.1:41234" (or any line naming a URL / host:port).
_ADDR_RE = re.compile(r"(https?://[^\s\"']+)|\b((?:\d{1,3}\.){3}\d{1,3}:\d+|\[[0-9a-fA-F:]+\]:\d+)\b")
_UNIX_RE = re.compile(r"\blistening on (unix:\S+)")
_LISTEN_HINT = re.compile(r"listen|serving|addr", re.IGNORECASE)


def find_repo(start: Optional[Union[str, Path]] = None) -> Optional[Path]:
    """Return the root of the Go repository (its go.mod names the dgenv module).

    Searched upwards from ``start`` (default: the current directory), then from
    this package's own directory (an editable install lives inside the repo).
    """
    starts = [Path(start)] if start is not None else [Path.cwd(), Path(__file__).resolve().parent]
    for s in starts:
        for d in [s.resolve(), *s.resolve().parents]:
            gm = d / "go.mod"
            if gm.is_file():
                try:
                    first = gm.read_text().splitlines()[0]
                except (OSError, IndexError):
                    continue
                if first.strip() == f"module {MODULE}":
                    return d
    return None


def _newest_source(repo: Path) -> float:
    newest = 0.0
    for sub in ("cmd", "server", "env", "obs", "configs"):
        root = repo / sub
        if not root.is_dir():
            continue
        for dirpath, _dirs, files in os.walk(root):
            for f in files:
                if f.endswith((".go", ".yaml", ".yml")) and not f.endswith("_test.go"):
                    try:
                        newest = max(newest, os.stat(os.path.join(dirpath, f)).st_mtime)
                    except OSError:
                        pass
    for f in ("go.mod", "go.sum"):
        try:
            newest = max(newest, os.stat(repo / f).st_mtime)
        except OSError:
            pass
    return newest


def _build(repo: Path, out: Path, progress: Optional[IO[str]] = None, *, name: str = "dgserver") -> None:
    """``go build ./cmd/<name>`` into ``out``, telling ``progress`` (default stderr) how it goes."""
    go = shutil.which("go")
    if go is None:
        raise ServerStartError(f"{out} is missing or stale and `go` is not on PATH to build it")
    log = sys.stderr if progress is None else progress
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    t0 = time.monotonic()
    print(f"dgenv: building {out} (go build ./cmd/{name}; a first build takes about a minute)", file=log, flush=True)
    # -v names each package as it compiles: shown as a running count.
    proc = subprocess.Popen(
        [go, "build", "-v", "-o", str(tmp), f"./cmd/{name}"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    tty = getattr(log, "isatty", lambda: False)()
    shown = t0
    for line in proc.stdout:
        lines.append(line.rstrip())
        now = time.monotonic()
        if tty:
            print(f"\rdgenv: building {name}: {len(lines)} packages, {now - t0:.0f}s ", end="", file=log, flush=True)
        elif now - shown >= 5:
            shown = now
            print(f"dgenv: building {name}: {len(lines)} packages compiled, {now - t0:.0f}s", file=log, flush=True)
    if tty:
        print(file=log)
    if proc.wait() != 0:
        tmp.unlink(missing_ok=True)
        out_text = "\n".join(ln for ln in lines if " " in ln or ":" in ln) or "\n".join(lines[-20:])
        raise ServerStartError(f"go build ./cmd/{name} failed:\n{out_text}")
    os.replace(tmp, out)  # atomic: a concurrent serve() never runs half a binary
    print(f"dgenv: built {out} in {time.monotonic() - t0:.0f}s", file=log, flush=True)


def _is_console_script(path: str) -> bool:
    """True for the ``dgserver`` command pip writes for this package (a Python
    launcher of :func:`main`), which must not be taken for the binary itself."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b"#!") and b"dgenv.server" in head


def packaged_server() -> Optional[Path]:
    """The server binary this package carries (a wheel built by ``pip wheel``), if any."""
    return _packaged("dgserver")


def _packaged(name: str) -> Optional[Path]:
    p = PACKAGED.parent / name
    return p if p.is_file() and os.access(p, os.X_OK) else None


# The environment variable naming each binary.
BINARY_ENV = {"dgserver": ENV_VAR, "dgeval": "DGENV_DGEVAL"}


def find_binary(
    name: str, binary: Optional[Union[str, Path]] = None, build: Union[bool, str] = "auto", *, path: bool = True
) -> Path:
    """Return the path of one of the repository's Go binaries (``dgserver``, ``dgeval``), building it if needed.

    Searched in order: ``binary``; the binary packaged in the wheel;
    ``$DGENV_SERVER`` (dgserver) or ``$DGENV_DGEVAL`` (dgeval); ``name`` on
    PATH (if ``path``); the repository's ``bin/<name>``, built from the Go
    sources when needed.

    Args:
        name: the command, ``cmd/<name>`` in the repository.
        binary: explicit path; wins over everything else.
        build: ``"auto"`` builds the repository's ``bin/<name>`` when it is
            missing or older than the Go sources; True always rebuilds; False never builds.
        path: whether to look on PATH.

    Raises:
        ServerStartError: nothing found and nothing could be built.
    """
    if binary is not None:
        p = Path(binary)
        if not p.is_file():
            raise ServerStartError(f"{name} binary {p} does not exist")
        return p
    packaged = _packaged(name)
    if packaged is not None and build is not True:
        return packaged
    var = BINARY_ENV.get(name)
    env = os.environ.get(var) if var else None
    if env:
        p = Path(env)
        if not p.is_file():
            raise ServerStartError(f"${var}={env} does not exist")
        return p
    if path and build is not True:
        found = shutil.which(name)
        if found and not _is_console_script(found):
            return Path(found)
    repo = find_repo()
    if repo is not None and (repo / "cmd" / name).is_dir():
        out = repo / "bin" / name
        stale = not out.is_file() or (build == "auto" and _newest_source(repo) > out.stat().st_mtime)
        if build is True or (build and stale):
            try:
                _build(repo, out, name=name)
            except ServerStartError as e:
                if build is True or not out.is_file():
                    raise
                # Sources changed but do not build right now (work in progress):
                # the binary that is there still serves.
                warnings.warn(f"using the existing {out}: rebuilding it failed: {e}", RuntimeWarning, stacklevel=2)
        if out.is_file():
            return out
    where = f"set ${var}, " if var else ""
    raise ServerStartError(
        f"no {name}: install the dgenv wheel (it carries the server), {where}put {name} on PATH, "
        "or run inside the repository with Go installed"
    )


def find_server(
    binary: Optional[Union[str, Path]] = None, build: Union[bool, str] = "auto", *, path: bool = True
) -> Path:
    """Return the path of the server binary, building it if needed: :func:`find_binary` for ``dgserver``.

    Searched in order: ``binary``; the binary packaged in the wheel;
    ``$DGENV_SERVER``; ``dgserver`` on PATH (if ``path``); the repository's
    ``bin/dgserver``, built from the Go sources when needed.

    Raises:
        ServerStartError: nothing found and nothing could be built.
    """
    return find_binary("dgserver", binary, build, path=path)


def main(argv: Optional[Sequence[str]] = None) -> NoReturn:
    """The ``dgserver`` command: run the server binary (packaged, ``$DGENV_SERVER``
    or the repository's) with the command line's arguments."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        exe = find_server(build="auto", path=False)
    except ServerStartError as e:
        print(f"dgserver: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if sys.platform == "win32":  # pragma: no cover - no exec there
        raise SystemExit(subprocess.call([str(exe), *args]))
    os.execv(str(exe), [str(exe), *args])


def _pdeathsig() -> None:  # pragma: no cover - runs in the child
    """Ask Linux to SIGTERM the server if the Python process dies without cleanup."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


_LIVE: "weakref.WeakSet[LocalServer]" = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for s in list(_LIVE):
        s.stop()


class LocalServer(Client):
    """A server process started by :func:`serve`, and a :class:`Client` for it.

    Use it as a context manager, or call :meth:`stop`. ``make`` and the other
    client methods work directly on it.

    Attributes:
        process: the server's ``subprocess.Popen``.
        binary: path of the binary that runs.
        log: the server's last output lines.
    """

    def __init__(
        self,
        url: str,
        process: subprocess.Popen,
        binary: Path,
        log: deque,
        token: Optional[str],
        socket_dir: Optional[str] = None,
    ):
        super().__init__(url, token=token)
        self.process = process
        self.binary = binary
        self.log = log
        self._socket_dir = socket_dir
        _LIVE.add(self)

    @property
    def pid(self) -> int:
        """Process id of the server."""
        return self.process.pid

    @property
    def running(self) -> bool:
        """True while the server process is alive."""
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout`` seconds) and reap it."""
        _LIVE.discard(self)
        try:
            self.close()
        except Exception:
            pass
        p = self.process
        if p.poll() is None:
            try:
                p.terminate()
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            except ProcessLookupError:
                pass
        if p.stdout is not None:
            try:
                p.stdout.close()
            except Exception:
                pass
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def __enter__(self) -> "LocalServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self.process.returncode}"
        return f"LocalServer({self.url!r}, pid={self.process.pid}, {state})"


def serve(
    binary: Optional[Union[str, Path]] = None,
    *,
    args: Sequence[str] = (),
    env: Optional[Mapping[str, str]] = None,
    host: str = "127.0.0.1",
    transport: str = "tcp",
    token: Optional[str] = None,
    build: Union[bool, str] = "auto",
    timeout: float = 120.0,
    quiet: bool = True,
) -> LocalServer:
    """Start a server on a free loopback port and return a client for it.

    ``with dgenv.serve() as srv: env = srv.make(num_envs=64)`` needs no second
    terminal; the server stops when the block ends.

    Args:
        binary: server binary to run (see :func:`find_server` for the search order).
        args: extra command-line arguments for the server (e.g. ``["--config", path]``).
        env: extra environment variables for the server; its configuration keys
            read ``DGSERVER_*`` variables (``{"DGSERVER_LIMITS_MAX_SESSIONS": "8"}``).
        host: loopback address to listen on (``transport="tcp"``).
        transport: ``"tcp"`` (a free port on ``host``) or ``"unix"`` (a Unix
            domain socket in a fresh private directory, removed on stop:
            cheaper per byte than TCP loopback, for large batches).
        token: bearer token: the server requires it (``DGSERVER_AUTH_TOKEN``) and
            the returned client sends it.
        build: see :func:`find_server`.
        timeout: seconds to wait for the address line and for readiness.
        quiet: if False, the server's output is echoed to stderr.

    Raises:
        ServerStartError: no binary, or the server exited or did not become ready.
    """
    exe = find_server(binary, build=build)
    socket_dir: Optional[str] = None
    if transport == "tcp":
        addr = f"{host}:0"
    elif transport == "unix":
        if not hasattr(socket, "AF_UNIX"):
            raise ValueError("transport='unix': this platform has no Unix domain sockets")
        socket_dir = tempfile.mkdtemp(prefix="dgenv-")  # mode 0700: only this user reaches the socket
        addr = "unix:" + os.path.join(socket_dir, "s.sock")
    else:
        raise ValueError(f"transport={transport!r}: want 'tcp' or 'unix'")
    cmd = [str(exe), "--addr", addr, *args]
    child_env = dict(os.environ)
    if token is not None:
        child_env["DGSERVER_AUTH_TOKEN"] = token
    child_env.update(env or {})
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            env=child_env,
            preexec_fn=_pdeathsig if sys.platform.startswith("linux") else None,
        )
    except OSError as e:
        if socket_dir is not None:
            shutil.rmtree(socket_dir, ignore_errors=True)
        raise ServerStartError(f"cannot start {exe}: {e}") from e

    log: deque[str] = deque(maxlen=200)
    found: list[str] = []
    got = threading.Event()

    def pump() -> None:
        # Reads every line for the server's whole life so its pipe never fills.
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.append(line.rstrip("\n"))
                if not quiet:
                    sys.stderr.write(line)
                if not found:
                    addr = _parse_addr(line)
                    if addr:
                        found.append(addr)
                        got.set()
        except (ValueError, OSError):
            pass
        got.set()

    threading.Thread(target=pump, name=f"dgserver-{proc.pid}-log", daemon=True).start()

    def fail(why: str) -> ServerStartError:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if socket_dir is not None:
            shutil.rmtree(socket_dir, ignore_errors=True)
        tail = "\n".join(list(log)[-20:])
        return ServerStartError(f"{' '.join(cmd)}: {why}\n--- server output ---\n{tail}")

    deadline = time.monotonic() + timeout
    if not got.wait(timeout) or not found:
        raise fail("exited before printing its address" if proc.poll() is not None else "printed no address")
    url = found[0]
    srv = LocalServer(url, proc, exe, log, token, socket_dir)
    while True:
        if proc.poll() is not None:
            srv.stop()
            raise fail(f"exited with status {proc.returncode}")
        if srv.ready():
            return srv
        if time.monotonic() > deadline:
            srv.stop()
            raise fail(f"not ready at {url}/v1/readyz after {timeout:.0f}s")
        time.sleep(0.05)


def _parse_addr(line: str) -> Optional[str]:
    """The base URL in a line like ``listening on http://127.0.0.1:41234`` (or ``on unix:/path``)."""
    u = _UNIX_RE.search(line)
    if u:
        return u.group(1)
    m = _ADDR_RE.search(line)
    if not m:
        return None
    if m.group(1):
        url = m.group(1).rstrip("/.,;)")
        return None if url.endswith(":0") else url
    if not _LISTEN_HINT.search(line) or m.group(2).endswith(":0"):
        return None
    return "http://" + m.group(2)
