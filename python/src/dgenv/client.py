"""HTTP client for the batch server: sessions, reset/step, records.

One :class:`BatchEnv` owns one session and one keep-alive HTTP/1.1 connection.
Bodies are msgpack; every tensor comes back as one blob that becomes a numpy
array with ``np.frombuffer`` (no per-element work in Python).

Retries are safe: every step and reset carries the ``seq`` of the last batch
the env holds, so a request re-sent after a lost answer gets the batch the
server already produced instead of stepping again; a create carries a fresh
``request_id`` so a re-sent create answers the same session. When the
server has restarted (the session is gone), an env re-creates its session
with the same settings and marks the games that were in flight truncated
(``recover``; docs/python.md, "Retries and restarts").
"""

from __future__ import annotations

import http.client
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Union
from urllib.parse import urlsplit

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import _wire
from .errors import (
    BusyError,
    DgenvError,
    ServerUnavailable,
    SessionNotFound,
    Unavailable,
    error_from_response,
)

log = logging.getLogger("dgenv")

__all__ = ["Client", "BatchEnv", "Batch", "Spec", "ObsSpec", "Packed", "Section", "connect", "NUM_ACTIONS"]

NUM_ACTIONS = 90  # card id = colour * 18 + value - 1, for every player count


# Errors that mean the keep-alive connection went away before our request was
# read (the server closed an idle connection): safe to reconnect and resend once.
_STALE = (
    http.client.RemoteDisconnected,
    http.client.CannotSendRequest,
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
)


@dataclass(frozen=True)
class Section:
    """One named block of the flat observation vector.

    Attributes:
        name: section name (``"hand"``, ``"current_trick"``...).
        offset: index of its first element in the observation.
        shape: its shape (the section is ``obs[..., offset:offset+size]`` in C order).
        min: smallest value it takes.
        max: largest value it takes.
        doc: the server's description of its meaning.
    """

    name: str
    offset: int
    shape: tuple[int, ...]
    min: int = 0
    max: int = 1
    doc: str = ""

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class Packed:
    """How a ``packing="bits"`` session carries obs and mask (``spec.obs.packed``).

    ``obs_bits`` rows hold one bit per observation element (numpy
    ``bitorder="little"``); ``obs_extra`` rows hold the bytes of the sections
    whose values exceed 1, span after span; ``mask_bits`` rows hold the mask's
    90 bits. :class:`BatchEnv` unpacks them, so a :class:`Batch` looks the same
    either way.
    """

    obs_bytes: int
    extra: tuple[tuple[int, int], ...]  # (offset, length) spans of obs in obs_extra, in order
    extra_bytes: int
    mask_bytes: int

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "Packed":
        if d.get("bitorder", "little") != "little":
            raise ValueError(f"packed obs: bitorder {d.get('bitorder')!r} is not supported")
        return cls(
            obs_bytes=int(d["obs_bytes"]),
            extra=tuple((int(x["offset"]), int(x["length"])) for x in d.get("extra", ())),
            extra_bytes=int(d["extra_bytes"]),
            mask_bytes=int(d["mask_bytes"]),
        )

    def unpack(self, obs_bits: np.ndarray, obs_extra: np.ndarray, mask_bits: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
        """Rebuild ``obs`` [N, d] uint8 and ``mask`` [N, 90] bool from the packed tensors."""
        obs = np.unpackbits(obs_bits, axis=1, count=d, bitorder="little")
        k = 0
        for off, n in self.extra:
            obs[:, off : off + n] = obs_extra[:, k : k + n]
            k += n
        mask = np.unpackbits(mask_bits, axis=1, count=NUM_ACTIONS, bitorder="little").view(np.bool_)
        return obs, mask


@dataclass(frozen=True)
class ObsSpec:
    """Observation layout: flat shape, wire dtype and named sections."""

    shape: tuple[int, ...]
    dtype: np.dtype
    sections: tuple[Section, ...]
    packed: Optional[Packed] = None

    @property
    def size(self) -> int:
        """Number of elements of one observation."""
        return int(np.prod(self.shape, dtype=np.int64))

    def section(self, name: str) -> Section:
        """Return the section called ``name`` (KeyError if absent)."""
        for s in self.sections:
            if s.name == name:
                return s
        raise KeyError(f"no observation section {name!r}; have {[s.name for s in self.sections]}")

    def low_high(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-element lower and upper bounds of the observation, as float64 vectors."""
        lo = np.zeros(self.size, dtype=np.float64)
        hi = np.ones(self.size, dtype=np.float64)
        for s in self.sections:
            lo[s.offset : s.offset + s.size] = s.min
            hi[s.offset : s.offset + s.size] = s.max
        return lo, hi


@dataclass(frozen=True)
class Spec:
    """What a session is: sizes, seats, opponent, reward mode and observation layout."""

    num_envs: int
    players: int
    num_actions: int
    learner_seats: tuple[int, ...]
    opponent: Optional[str]
    reward: str
    obs: ObsSpec
    raw: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> "Spec":
        """Build a Spec from the server's ``spec`` object."""
        o = d["obs"]
        sections = tuple(
            Section(
                name=str(s["name"]),
                offset=int(s["offset"]),
                shape=tuple(int(x) for x in s["shape"]),
                min=int(s.get("min", 0) or 0),
                max=int(s.get("max", 1) if s.get("max") is not None else 1),
                doc=str(s.get("doc", "") or ""),
            )
            for s in o.get("sections", ())
        )
        players = int(d["players"])
        seats = d.get("learner_seats") or list(range(players))
        return cls(
            num_envs=int(d["num_envs"]),
            players=players,
            num_actions=int(d.get("num_actions", NUM_ACTIONS)),
            learner_seats=tuple(int(s) for s in seats),
            opponent=(d.get("opponent") or None),
            reward=str(d.get("reward", "points") or "points"),
            obs=ObsSpec(
                shape=tuple(int(x) for x in o["shape"]),
                dtype=np.dtype(o.get("dtype", "<u1")),
                sections=sections,
                packed=Packed.from_wire(o["packed"]) if o.get("packed") else None,
            ),
            raw=dict(d),
        )


class Batch(NamedTuple):
    """One answer of reset or step: arrays over the N envs of a session.

    Attributes:
        obs: ``[N, D]`` observation of the seat to act (float32 by default, or the
            wire dtype, see ``obs_dtype``).
        mask: ``[N, 90]`` bool, True where the action is legal for that seat.
        player: ``[N]`` int8, absolute seat to act.
        rewards: ``[N, P]`` float32, reward of each seat (absolute order) in this step.
        done: ``[N]`` bool, True where this step ended a game (the env already
            carries the next game's first observation).
        scores: ``[N, P]`` int32, final totals of the game that just ended (0 where not done).
        episode: ``[N]`` int64, games finished in that env so far.
        truncated: ``[N]`` bool, True where the game that was in flight was
            lost rather than finished: the server restarted (or the session
            expired) and the env re-created its session (``recover``); the
            env already holds a new game's first observation. All False
            otherwise (a read-only array shared between batches).

    Arrays decoded straight from the wire are views of the answer's bytes (no
    copy; the small multi-byte ones that msgpack left unaligned are copied).
    Each answer has its own buffer, so a Batch stays valid after later steps.
    """

    obs: np.ndarray
    mask: np.ndarray
    player: np.ndarray
    rewards: np.ndarray
    done: np.ndarray
    scores: np.ndarray
    episode: np.ndarray
    truncated: np.ndarray


def _unix_path(url: str) -> Optional[str]:
    """The socket path of a ``unix:PATH`` (or ``unix://PATH``) URL; None for other URLs."""
    if not url.startswith("unix:"):
        return None
    path = url[len("unix:"):]
    if path.startswith("//"):
        path = path[2:]
    if not path:
        raise ValueError(f"url {url!r}: want unix: followed by the socket's path")
    return path


class _UnixHTTPConnection(http.client.HTTPConnection):
    """http.client's connection, over a Unix domain socket instead of TCP."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self.socket_path)
        except OSError:
            s.close()
            raise
        self.sock = s


class _HTTP:
    """One keep-alive HTTP/1.1 connection speaking msgpack to one server."""

    def __init__(self, url: str, token: Optional[str], timeout: Optional[float]) -> None:
        self.socket_path: Optional[str] = _unix_path(url)
        if self.socket_path is not None:
            # HTTP over a Unix domain socket: the path names the socket, and
            # the routes start at its root.
            self.scheme, self.host, self.port, self.prefix = "unix", "localhost", 80, ""
            self.where = f"unix:{self.socket_path}"
        else:
            u = urlsplit(url if "://" in url else "http://" + url)
            if u.scheme not in ("http", "https"):
                raise ValueError(f"url {url!r}: want http://, https:// or unix:PATH")
            self.scheme = u.scheme
            self.host = u.hostname or "127.0.0.1"
            self.port = u.port or (443 if u.scheme == "https" else 80)
            self.prefix = u.path.rstrip("/")
            self.where = f"{self.scheme}://{self.host}:{self.port}"
        self.timeout = timeout
        # HTTP/1.1 keeps the connection alive and the server answers in the
        # request's format, so a request needs few headers (each costs time).
        self.headers = [("Content-Type", _wire.MSGPACK)]
        if token:
            self.headers.append(("Authorization", f"Bearer {token}"))
        self._conn: Optional[http.client.HTTPConnection] = None
        self._pending: Optional[tuple[str, str, Optional[bytes]]] = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.socket_path is not None:
                c: http.client.HTTPConnection = _UnixHTTPConnection(self.socket_path, timeout=self.timeout)
                c.connect()
            else:
                cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
                c = cls(self.host, self.port, timeout=self.timeout)
                c.connect()
                try:  # small requests must not wait for Nagle
                    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass
            self._conn = c
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def send(self, method: str, path: str, body: Any = None) -> None:
        """Send one request without reading the answer (see :meth:`receive`)."""
        payload = None if body is None else _wire.pack(body)
        self._pending = (method, path, payload)
        self._transmit(retry=True)

    def _transmit(self, retry: bool) -> None:
        assert self._pending is not None
        method, path, payload = self._pending
        for attempt in (0, 1) if retry else (1,):
            try:
                conn = self._connect()
                conn.putrequest(method, self.prefix + path, skip_accept_encoding=True)
                for k, v in self.headers:
                    conn.putheader(k, v)
                conn.putheader("Content-Length", str(len(payload)) if payload is not None else "0")
                conn.endheaders(payload)
                return
            except _STALE as e:
                self.close()
                if attempt:
                    self._pending = None
                    raise ServerUnavailable(f"{method} {path}: connection lost: {e}") from e
            except (OSError, http.client.HTTPException) as e:
                self.close()
                self._pending = None
                raise ServerUnavailable(
                    f"{method} {self.where}{self.prefix}{path}: {e}"
                ) from e

    def receive(self, *, session_route: bool = False, raw: bool = False) -> Any:
        """Read the answer to the request :meth:`send` sent; decode it or raise its ServerError.

        With ``raw``, a successful msgpack answer is returned undecoded, as a
        fresh uint8 array the caller's arrays may view (see BatchLayout).
        """
        if self._pending is None or self._conn is None:
            raise ServerUnavailable("no request in flight")
        method, path, _ = self._pending
        try:
            try:
                resp = self._conn.getresponse()
            except _STALE:
                # The server closed the idle keep-alive connection before it read
                # the request (nothing answered): reconnect and send it once more.
                self.close()
                self._transmit(retry=False)
                assert self._conn is not None
                resp = self._conn.getresponse()
            ctype = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
            n = resp.length
            if raw and resp.status < 400 and ctype == _wire.MSGPACK and n:
                buf = np.empty(n, dtype=np.uint8)  # owned by the arrays decoded from it
                mv = buf.data
                got = 0
                while got < n:
                    k = resp.readinto(mv[got:])
                    if not k:
                        raise http.client.IncompleteRead(bytes(mv[:got]), n - got)
                    got += k
                data: Any = mv
            else:
                data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise ServerUnavailable(
                f"{method} {self.where}{self.prefix}{path}: {e}"
            ) from e
        finally:
            self._pending = None
        if resp.will_close:
            self.close()
        if isinstance(data, memoryview):
            return buf
        return self._finish(resp.status, ctype, resp.getheader("Retry-After"), data, session_route)

    @staticmethod
    def _finish(status: int, ctype: str, retry_after: Optional[str], data: bytes, session_route: bool) -> Any:
        """Decode a body by its content type; raise the mapped ServerError for an error status."""
        decoded: Any = None
        if data:
            try:
                if ctype == _wire.JSON or (ctype != _wire.MSGPACK and data[:1] in (b"{", b"[")):
                    import json

                    decoded = json.loads(data)
                else:
                    decoded = _wire.unpack(data)
            except Exception:  # not the API (plain-text 404 of a proxy, etc.)
                decoded = data.decode("utf-8", "replace")
        if status >= 400:
            raise error_from_response(status, decoded, retry_after=retry_after, session_route=session_route)
        return decoded

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        session_route: bool = False,
        raw: bool = False,
    ) -> Any:
        """Send one request; return the decoded body or raise the mapped ServerError."""
        self.send(method, path, body)
        return self.receive(session_route=session_route, raw=raw)


class _FastHTTP(_HTTP):
    """The same exchange framed by hand on the HTTPConnection's socket.

    http.client spends ~100 µs of Python per request on header objects
    (email.parser) and several sends; at small N that is most of a step. Here a
    request is one ``sendall`` of prebuilt bytes, and the answer's status line
    and headers are read with a few ``readline`` calls from one buffered reader
    kept for the connection's life; bodies with Content-Length go straight
    into the answer's buffer, chunked ones are reassembled.
    """

    _rfile: Any = None

    def _connect(self) -> http.client.HTTPConnection:
        fresh = self._conn is None
        conn = super()._connect()
        if fresh or self._rfile is None:
            self._rfile = conn.sock.makefile("rb", buffering=1 << 16)
            host = self.host if ":" not in self.host else f"[{self.host}]"
            default = 443 if self.scheme == "https" else 80
            hostport = host if self.port == default else f"{host}:{self.port}"
            extra = "".join(f"{k}: {v}\r\n" for k, v in self.headers)
            self._head = (f"Host: {hostport}\r\n{extra}").encode("latin-1")
        return conn

    def close(self) -> None:
        if self._rfile is not None:
            try:
                self._rfile.close()
            except Exception:
                pass
            self._rfile = None
        super().close()

    def _transmit(self, retry: bool) -> None:
        assert self._pending is not None
        method, path, payload = self._pending
        body = payload or b""
        for attempt in (0, 1) if retry else (1,):
            try:
                conn = self._connect()
                msg = b"".join((
                    f"{method} {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1"),
                    self._head,
                    f"Content-Length: {len(body)}\r\n\r\n".encode("latin-1"),
                    body,
                ))
                conn.sock.sendall(msg)
                return
            except _STALE as e:
                self.close()
                if attempt:
                    self._pending = None
                    raise ServerUnavailable(f"{method} {path}: connection lost: {e}") from e
            except OSError as e:
                self.close()
                self._pending = None
                raise ServerUnavailable(
                    f"{method} {self.where}{self.prefix}{path}: {e}"
                ) from e

    def _read_head(self) -> tuple[int, dict[bytes, bytes], bool]:
        rf = self._rfile
        line = rf.readline(65537)
        if not line:
            raise http.client.RemoteDisconnected("server closed the connection without answering")
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise http.client.BadStatusLine(line.decode("latin-1", "replace"))
        status = int(parts[1])
        headers: dict[bytes, bytes] = {}
        while True:
            h = rf.readline(65537)
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.partition(b":")
            headers[k.strip().lower()] = v.strip()
        http10 = parts[0] == b"HTTP/1.0"
        conn_hdr = headers.get(b"connection", b"").lower()
        will_close = conn_hdr == b"close" or (http10 and conn_hdr != b"keep-alive")
        return status, headers, will_close

    def _read_exact(self, n: int) -> bytes:
        data = self._rfile.read(n)
        if len(data) != n:
            raise http.client.IncompleteRead(data, n - len(data))
        return data

    def receive(self, *, session_route: bool = False, raw: bool = False) -> Any:
        if self._pending is None or self._conn is None:
            raise ServerUnavailable("no request in flight")
        method, path, _ = self._pending
        try:
            try:
                status, headers, will_close = self._read_head()
            except _STALE:
                # The server closed the idle keep-alive connection before it read
                # the request (nothing answered): reconnect and send it once more.
                self.close()
                self._transmit(retry=False)
                status, headers, will_close = self._read_head()
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower().decode("latin-1")
            length = headers.get(b"content-length")
            buf: Optional[np.ndarray] = None
            if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
                data = b""
            elif b"chunked" in headers.get(b"transfer-encoding", b"").lower():
                chunks = []
                while True:
                    size = int(self._rfile.readline(65537).split(b";")[0].strip(), 16)
                    if size == 0:
                        while self._rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        break
                    chunks.append(self._read_exact(size))
                    self._rfile.readline(65537)  # CRLF after each chunk
                data = b"".join(chunks)
            elif length is not None:
                n = int(length)
                if raw and status < 400 and ctype == _wire.MSGPACK and n:
                    buf = np.empty(n, dtype=np.uint8)  # owned by the arrays decoded from it
                    mv = buf.data
                    got = 0
                    while got < n:
                        k = self._rfile.readinto(mv[got:])
                        if not k:
                            raise http.client.IncompleteRead(bytes(mv[:got]), n - got)
                        got += k
                    data = b""
                else:
                    data = self._read_exact(n)
            else:  # no length, not chunked: the body runs to the end of the connection
                data = self._rfile.read()
                will_close = True
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.close()
            raise ServerUnavailable(
                f"{method} {self.where}{self.prefix}{path}: {e}"
            ) from e
        finally:
            self._pending = None
        if will_close:
            self.close()
        if buf is not None:
            return buf
        ra = headers.get(b"retry-after")
        return self._finish(status, ctype, ra.decode("latin-1") if ra else None, data, session_route)


def _http(url: str, token: Optional[str], timeout: Optional[float]) -> _HTTP:
    """The connection class: hand-framed by default; ``DGENV_HTTP=stdlib`` uses http.client's framing."""
    if os.environ.get("DGENV_HTTP", "").lower() == "stdlib":
        return _HTTP(url, token, timeout)
    return _FastHTTP(url, token, timeout)


class Client:
    """A connection to a running batch server.

    Use :func:`connect` (or :func:`dgenv.serve`) to get one. The client itself
    keeps one connection for session management; every env made with
    :meth:`make` opens its own keep-alive connection.

    Args:
        url: base URL of the server, or ``"unix:/path/to.sock"``.
        token: bearer token, if the server requires one.
        timeout: socket timeout in seconds for each request.
        retry_timeout: how long, in seconds, a create, step, reset or record
            whose connection failed (refused, reset, cut mid-answer, timed
            out) or that met a draining server (503) is retried before
            :class:`~dgenv.errors.ServerUnavailable` is raised. Retries carry
            the env's ``seq`` (or the create's ``request_id``), so none is
            applied twice. 0 turns retrying off.
        recover: default of :meth:`make`'s ``recover``: when a step or reset
            finds its session gone (the server restarted, or the session
            expired), re-create it with the same settings and go on, marking
            the games in flight truncated.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        timeout: Optional[float] = 120.0,
        *,
        retry_timeout: float = 60.0,
        recover: bool = True,
    ) -> None:
        self.url = url.rstrip("/") if "://" in url or url.startswith("unix:") else "http://" + url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retry_timeout = float(retry_timeout)
        self.recover = bool(recover)
        self._http = _http(self.url, token, timeout)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy (pickle, copy.deepcopy: e.g. in Gymnasium's EnvSpec kwargs) is
        # a new client of the same server with its own connection; a copy of a
        # LocalServer does not own the process.
        return (Client, (self.url, self.token, self.timeout))

    def _request(self, method: str, path: str, body: Any = None, *, session_route: bool = False) -> Any:
        with self._lock:
            return self._http.request(method, path, body, session_route=session_route)

    def healthy(self) -> bool:
        """True when GET /v1/healthz answers 2xx."""
        try:
            self._request("GET", "/v1/healthz")
            return True
        except DgenvError:
            return False

    def ready(self) -> bool:
        """True when GET /v1/readyz answers 2xx (the server accepts sessions)."""
        try:
            self._request("GET", "/v1/readyz")
            return True
        except DgenvError:
            return False

    def make(
        self,
        players: int = 4,
        num_envs: int = 1,
        seed: Optional[int] = None,
        learner_seats: Optional[Sequence[int]] = None,
        opponent: Optional[str] = None,
        reward: str = "points",
        *,
        deals: Optional[int] = None,
        first_dealer: Optional[int] = None,
        obs_dtype: Optional[DTypeLike] = np.float32,
        packing: Optional[str] = None,
        opponents: Optional[Sequence[Optional[str]]] = None,
        recover: Optional[bool] = None,
    ) -> "BatchEnv":
        """Create a session of ``num_envs`` games and return its batch env.

        Args:
            players: seats per table, 3..6.
            num_envs: games stepped at once (N).
            seed: seed of the session's games (server default if None).
            learner_seats: seats the caller plays; None means all seats (self-play).
            opponent: bot for the other seats (``"random"``, ``"heuristic"``...);
                required when ``learner_seats`` leaves seats over.
            reward: ``"points"`` or ``"zero_sum"``.
            opponents: instead of ``opponent``, a bot per seat and None on the
                seats the caller plays, e.g. ``[None, "search", "heuristic",
                "policy:x"]`` (the None seats are the learner seats when
                ``learner_seats`` is None); ``spec.raw["opponents"]`` reports it.
            deals: deals per game (server default: as many as players).
            first_dealer: seat that deals first (server default 0).
            obs_dtype: dtype observations are returned in (default float32);
                None keeps the wire dtype (uint8), which is fastest.
            packing: ``"bits"`` has the server send obs and mask bit-packed
                (about 200 bytes an env-step instead of about 1 000 at 4
                players) and this client unpack them with numpy: the batches
                are the same. A fifth of the bytes across a network, and
                5-15% faster on one machine at N = 4096 (docs/benchmarks.md).
                None (or ``"none"``) sends them as uint8.
            recover: when a step or reset finds the session gone (server
                restarted, session expired), re-create it with these settings
                and reset it: a step then returns the new games' first batch
                with ``truncated`` all True (a reset returns it as usual).
                None takes the client's ``recover`` (True by default).

        The create carries a fresh ``request_id``: when its answer is lost it
        is sent again (for up to the client's ``retry_timeout``) and answers
        the same session, never a second one.

        Raises:
            BadRequest: a parameter is out of range (the message names it).
            LimitError: the server holds too many sessions.
        """
        game: dict[str, Any] = {"players": int(players)}
        if deals is not None:
            game["deals"] = int(deals)
        if first_dealer is not None:
            game["first_dealer"] = int(first_dealer)
        body: dict[str, Any] = {"game": game, "num_envs": int(num_envs), "reward": reward}
        if seed is not None:
            body["seed"] = int(seed)
        if learner_seats is not None:
            body["learner_seats"] = [int(s) for s in learner_seats]
        if opponent is not None:
            body["opponent"] = opponent
        if opponents is not None:  # a bot per seat, None on the seats the caller plays
            body["opponents"] = [o or None for o in opponents]
        if packing is not None:
            body["packing"] = packing
        ans = self._create(body)
        return BatchEnv(
            self,
            str(ans["session"]),
            Spec.from_wire(ans["spec"]),
            obs_dtype=obs_dtype,
            create_body=body,
            seq=ans.get("seq"),
            recover=self.recover if recover is None else bool(recover),
        )

    def _create(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """POST /v1/sessions with a fresh request_id, re-sent while the answer is lost."""
        req = dict(body, request_id=uuid.uuid4().hex)
        retry = _Retry(self.retry_timeout)
        while True:
            try:
                ans = self._request("POST", "/v1/sessions", req)
                break
            except (ServerUnavailable, Unavailable) as e:
                retry.wait_or_raise("POST /v1/sessions", e)
        if not isinstance(ans, Mapping) or "session" not in ans or "spec" not in ans:
            raise ServerUnavailable(f"POST /v1/sessions: unexpected answer {str(ans)[:200]}")
        return ans

    def close(self) -> None:
        """Close the management connection (envs keep their own)."""
        with self._lock:
            self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    url: str,
    token: Optional[str] = None,
    timeout: Optional[float] = 120.0,
    *,
    retry_timeout: float = 60.0,
    recover: bool = True,
) -> Client:
    """Connect to a running server at ``url`` (e.g. ``"http://127.0.0.1:8080"``).

    Args:
        url: base URL of the server (``/v1`` routes are added), or
            ``"unix:/path/to.sock"`` for a server listening on a Unix domain
            socket (``dgserver --addr unix:/path/to.sock``).
        token: bearer token, if the server requires one.
        timeout: socket timeout in seconds for each request.
        retry_timeout: seconds a request whose connection failed is retried
            (see :class:`Client`); 0: never.
        recover: whether envs re-create a session the server lost (see :class:`Client`).

    Raises:
        ServerUnavailable: nothing answers at ``url``.
    """
    c = Client(url, token=token, timeout=timeout, retry_timeout=retry_timeout, recover=recover)
    c._request("GET", "/v1/healthz")
    return c


ActionsLike = Union[np.ndarray, Sequence[int], ArrayLike]


class _Retry:
    """The backoff and deadline of one request's retries."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline: Optional[float] = None
        self.attempt = 0

    def wait_or_raise(self, what: str, err: Exception) -> None:
        """Sleep before the next attempt, or raise once the retry time is spent."""
        if self.timeout <= 0:
            raise err
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.timeout
        if now >= self.deadline:
            raise ServerUnavailable(f"{what}: still failing after retrying for {self.timeout:g} s: {err}") from err
        delay = min(0.02 * (2**self.attempt), 1.0)
        ra = getattr(err, "retry_after", None)
        if ra:
            delay = max(delay, min(float(ra), 5.0))
        self.attempt += 1
        if self.attempt == 1 or self.attempt % 10 == 0:
            log.info("%s: %s; retrying", what, err)
        time.sleep(min(delay, max(0.0, self.deadline - now)))


class BatchEnv:
    """N games of one session, stepped together.

    Made by :meth:`Client.make`. ``reset`` and ``step`` return a :class:`Batch`;
    the most recent one is kept as :attr:`last`. A step the server refuses
    (e.g. :class:`~dgenv.errors.IllegalActionError`) changes nothing, so the
    env stays usable. Not safe to share between threads (the server would
    answer :class:`~dgenv.errors.BusyError`).

    Every reset and step carries :attr:`seq`, the number of the last batch
    the env holds; a request whose answer was lost (connection cut, timeout,
    server draining) is sent again with the same seq for up to the client's
    ``retry_timeout`` and gets the batch the server already produced: no env
    is stepped twice. With ``recover`` (the default), a reset or step that
    finds the session gone re-creates it with the same settings (see
    :meth:`Client.make`).

    Attributes:
        seq: batches the session has produced (the seq of :attr:`last`); 0 before the first.
        recoveries: times the session was re-created after the server lost it.
    """

    def __init__(
        self,
        client: Client,
        session: str,
        spec: Spec,
        *,
        obs_dtype: Optional[DTypeLike] = np.float32,
        create_body: Optional[Mapping[str, Any]] = None,
        seq: Optional[int] = None,
        recover: bool = False,
    ):
        self.client = client
        self.session = session
        self.spec = spec
        self.obs_dtype: Optional[np.dtype] = None if obs_dtype is None else np.dtype(obs_dtype)
        self._http = _http(client.url, client.token, client.timeout)
        self._path = f"/v1/sessions/{session}"
        self._closed = False
        self._by_name = {s.name: s for s in spec.obs.sections}
        self._layout: Optional[_wire.BatchLayout] = None
        self.last: Optional[Batch] = None
        # None: the server does not number batches, so a retry is not safe.
        self.seq: Optional[int] = None if seq is None else int(seq)
        self.recoveries = 0
        self._create_body = dict(create_body) if create_body is not None else None
        self._recover = bool(recover) and create_body is not None
        self._inflight: Optional[tuple[str, dict[str, Any]]] = None  # (route, body) of a sent reset/step
        self._no_trunc = np.zeros(spec.num_envs, dtype=np.bool_)
        self._no_trunc.setflags(write=False)
        self._all_trunc = np.ones(spec.num_envs, dtype=np.bool_)
        self._all_trunc.setflags(write=False)

    # -- sizes ---------------------------------------------------------------
    @property
    def num_envs(self) -> int:
        """N, the number of games."""
        return self.spec.num_envs

    @property
    def players(self) -> int:
        """P, seats per table."""
        return self.spec.players

    @property
    def num_actions(self) -> int:
        """Size of the action space (90)."""
        return self.spec.num_actions

    @property
    def obs_size(self) -> int:
        """D, elements of one observation."""
        return self.spec.obs.size

    def __repr__(self) -> str:
        return (
            f"BatchEnv(session={self.session!r}, num_envs={self.num_envs}, players={self.players}, "
            f"learner_seats={list(self.spec.learner_seats)}, opponent={self.spec.opponent!r})"
        )

    # -- protocol ------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None, *, raw: bool = False) -> Any:
        if self._closed:
            raise DgenvError("env is closed")
        if self._inflight is not None:
            raise DgenvError("a step_async is in flight: call step_wait first")
        # Only idempotent requests come here (GET): a lost answer is asked for again.
        retry = _Retry(self.client.retry_timeout if method == "GET" else 0.0)
        while True:
            try:
                return self._http.request(method, self._path + path, body, session_route=True, raw=raw)
            except (ServerUnavailable, Unavailable) as e:
                retry.wait_or_raise(f"{method} {self._path}{path}", e)

    def _tensors(self, ans: Any) -> Mapping[str, Any]:
        """The answer's tensors as arrays (and its seq as an int): a raw msgpack buffer through the learned layout."""
        if isinstance(ans, np.ndarray):
            t = self._layout.decode(ans) if self._layout is not None else None
            if t is None:  # first answer of the session (or an unexpected one): learn its layout
                try:
                    self._layout = _wire.BatchLayout.learn(ans)
                    t = self._layout.decode(ans)
                except ValueError:
                    t = None
                if t is None:
                    ans = _wire.unpack_views(ans.data)
            if t is not None:
                return t
        out: dict[str, Any] = {k: _wire.decode_tensor(v) for k, v in ans.items() if _wire.is_tensor(v)}
        if isinstance(ans.get("seq"), int):
            out["seq"] = ans["seq"]
        return out

    def _batch(self, ans: Any, truncated: Optional[np.ndarray] = None) -> Batch:
        t = self._tensors(ans)
        seq = t.get("seq")
        self.seq = seq if isinstance(seq, int) else None
        pk = self.spec.obs.packed
        if pk is not None:
            obs, mask = pk.unpack(t["obs_bits"], t["obs_extra"], t["mask_bits"], self.spec.obs.size)
        else:
            obs, mask = t["obs"], t["mask"]
            mask = mask.view(np.bool_) if mask.dtype.itemsize == 1 else mask != 0
        if self.obs_dtype is not None and obs.dtype != self.obs_dtype:
            obs = obs.astype(self.obs_dtype)
        done = t["done"]
        done = done.view(np.bool_) if done.dtype.itemsize == 1 else done != 0
        b = Batch(
            obs=obs,
            mask=mask,
            player=t["player"],
            rewards=t["rewards"],
            done=done,
            scores=t["scores"],
            episode=t["episode"],
            truncated=self._no_trunc if truncated is None else truncated,
        )
        self.last = b
        return b

    def reset(self, seed: Optional[int] = None) -> Batch:
        """Start a new game in every env.

        Args:
            seed: re-seed every env's streams from (seed, env index) and zero the
                episode counters; None continues the current streams.
        """
        self.reset_async(seed)
        return self.step_wait()

    def step(self, actions: ActionsLike) -> Batch:
        """Play ``actions[i]`` (a card id 0..89) for the seat to act in env i.

        With learner seats and an opponent, the server then plays the opponents
        until a learner seat is to act; ``rewards`` sums over those plays. An env
        whose game ends reports ``done`` and ``scores`` and already holds the
        next game's first observation (same-step auto-reset).

        Raises:
            IllegalActionError: an action is not legal (``.env``, ``.action``,
                ``.legal`` say which); nothing changed.
            ValueError: ``actions`` does not have shape ``[N]``.
        """
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: ActionsLike) -> None:
        """Send a step and return at once; :meth:`step_wait` reads its answer.

        Lets the caller work (e.g. on another env's batch) while the server steps.
        """
        if self._closed:
            raise DgenvError("env is closed")
        if self._inflight is not None:
            raise DgenvError("a step_async is already in flight: call step_wait first")
        a = self._actions(actions)
        self._send("/step", {"actions": _wire.encode_tensor(a)})

    def reset_async(self, seed: Optional[int] = None) -> None:
        """Send a reset and return at once; :meth:`step_wait` reads its answer."""
        if self._closed:
            raise DgenvError("env is closed")
        if self._inflight is not None:
            raise DgenvError("a step_async is already in flight: call step_wait first")
        body: dict[str, Any] = {} if seed is None else {"seed": int(seed)}
        self._send("/reset", body)

    def _send(self, route: str, body: dict[str, Any]) -> None:
        if self.seq is not None:
            body["seq"] = self.seq
        self._inflight = (route, body)
        try:
            self._http.send("POST", self._path + route, body)
        except ServerUnavailable:
            pass  # nothing is pending: step_wait sends it again

    def step_wait(self) -> Batch:
        """The answer to the last :meth:`step_async` or :meth:`reset_async` (raises its error, if any).

        A lost answer is asked for again with the same request (same seq);
        see the class docstring.
        """
        if self._inflight is None:
            raise DgenvError("no step_async or reset_async in flight")
        route, body = self._inflight
        retry = _Retry(self.client.retry_timeout if self.seq is not None else 0.0)
        recovered = 0
        try:
            while True:
                try:
                    if self._http._pending is None:  # the last send or answer was lost
                        self._http.send("POST", self._path + route, body)
                    return self._batch(self._http.receive(session_route=True, raw=True))
                except (ServerUnavailable, Unavailable) as e:
                    retry.wait_or_raise(f"POST {self._path}{route}", e)
                except BusyError as e:
                    # Busy after a lost answer: the lost request may still be
                    # running on the server; the same seq is safe to repeat.
                    if retry.attempt == 0:
                        raise
                    retry.wait_or_raise(f"POST {self._path}{route}", e)
                except SessionNotFound:
                    if not self._recover or recovered >= 3:
                        raise
                    recovered += 1
                    return self._recovered(route, body, retry)
        finally:
            self._inflight = None

    def _recovered(self, route: str, body: Mapping[str, Any], retry: "_Retry") -> Batch:
        """The session is gone: make it again with the same settings and reset it.

        A step's actions were for games that no longer exist: they are
        dropped, and the new games' first batch comes back with every env
        marked truncated. A reset is simply done on the new session.
        """
        assert self._create_body is not None
        old = self.session
        ans = self.client._create(self._create_body)
        spec = Spec.from_wire(ans["spec"])
        if (spec.num_envs, spec.players, spec.obs.shape) != (self.spec.num_envs, self.spec.players, self.spec.obs.shape):
            raise DgenvError(f"session {old} was lost and the server made its replacement with another shape: {spec}")
        self.session = str(ans["session"])
        self._path = f"/v1/sessions/{self.session}"
        self.spec = spec
        self.seq = ans.get("seq")
        self._layout = None
        self.recoveries += 1
        log.warning("session %s was lost (server restarted or session expired); re-created as %s", old, self.session)
        reset: dict[str, Any] = {}
        if route == "/reset" and "seed" in body:
            reset["seed"] = body["seed"]
        if self.seq is not None:
            reset["seq"] = self.seq
        while True:
            try:
                self._http.send("POST", self._path + "/reset", reset)
                ans = self._http.receive(session_route=True, raw=True)
                break
            except (ServerUnavailable, Unavailable) as e:
                retry.wait_or_raise(f"POST {self._path}/reset", e)
        return self._batch(ans, truncated=self._all_trunc if route == "/step" else None)

    def _actions(self, actions: ActionsLike) -> np.ndarray:
        a = np.asarray(actions)
        if a.shape != (self.num_envs,):
            if a.size == self.num_envs:
                a = a.reshape(self.num_envs)
            else:
                raise ValueError(f"actions shape {a.shape}, want ({self.num_envs},)")
        if a.dtype.kind not in "iu":
            if a.dtype.kind == "f" and np.all(np.mod(a, 1) == 0):
                a = a.astype(np.int64)
            else:
                raise ValueError(f"actions dtype {a.dtype}: want integers")
        # int16 halves the request; anything out of its range goes as is (the
        # server refuses it) rather than wrapping into a legal-looking card.
        if a.dtype != np.int16:
            lo, hi = int(a.min()), int(a.max())
            if -32768 <= lo and hi <= 32767:
                a = a.astype(np.int16)
            elif a.dtype.kind == "u":
                a = a.astype(np.int64) if hi <= np.iinfo(np.int64).max else np.full(a.shape, -1, np.int64)
        return a

    def section(self, obs: np.ndarray, name: str) -> np.ndarray:
        """View of section ``name`` of observations ``obs`` (``[..., D]``).

        Returns ``obs[..., offset:offset+size]`` reshaped to ``[..., *shape]``
        (a view, no copy). ``env.section(batch.obs, "current_trick")`` is ``[N, P, 90]``.
        """
        s = self._by_name.get(name)
        if s is None:
            raise KeyError(f"no observation section {name!r}; have {list(self._by_name)}")
        o = np.asarray(obs)
        return o[..., s.offset : s.offset + s.size].reshape(o.shape[:-1] + s.shape)

    def record(self, k: int) -> dict[str, Any]:
        """Game records of env ``k``: ``{"finished": record or None, "current": record}``.

        A record is ``{"game", "deals": [{"dealer", "hands", "plays", "scores"}], "totals"}``
        (API.md, "Game records").
        """
        ans = self._call("GET", f"/envs/{int(k)}/record")
        return dict(ans)

    def close(self) -> None:
        """End the session on the server (DELETE) and close the connection. Idempotent."""
        if self._closed:
            return
        if self._http._pending is not None:  # a step_async's answer first, or the DELETE would get it
            try:
                self._http.receive(session_route=True, raw=True)
            except DgenvError:
                pass
        self._inflight = None
        try:
            self._http.request("DELETE", self._path, None, session_route=True)
        except DgenvError:
            pass  # already gone or server stopped: nothing left to free
        finally:
            self._closed = True
            self._http.close()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def __enter__(self) -> "BatchEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._http.close()
        except Exception:
            pass
