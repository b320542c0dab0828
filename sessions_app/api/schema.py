"""drf-spectacular extensions: how our authentication and the per-key rate limit appear in
the OpenAPI schema."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "sessions_app.api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An Engram API key."}


RATE_LIMITED_DESCRIPTION = (
    "rate_limited: this API key sent more than ENGRAM_RATE_LIMIT requests in the current "
    "window; retry after `Retry-After` seconds."
)
_RETRY_AFTER = {"schema": {"type": "integer"}, "description": "Seconds to wait."}
_ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "fields"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": True},
            },
        }
    },
}


def add_rate_limit_responses(result: dict[str, Any], **kwargs: object) -> dict[str, Any]:
    """Postprocessing hook: every operation that takes an API key may answer 429 (the
    per-key throttle runs on all of them). An operation that already documents a 429
    (budget/check's budget_exceeded) gets the rate-limit case added to its text."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or not any(
                "ApiKey" in requirement for requirement in operation.get("security", [])
            ):
                continue
            responses = operation.setdefault("responses", {})
            existing = responses.get("429")
            if existing is not None:
                before = existing.get("description", "")
                existing["description"] = f"{before}; or {RATE_LIMITED_DESCRIPTION}"
                existing.setdefault("headers", {})["Retry-After"] = _RETRY_AFTER
                continue
            responses["429"] = {
                "description": RATE_LIMITED_DESCRIPTION,
                "headers": {"Retry-After": _RETRY_AFTER},
                "content": {"application/json": {"schema": _ERROR_SCHEMA}},
            }
    return result
