"""Exceptions raised by the client.

Every error the server answers (``{"error": {"code", "message", ...details}}``)
becomes a :class:`ServerError` subclass chosen by its code, carrying the HTTP
status, the code, the message and every detail field the server sent.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

__all__ = [
    "DgenvError",
    "ServerError",
    "BadRequest",
    "Unauthorized",
    "NotFound",
    "SessionNotFound",
    "BusyError",
    "TooLarge",
    "IllegalActionError",
    "LimitError",
    "Unavailable",
    "InternalError",
    "ServerUnavailable",
    "ServerStartError",
    "error_from_response",
]


class DgenvError(Exception):
    """Base class of every exception this package raises on purpose."""


class ServerError(DgenvError):
    """The server refused a request.

    Attributes:
        status: HTTP status code.
        code: the server's error code (``"bad_request"``, ``"busy"``...).
        message: the server's human-readable message.
        details: every other field of the server's error object.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        code: str = "",
        details: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(f"{code or 'error'} ({status}): {message}" if status else message)
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class BadRequest(ServerError):
    """400: malformed request, unknown field, wrong length or value out of range."""


class Unauthorized(ServerError):
    """401: missing or wrong token."""


class Forbidden(ServerError):
    """403 ``forbidden``: the request's Host or Origin is not the server's (its
    DNS-rebinding and cross-site guard): connect by a loopback name, the
    listening address or one of the server's ``cross_site.allowed_hosts``."""


class NotFound(ServerError):
    """404: no such route or resource."""


class SessionNotFound(NotFound):
    """404 on a session route: the session does not exist (closed, expired, never made)."""


class BusyError(ServerError):
    """409: another request on this session is in flight. Nothing changed; retry."""


class StaleSeqError(ServerError):
    """409 ``stale_seq``: a step or reset carried a ``seq`` that is neither the
    session's current one nor a retry of its last request; nothing changed.

    Attributes:
        seq: the session's current seq (batches it has produced).
    """

    def __init__(self, message: str, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.seq: Optional[int] = _int_or_none(self.details.get("seq"))


class ConflictError(ServerError):
    """409 ``conflict``: a create repeated a live session's ``request_id`` with other settings."""


class MethodNotAllowed(ServerError):
    """405: the route exists, the method does not (``Allow`` lists those it has)."""


class TooLarge(ServerError):
    """413: the request body is larger than the server accepts."""


class UnsupportedMediaType(ServerError):
    """415 ``unsupported_media_type``: a request body without an explicit JSON or
    msgpack Content-Type (this client always sends one)."""


class IllegalActionError(ServerError):
    """422: an action was illegal; the whole step was refused and no env changed.

    Attributes:
        env: index of the (first) env whose action was illegal.
        action: the action sent for it.
        legal: the legal actions of that env.
    """

    def __init__(self, message: str, **kw: Any) -> None:
        super().__init__(message, **kw)
        d = self.details
        self.env: Optional[int] = _int_or_none(d.get("env"))
        self.action: Optional[int] = _int_or_none(d.get("action"))
        legal: Sequence[int] = d.get("legal") or ()
        self.legal: list[int] = [int(x) for x in legal]


class LimitError(ServerError):
    """429: a server limit was hit (sessions, rate...).

    Attributes:
        retry_after: seconds the server asked to wait (``Retry-After``), if given.
    """

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class Unavailable(ServerError):
    """503: the server is shutting down or cannot take the request now.

    Attributes:
        retry_after: seconds the server asked to wait, if given.
    """

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class InternalError(ServerError):
    """500: a server bug the server caught. A panic while stepping or
    resetting a session deletes that session: its next request answers 404
    (and a :class:`~dgenv.BatchEnv` with ``recover`` re-creates it then)."""


class ServerUnavailable(DgenvError):
    """The server could not be reached, or answered something that is not the API."""


class ServerStartError(DgenvError):
    """:func:`dgenv.serve` could not build, find or start the server."""


_BY_CODE: dict[str, type[ServerError]] = {
    "bad_request": BadRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "busy": BusyError,
    "stale_seq": StaleSeqError,
    "conflict": ConflictError,
    "method_not_allowed": MethodNotAllowed,
    "too_large": TooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "illegal_action": IllegalActionError,
    "limit": LimitError,
    "unavailable": Unavailable,
    "internal": InternalError,
}

_BY_STATUS: dict[int, type[ServerError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: BusyError,
    413: TooLarge,
    415: UnsupportedMediaType,
    422: IllegalActionError,
    429: LimitError,
    500: InternalError,
    503: Unavailable,
}


def _int_or_none(v: Any) -> Optional[int]:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def error_from_response(
    status: int,
    body: Any,
    *,
    retry_after: Optional[str] = None,
    session_route: bool = False,
) -> ServerError:
    """Build the exception for an error answer.

    Args:
        status: HTTP status.
        body: the decoded body (a dict with an ``"error"`` object, or anything else).
        retry_after: the ``Retry-After`` header, if any.
        session_route: the request named a session, so 404 means :class:`SessionNotFound`.
    """
    err: Mapping[str, Any] = {}
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        err = body["error"]
    code = str(err.get("code", "")) if err else ""
    message = str(err.get("message", "")) if err else (str(body)[:500] if body else "")
    details = {k: v for k, v in err.items() if k not in ("code", "message")}
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or ServerError
    if cls is NotFound and session_route:
        cls = SessionNotFound
    kw: dict[str, Any] = {"status": status, "code": code, "details": details}
    if cls is LimitError or cls is Unavailable:
        ra: Optional[float] = None
        for v in (retry_after, details.get("retry_after")):
            if v is not None:
                try:
                    ra = float(v)
                    break
                except (TypeError, ValueError):
                    pass
        kw["retry_after"] = ra
    return cls(message or f"HTTP {status}", **kw)
