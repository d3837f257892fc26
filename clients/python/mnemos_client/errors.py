"""Exceptions raised by the mnemos client.

Every failure is a :class:`MnemosError` carrying what the server said: the HTTP ``status``,
the machine-readable ``code`` from ``{"error": {"code", "message"}}`` and the ``message``.
Callers branch on the subclass (or on ``code``) instead of parsing text.
"""

from __future__ import annotations

import json
from typing import Dict, Mapping, Optional, Tuple, Type

__all__ = [
    "MnemosError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "PayloadTooLarge",
    "InvalidInput",
    "RateLimited",
    "Unavailable",
    "Timeout",
    "ServerError",
    "ConnectionError",
    "UnexpectedResponse",
    "error_from_response",
]


class MnemosError(Exception):
    """Base class: the request failed; ``status``, ``code`` and ``message`` say how.

    ``status`` is 0 when no HTTP answer arrived (see :class:`ConnectionError`).
    ``retry_after`` holds the ``Retry-After`` header in seconds when the server sent one.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        body: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(status, code, message)
        self.status = status
        self.code = code
        self.message = message
        self.body = body
        self.retry_after = retry_after

    def __str__(self) -> str:
        if self.status:
            return f"{self.status} {self.code}: {self.message}"
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"message={self.message!r})"
        )


class BadRequest(MnemosError):
    """400: the body is not JSON (``malformed_json``) or has the wrong shape
    (``invalid_request``: a missing, unknown or mistyped field; the message names it)."""


class Unauthorized(MnemosError):
    """401: the API key is missing or not accepted (``unauthorized``)."""


class Forbidden(MnemosError):
    """403: the key is valid but may not do this (``forbidden``): a tenant's key on the key
    routes, or the admin key on a tenant's data."""


class NotFound(MnemosError):
    """404: unknown route, user, memory, job or view, or another user's id."""


class MethodNotAllowed(MnemosError):
    """405: the route exists, but not with this method."""


class Conflict(MnemosError):
    """409: the write collided with another one (retrying may succeed), or an idempotency
    key (``Idempotency-Key`` or a turn's ``key``) was sent again with another text. The
    latter is a caller's mistake that no retry fixes: nothing was written, and a new request
    needs a new key."""


class PayloadTooLarge(MnemosError):
    """413: the body is larger than the server's ``--body-limit``."""


class InvalidInput(MnemosError):
    """422: well-formed but against a rule (empty text, unknown kind or state, bad time)."""


class RateLimited(MnemosError):
    """429: too many requests; wait ``retry_after`` seconds when given."""


class Unavailable(MnemosError):
    """503: a dependency (embedding model, LLM endpoint, database) is down."""


class Timeout(MnemosError):
    """504: the request took longer than the server's ``--request-timeout``."""


class ServerError(MnemosError):
    """500 or any other unexpected status: the service failed."""


class ConnectionError(MnemosError):  # noqa: A001 - the name callers expect from this package
    """No HTTP answer: the server could not be reached, or the client-side timeout passed.

    ``status`` is 0; ``code`` is ``connection_error`` or ``client_timeout``; the httpx
    exception is kept as ``__cause__``.
    """


class UnexpectedResponse(MnemosError):
    """The server answered, but not with the JSON this client understands (a required field
    is missing or has the wrong type). Usually a client/server version mismatch."""


_BY_CODE: Dict[str, Type[MnemosError]] = {
    "malformed_json": BadRequest,
    "invalid_request": BadRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "conflict": Conflict,
    "payload_too_large": PayloadTooLarge,
    "invalid_input": InvalidInput,
    "rate_limited": RateLimited,
    "unavailable": Unavailable,
    "timeout": Timeout,
    "internal": ServerError,
}

_BY_STATUS: Dict[int, Type[MnemosError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    422: InvalidInput,
    429: RateLimited,
    503: Unavailable,
    504: Timeout,
}


def _error_class(status: int, code: Optional[str]) -> Type[MnemosError]:
    """The server's code decides; the status is the fallback for codes this client predates
    and for answers that are not in the error shape (a proxy's HTML page, say)."""
    if code is not None and code in _BY_CODE:
        return _BY_CODE[code]
    return _BY_STATUS.get(status, ServerError)


def _error_fields(body: bytes) -> Tuple[Optional[str], Optional[str]]:
    """``(code, message)`` from ``{"error": {"code", "message"}}``, or ``(None, None)``."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    code = error.get("code")
    message = error.get("message")
    return (
        code if isinstance(code, str) else None,
        message if isinstance(message, str) else None,
    )


def _retry_after(headers: Mapping[str, str]) -> Optional[float]:
    """``Retry-After`` in seconds; HTTP dates are ignored (the server sends seconds)."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> MnemosError:
    """The exception for an error answer. A body that is not the server's error shape still
    gives an exception with the status, code ``http_<status>`` and the body text."""
    code, message = _error_fields(body)
    text = body.decode("utf-8", errors="replace")
    cls = _error_class(status, code)
    return cls(
        status,
        code if code is not None else f"http_{status}",
        message if message is not None else (text.strip() or f"HTTP {status}"),
        body=text,
        retry_after=_retry_after(headers),
    )
