"""The one error vocabulary. Services raise `ApplicationError` subclasses; the DRF
exception handler in `api/exceptions.py` renders every error in the documented shape:
``{"error": {"code", "message", "fields"}}``. Codes are part of the API contract."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID = "invalid"
    MALFORMED_JSON = "malformed_json"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    NOT_AUTHENTICATED = "not_authenticated"
    AUTHENTICATION_FAILED = "authentication_failed"
    PERMISSION_DENIED = "permission_denied"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    CONFLICT = "conflict"
    PRECONDITION_FAILED = "precondition_failed"
    IDEMPOTENCY_IN_FLIGHT = "idempotency_in_flight"
    IDEMPOTENCY_KEY_REUSED = "idempotency_key_reused"
    SESSION_EXPIRED = "session_expired"
    REQUEST_TOO_LARGE = "request_too_large"
    BUDGET_EXCEEDED = "budget_exceeded"
    RATE_LIMITED = "rate_limited"
    UNRESOLVED = "unresolved"
    AMBIGUOUS = "ambiguous"
    ITEM_NOT_FOUND = "item_not_found"
    NOT_IN_CART = "not_in_cart"
    CART_FULL = "cart_full"
    CART_LINK_INVALID = "cart_link_invalid"
    CART_LINK_EXPIRED = "cart_link_expired"
    MEMORY_REJECTED = "memory_rejected"
    DEPENDENCY_DOWN = "dependency_unavailable"
    SERVER_ERROR = "server_error"


class ApplicationError(Exception):
    """An error a client can act on. `status` is the HTTP status it maps to."""

    status: int = 400
    default_code: ErrorCode = ErrorCode.INVALID
    default_message: str = "The request is invalid."

    def __init__(
        self,
        message: str | None = None,
        *,
        code: ErrorCode | str | None = None,
        fields: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.code = str(code or self.default_code)
        self.fields = fields or {}
        self.extra = extra or {}
        self.headers = headers or {}
        super().__init__(self.message)


class InvalidInput(ApplicationError):
    status = 400


class NotFound(ApplicationError):
    status = 404
    default_code = ErrorCode.NOT_FOUND
    default_message = "Not found."


class Conflict(ApplicationError):
    status = 409
    default_code = ErrorCode.CONFLICT
    default_message = "The request conflicts with the current state."


class PreconditionFailed(ApplicationError):
    """An `If-Match` that no longer holds: the resource changed since the client read it."""

    status = 412
    default_code = ErrorCode.PRECONDITION_FAILED
    default_message = "The resource changed since it was read."


class SessionExpired(ApplicationError):
    status = 410
    default_code = ErrorCode.SESSION_EXPIRED
    default_message = "The session has expired."


class CartLinkInvalid(ApplicationError):
    """A cart link whose signature does not verify (tampered, or signed elsewhere)."""

    status = 403
    default_code = ErrorCode.CART_LINK_INVALID
    default_message = "This cart link is not valid."


class Forbidden(ApplicationError):
    """The caller may see the object but not do this to it (e.g. change a memory that
    another user shared with them)."""

    status = 403
    default_code = ErrorCode.PERMISSION_DENIED
    default_message = "Permission denied."


class CartLinkExpired(ApplicationError):
    status = 410
    default_code = ErrorCode.CART_LINK_EXPIRED
    default_message = "This cart link has expired."


class IdempotencyKeyReused(ApplicationError):
    status = 422
    default_code = ErrorCode.IDEMPOTENCY_KEY_REUSED
    default_message = "This Idempotency-Key was used with a different request body."


class IdempotencyInFlight(ApplicationError):
    status = 409
    default_code = ErrorCode.IDEMPOTENCY_IN_FLIGHT
    default_message = "A request with this Idempotency-Key is still being processed."


class BudgetExceeded(ApplicationError):
    status = 429
    default_code = ErrorCode.BUDGET_EXCEEDED
    default_message = "The session's budget is spent."


class DependencyUnavailable(ApplicationError):
    status = 503
    default_code = ErrorCode.DEPENDENCY_DOWN
    default_message = "A service Engram depends on is unavailable."


class Rejected(ApplicationError):
    """Well-formed but refused by a policy (e.g. a memory below the importance floor):
    nothing was stored, and `fields` says which value fell short and why."""

    status = 422
    default_code = ErrorCode.MEMORY_REJECTED
    default_message = "Refused by policy; nothing was stored."
