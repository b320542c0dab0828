"""API-key authentication for the non-DRF endpoints (MCP over HTTP, OTLP): the same keys
and lookup as the REST API, errors in the same JSON shape."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from sessions_app.models import Tenant
from sessions_app.selectors.api_keys import api_key_for_secret
from sessions_app.services.api_keys import api_key_touch


def error_response(
    status: int, code: str, message: str, fields: dict[str, list[str]] | None = None
) -> JsonResponse:
    body = {"error": {"code": code, "message": message, "fields": fields or {}}}
    response = JsonResponse(body, status=status)
    if status == 401:
        response["WWW-Authenticate"] = "Bearer"
    return response


def request_secret(request: HttpRequest) -> str | None:
    """`Authorization: Bearer <key>`, or `X-API-Key: <key>` for exporters that can only
    set a plain header."""
    header = request.headers.get("Authorization", "").strip()
    if header:
        scheme, _, secret = header.partition(" ")
        if scheme.lower() == "bearer" and secret.strip():
            return secret.strip()
        return None
    key = request.headers.get("X-API-Key", "").strip()
    return key or None


def tenant_for_secret(secret: str | None) -> Tenant | None:
    if not secret:
        return None
    api_key = api_key_for_secret(secret)
    if api_key is None:
        return None
    api_key_touch(api_key=api_key)
    return api_key.tenant


def authenticate(request: HttpRequest) -> Tenant | JsonResponse:
    """The key's tenant, or the 401 to answer."""
    secret = request_secret(request)
    if secret is None:
        return error_response(
            401, "not_authenticated", "Use 'Authorization: Bearer <api key>' or 'X-API-Key'."
        )
    tenant = tenant_for_secret(secret)
    if tenant is None:
        return error_response(401, "authentication_failed", "Invalid or revoked API key.")
    return tenant
