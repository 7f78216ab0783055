"""Loading the Go engine as a shared library (``libdgenv.so``) and calling it.

The library is built from ``cmd/libdgenv`` with ``go build -buildmode=c-shared``.
It is looked up, first match wins:

1. ``$DGENV_LIB`` (a path to the library), when set;
2. next to this module (``dgenv/libdgenv.so``, where a wheel puts it);
3. the repository's ``bin/libdgenv.so`` (built there with ``go build`` when
   missing or older than the Go sources, as :func:`dgenv.find_server` does
   for ``bin/dgserver``).

Hazards of a Go runtime inside Python, and what this module does about them:

- One Go runtime per process: the library is loaded once (:func:`lib`) and
  shared by every in-process env and pyspiel state.
- ``fork()``: the Go runtime's threads do not survive into a forked child, so
  a child calling into its parent's library could hang. After a fork every
  call raises :class:`~dgenv.errors.DgenvError` naming the fix (use the
  ``"spawn"`` or ``"forkserver"`` start method, or load the library only in
  the children). A child that never touches the library is unaffected.
- Signals: Python's SIGINT handler stays in place (Go installs its own only
  for signals nobody handles), so Ctrl-C raises ``KeyboardInterrupt`` as soon
  as the current Go call returns; calls are short (one batch step, one move).
- Buffers: every call passes each buffer with its length in bytes, and Go
  checks the length against what it will read or write (a wrong one is an
  error, never an overrun); strings are passed with their length too.
- Threads: ctypes releases the GIL for every call, so threads stepping
  different envs run in parallel in Go. Calls on one handle are serialised
  in Go, and a handle freed while a call on it is on its way answers
  ``not_found`` (see :class:`dgenv.inproc.LocalBatchEnv` for the Python side).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Optional

from .errors import DgenvError, error_from_response

__all__ = ["lib", "find_library", "LIB_NAME", "ENV_VAR", "check", "call_json", "errbuf", "Lib"]

LIB_NAME = "libdgenv.dylib" if sys.platform == "darwin" else "libdgenv.so"
ENV_VAR = "DGENV_LIB"
ABI_VERSION = 4

_I64 = ctypes.c_int64
_I32 = ctypes.c_int32
_U64 = ctypes.c_uint64
_P = ctypes.c_void_p
_S = ctypes.c_char_p

# (name, restype, argtypes): every exported function, so a call with a wrong
# argument fails in ctypes instead of passing garbage to Go.
_SIGNATURES = [
    ("dg_abi_version", _I64, []),
    ("dg_free", None, [_I64]),
    ("dg_live_handles", _I64, []),
    ("dg_bots", _I64, [_P, _I64]),
    ("dg_games", _I64, [_P, _I64]),
    ("dg_load_policies", _I64, [_S, _I64, _P, _I64]),
    ("dg_policies", _I64, [_P, _I64]),
    ("dg_policy_shape", _I64, [_S, _I64, _P, _I64]),
    ("dg_policy_act", _I64, [_S, _I64, _P, _I64, _P, _I64, _I64, _I32, ctypes.c_double, _U64, _P, _I64, _P, _I64, _P, _I64]),
    ("dg_vec_new", _I64, [_S, _I64, _P, _I64]),
    ("dg_vec_info", _I64, [_I64, _P, _I64, _P, _I64]),
    ("dg_vec_reset", _I64, [_I64, _U64, _I32, _P, _I64, _P, _I64]),
    ("dg_vec_step", _I64, [_I64, _P, _I64, _P, _I64, _P, _I64]),
    ("dg_vec_random_actions", _I64, [_I64, _P, _I64, _P, _I64]),
    ("dg_vec_record", _I64, [_I64, _I64, _P, _I64, _P, _I64]),
    ("dg_match_stats", _I64, [_S, _I64, _P, _I64, _P, _I64, _P, _I64]),
    ("dg_estimate95", _I64, [_P, _I64, _P, _I64, _P, _I64]),
    ("dg_state_new", _I64, [_S, _I64, _P, _I64]),
    ("dg_state_clone", _I64, [_I64]),
    ("dg_state_apply", _I64, [_I64, _I64, _P, _I64, _P, _I64]),
    ("dg_state_apply_many", _I64, [_I64, _P, _I64, _P, _I64, _P, _I64]),
    ("dg_state_status", _I64, [_I64, _P, _I64]),
    ("dg_state_tensor", _I64, [_I64, _I64, _I64, _P, _I64]),
    ("dg_state_string", _I64, [_I64, _I64, _I64, _P, _I64]),
    ("dg_state_returns", _I64, [_I64, _I64, _P, _I64]),
    ("dg_state_serialize", _I64, [_I64, _P, _I64]),
    ("dg_state_deserialize", _I64, [_S, _I64, _S, _I64, _P, _I64]),
    ("dg_state_resample", _I64, [_I64, _I64, _U64, _P, _I64]),
    ("dg_state_history", _I64, [_I64, _P, _I64]),
    ("dg_state_sizes", _I64, [_S, _I64, _P, _I64, _P, _I64]),
    ("dg_state_action_string", _I64, [_I64, _I64, _I64, _P, _I64]),
    ("dg_state_chance_outcomes", _I64, [_I64, _P, _I64]),
    ("dg_state_rollout", _I64, [_I64, _I64, _U64, _P, _I64]),
]

ERRCAP = 1 << 14

_tls = threading.local()


def errbuf() -> Any:
    """This thread's error buffer (``ERRCAP`` bytes): a failed call's error is
    read back by the thread that made the call, whatever other threads do."""
    b = getattr(_tls, "err", None)
    if b is None:
        b = _tls.err = ctypes.create_string_buffer(ERRCAP)
    return b


class Lib:
    """The loaded library: its functions as attributes, plus the fork guard."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cdll = ctypes.CDLL(str(path))  # CDLL releases the GIL during each call
        for name, res, args in _SIGNATURES:
            f = getattr(self.cdll, name, None)
            if f is None:
                raise DgenvError(f"{path}: no function {name}: rebuild the library (go build -buildmode=c-shared ./cmd/libdgenv)")
            f.restype = res
            f.argtypes = args
            setattr(self, name, f)
        v = self.dg_abi_version()
        if v != ABI_VERSION:
            raise DgenvError(f"{path}: ABI version {v}, this dgenv wants {ABI_VERSION}: rebuild the library")
        self.pid = os.getpid()

    def __repr__(self) -> str:
        return f"Lib({str(self.path)!r})"

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name __init__ did not set: the dg_* functions are
        # set from _SIGNATURES, so this types them for mypy and names a typo.
        raise AttributeError(f"libdgenv has no function {name}")


_lib: Optional[Lib] = None
_lock = threading.Lock()
_forked = False


def _after_fork_in_child() -> None:
    global _forked
    if _lib is None:
        return
    _forked = True
    # Every function of the loaded library now raises (dg_free does nothing,
    # so objects inherited from the parent can still be garbage collected).
    for name, _res, _args in _SIGNATURES:
        setattr(_lib, name, _forked_call)
    setattr(_lib, "dg_free", lambda h: None)


def _forked_call(*args: Any) -> Any:
    raise _fork_error()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ForkedError(DgenvError):
    """The Go engine was loaded before this process was forked: it cannot run here."""


def _fork_error() -> ForkedError:
    return ForkedError(
        "the Go engine (libdgenv) was loaded in the parent process, and a Go runtime does not "
        "survive fork(): in this child process it cannot be used. Start worker processes with "
        "multiprocessing's 'spawn' or 'forkserver' method (multiprocessing.get_context('spawn')), "
        "or create the in-process envs only inside the children."
    )


def _newest_go_source(repo: Path) -> float:
    from .server import _newest_source

    return _newest_source(repo)


def _build(repo: Path, out: Path) -> None:
    go = shutil.which("go")
    if go is None:
        raise DgenvError(f"{out} is missing or stale and `go` is not on PATH to build it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    proc = subprocess.run(
        [go, "build", "-buildmode=c-shared", "-o", str(tmp), "./cmd/libdgenv"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    tmp.with_suffix(".h").unlink(missing_ok=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise DgenvError(f"go build -buildmode=c-shared ./cmd/libdgenv failed:\n{proc.stdout}")
    os.replace(tmp, out)


def find_library(build: bool = True) -> Path:
    """Path of ``libdgenv``: ``$DGENV_LIB``, then next to this package, then the repo's ``bin/``.

    In a source checkout the repo's ``bin/libdgenv.so`` is (re)built when it is
    missing or older than the Go sources (``build=False`` never builds).

    Raises:
        DgenvError: nothing found and nothing could be built.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env)
        if not p.is_file():
            raise DgenvError(f"${ENV_VAR}={env} does not exist")
        return p
    here = Path(__file__).resolve().parent / LIB_NAME
    if here.is_file():
        return here
    from .server import find_repo

    repo = find_repo(Path(__file__).resolve().parent) or find_repo()
    if repo is not None and (repo / "cmd" / "libdgenv").is_dir():
        out = repo / "bin" / LIB_NAME
        stale = not out.is_file() or _newest_go_source(repo) > out.stat().st_mtime
        if build and stale:
            try:
                _build(repo, out)
            except DgenvError:
                if not out.is_file():
                    raise
        if out.is_file():
            return out
    raise DgenvError(
        f"no {LIB_NAME}: set ${ENV_VAR}, install a dgenv wheel that carries it, or run inside the "
        "repository with Go installed (make build)"
    )


def lib() -> Lib:
    """The process's one loaded library (loaded on first use).

    Raises:
        ForkedError: this process was forked after the parent loaded the library.
    """
    global _lib
    if _forked:
        raise _fork_error()
    l = _lib
    if l is not None:
        return l
    with _lock:
        if _lib is None:
            _lib = Lib(find_library())
        return _lib


def raise_error(errbuf: Any) -> None:
    """Raise the exception for the JSON error a call wrote into ``errbuf``."""
    raw = ctypes.string_at(errbuf).decode("utf-8", "replace")
    try:
        err = json.loads(raw)
    except ValueError:
        err = {"code": "internal", "message": raw or "libdgenv: call failed without a message"}
    body = {"error": {"code": err.get("code", ""), "message": err.get("message", ""), **(err.get("details") or {})}}
    status = {"bad_request": 400, "not_found": 404, "too_large": 413, "illegal_action": 422, "limit": 429}.get(
        err.get("code", ""), 500)
    raise error_from_response(status, body)


def check(r: int, errbuf: Any) -> int:
    """``r`` if the call succeeded, else raise its error."""
    if r < 0:
        raise_error(errbuf)
    return r


def call_json(f: Any, *args: Any, errbuf: Any = None) -> Any:
    """Call a function that writes JSON into (buf, cap) and returns its length; decode it."""
    cap = 1 << 16
    while True:
        buf = ctypes.create_string_buffer(cap)
        extra = () if errbuf is None else (errbuf, ERRCAP)
        n = f(*args, buf, cap, *extra)
        if n < 0:
            raise_error(errbuf)
        if n <= cap:
            return json.loads(buf.raw[:n])
        cap = n
