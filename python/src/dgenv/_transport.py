"""The HTTP exchange with the server: one keep-alive connection, msgpack bodies, retries.

:class:`HTTP` sends a request and reads its answer over one HTTP/1.1
connection (TCP, TLS or a Unix domain socket). Two framings share it: the
default one (:class:`FastHTTP`) writes each request as prebuilt bytes and
reads the answer's head with a few ``readline`` calls; ``DGENV_HTTP=stdlib``
uses http.client's (:class:`StdlibHTTP`). The framings only write and read
bytes: connecting, the one resend after a stale keep-alive connection, the
mapping of failures to :class:`~dgenv.errors.ServerUnavailable` and of error
statuses to :class:`~dgenv.errors.ServerError` are defined once, here, as is
:class:`Retry`, the backoff of a request re-sent while its answer is lost.
"""

from __future__ import annotations

import http.client
import logging
import os
import socket
import ssl
import time
from typing import Any, Optional
from urllib.parse import urlsplit

import numpy as np

from . import _wire
from .errors import ServerUnavailable, error_from_response

log = logging.getLogger("dgenv")

__all__ = ["HTTP", "FastHTTP", "StdlibHTTP", "Retry", "http_transport", "unix_path"]

# Errors that mean the keep-alive connection went away before our request was
# read (the server closed an idle connection): safe to reconnect and resend once.
_STALE = (
    http.client.RemoteDisconnected,
    http.client.CannotSendRequest,
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
)


def unix_path(url: str) -> Optional[str]:
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


class _Answer:
    """What a framing read: status, content type, Retry-After, whether the
    connection closes, and the body (bytes, or the raw buffer of ``raw``)."""

    __slots__ = ("status", "ctype", "retry_after", "will_close", "data", "buf")

    def __init__(self, status: int, ctype: str, retry_after: Optional[str], will_close: bool,
                 data: bytes = b"", buf: Optional[np.ndarray] = None) -> None:
        self.status, self.ctype, self.retry_after = status, ctype, retry_after
        self.will_close, self.data, self.buf = will_close, data, buf


def _read_into(readinto: Any, n: int) -> np.ndarray:
    """A fresh uint8 buffer of ``n`` bytes filled by ``readinto`` (the arrays decoded from it own it)."""
    buf = np.empty(n, dtype=np.uint8)
    mv = buf.data
    got = 0
    while got < n:
        k = readinto(mv[got:])
        if not k:
            raise http.client.IncompleteRead(bytes(mv[:got]), n - got)
        got += k
    return buf


class HTTP:
    """One keep-alive HTTP/1.1 connection speaking msgpack to one server.

    Subclasses frame the bytes: :meth:`_write` sends one request on the
    connection, :meth:`_read` reads one answer. Everything else is here.
    """

    def __init__(self, url: str, token: Optional[str], timeout: Optional[float], ca_file: Optional[str] = None) -> None:
        self.socket_path: Optional[str] = unix_path(url)
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
        if ca_file is not None and self.scheme != "https":
            raise ValueError(f"url {url!r}: ca_file is for https:// URLs")
        # https: the server's certificate is verified, against ca_file (a
        # PEM file: e.g. a self-signed certificate itself) or else the
        # system's CAs (and $SSL_CERT_FILE).
        self.ssl_context: Optional[ssl.SSLContext] = None
        if self.scheme == "https":
            self.ssl_context = ssl.create_default_context(cafile=ca_file)
        self.timeout = timeout
        # HTTP/1.1 keeps the connection alive and the server answers in the
        # request's format, so a request needs few headers (each costs time).
        self.headers = [("Content-Type", _wire.MSGPACK)]
        if token:
            self.headers.append(("Authorization", f"Bearer {token}"))
        self._conn: Optional[http.client.HTTPConnection] = None
        self._pending: Optional[tuple[str, str, Optional[bytes]]] = None

    # -- framing (subclasses) --------------------------------------------------
    def _write(self, conn: http.client.HTTPConnection, method: str, path: str, payload: Optional[bytes]) -> None:
        raise NotImplementedError

    def _read(self, method: str, raw: bool) -> _Answer:
        raise NotImplementedError

    # -- the connection ----------------------------------------------------------
    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.socket_path is not None:
                c: http.client.HTTPConnection = _UnixHTTPConnection(self.socket_path, timeout=self.timeout)
                c.connect()
            else:
                if self.ssl_context is not None:
                    c = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self.ssl_context)
                else:
                    c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
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

    def _unavailable(self, method: str, path: str, e: BaseException) -> ServerUnavailable:
        return ServerUnavailable(f"{method} {self.where}{self.prefix}{path}: {e}")

    # -- one exchange --------------------------------------------------------------
    def send(self, method: str, path: str, body: Any = None) -> None:
        """Send one request without reading the answer (see :meth:`receive`)."""
        payload = None if body is None else _wire.pack(body)
        self._pending = (method, path, payload)
        self._transmit(retry=True)

    def _transmit(self, retry: bool) -> None:
        """Write the pending request; with ``retry``, once more on a fresh
        connection when the kept-alive one turns out to be closed."""
        assert self._pending is not None
        method, path, payload = self._pending
        for attempt in (0, 1) if retry else (1,):
            try:
                self._write(self._connect(), method, path, payload)
                return
            except _STALE as e:
                self.close()
                if attempt:
                    self._pending = None
                    raise ServerUnavailable(f"{method} {path}: connection lost: {e}") from e
            except (OSError, http.client.HTTPException) as e:
                self.close()
                self._pending = None
                raise self._unavailable(method, path, e) from e

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
                ans = self._read(method, raw)
            except _STALE:
                # The server closed the idle keep-alive connection before it read
                # the request (nothing answered): reconnect and send it once more.
                self.close()
                self._transmit(retry=False)
                ans = self._read(method, raw)
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.close()
            raise self._unavailable(method, path, e) from e
        finally:
            self._pending = None
        if ans.will_close:
            self.close()
        if ans.buf is not None:
            return ans.buf
        return self._finish(ans.status, ans.ctype, ans.retry_after, ans.data, session_route)

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


class StdlibHTTP(HTTP):
    """The exchange framed by http.client (``DGENV_HTTP=stdlib``)."""

    def _write(self, conn: http.client.HTTPConnection, method: str, path: str, payload: Optional[bytes]) -> None:
        conn.putrequest(method, self.prefix + path, skip_accept_encoding=True)
        for k, v in self.headers:
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(payload)) if payload is not None else "0")
        conn.endheaders(payload)

    def _read(self, method: str, raw: bool) -> _Answer:
        assert self._conn is not None
        resp = self._conn.getresponse()
        ctype = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
        n = resp.length
        ans = _Answer(resp.status, ctype, resp.getheader("Retry-After"), False)
        if raw and resp.status < 400 and ctype == _wire.MSGPACK and n:
            ans.buf = _read_into(resp.readinto, n)
        else:
            ans.data = resp.read()
        ans.will_close = bool(resp.will_close)
        return ans


class FastHTTP(HTTP):
    """The exchange framed by hand on the HTTPConnection's socket (the default).

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

    def _write(self, conn: http.client.HTTPConnection, method: str, path: str, payload: Optional[bytes]) -> None:
        body = payload or b""
        conn.sock.sendall(b"".join((
            f"{method} {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1"),
            self._head,
            f"Content-Length: {len(body)}\r\n\r\n".encode("latin-1"),
            body,
        )))

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

    def _read(self, method: str, raw: bool) -> _Answer:
        status, headers, will_close = self._read_head()
        ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower().decode("latin-1")
        ra = headers.get(b"retry-after")
        ans = _Answer(status, ctype, ra.decode("latin-1") if ra else None, will_close)
        length = headers.get(b"content-length")
        if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
            pass
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
            ans.data = b"".join(chunks)
        elif length is not None:
            n = int(length)
            if raw and status < 400 and ctype == _wire.MSGPACK and n:
                ans.buf = _read_into(self._rfile.readinto, n)
            else:
                ans.data = self._read_exact(n)
        else:  # no length, not chunked: the body runs to the end of the connection
            ans.data = self._rfile.read()
            ans.will_close = True
        return ans


def http_transport(url: str, token: Optional[str], timeout: Optional[float], ca_file: Optional[str] = None) -> HTTP:
    """The connection for ``url``: hand-framed by default; ``DGENV_HTTP=stdlib`` uses http.client's framing."""
    if os.environ.get("DGENV_HTTP", "").lower() == "stdlib":
        return StdlibHTTP(url, token, timeout, ca_file)
    return FastHTTP(url, token, timeout, ca_file)


class Retry:
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
