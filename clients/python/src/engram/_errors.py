"""Errors as exceptions: each carries the API's `code`, `message` and `fields`, so an
agent can branch on what went wrong instead of parsing text."""

from __future__ import annotations

from typing import Any


class EngramError(Exception):
    """Anything the client raises."""


class APIConnectionError(EngramError):
    """The server could not be reached, or the connection dropped, after every retry."""


class APIError(EngramError):
    """The server answered with an error: `status`, `code`, `message`, `fields`, `body`."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        fields: dict[str, list[str]] | None = None,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields or {}
        self.body = body or {}
        self.headers = headers or {}


class InvalidRequest(APIError):
    """400: `fields` names each bad field."""


class AuthenticationError(APIError):
    """401: no key, or a bad or revoked one."""


class PermissionDenied(APIError):
    """403."""


class NotFound(APIError):
    """404: no such object for this key's tenant (another tenant's id looks the same)."""


class Unresolved(NotFound):
    """404 `unresolved`: a reference matched no item; `candidates` lists the near misses."""

    @property
    def candidates(self) -> list[dict[str, Any]]:
        error = self.body.get("error", {})
        return list(error.get("candidates", []))


class Conflict(APIError):
    """409."""


class PreconditionFailed(APIError):
    """412 `precondition_failed`: the `if_match` tag no longer holds, because the
    session's state changed since it was read; nothing was written. `state_etag` is the
    current tag: read the session again, decide again, and retry with it."""

    @property
    def state_etag(self) -> str | None:
        value = self.body.get("error", {}).get("state_etag")
        return None if value is None else str(value)


class SessionExpired(APIError):
    """410: the session takes no more writes; start or resume another."""


class PayloadTooLarge(APIError):
    """413."""


class IdempotencyKeyReused(APIError):
    """422: the Idempotency-Key was already used with another body."""


class RateLimited(APIError):
    """429 that is not a budget: `retry_after` seconds, if the server said."""

    @property
    def retry_after(self) -> float | None:
        return _retry_after(self.headers)


class BudgetExceeded(RateLimited):
    """429 `budget_exceeded`: the session's budget is spent; `budget` is its state."""

    @property
    def budget(self) -> dict[str, Any]:
        return dict(self.body.get("error", {}).get("budget", {}))


class ServiceUnavailable(APIError):
    """503: a dependency of the server is down."""


class ServerError(APIError):
    """Any other 5xx."""


def _retry_after(headers: dict[str, str]) -> float | None:
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequest,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    410: SessionExpired,
    412: PreconditionFailed,
    413: PayloadTooLarge,
    422: IdempotencyKeyReused,
    429: RateLimited,
    503: ServiceUnavailable,
}
_BY_CODE: dict[str, type[APIError]] = {
    "unresolved": Unresolved,
    "budget_exceeded": BudgetExceeded,
}


def error_from_response(status: int, body: Any, headers: dict[str, str]) -> APIError:
    """The exception for an error answer; a body not in the API's shape still maps by status."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {}
    code = str(error.get("code") or f"http_{status}")
    message = str(error.get("message") or "The server answered with an error.")
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else APIError
    return cls(
        status,
        code,
        message,
        fields=error.get("fields") or {},
        body=body if isinstance(body, dict) else {},
        headers={k.lower(): v for k, v in headers.items()},
    )
