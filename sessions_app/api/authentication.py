"""Bearer API keys. A key authenticates a tenant, not a person: `request.user` is a
`TenantPrincipal`, `request.auth` the `ApiKey`."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from sessions_app.models import ApiKey, Tenant
from sessions_app.selectors.api_keys import api_key_for_secret
from sessions_app.services.api_keys import api_key_touch


@dataclass(frozen=True)
class TenantPrincipal:
    tenant: Tenant
    api_key: ApiKey
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def pk(self) -> int:
        return int(self.api_key.pk)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[TenantPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").strip()
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != self.keyword.lower() or not secret.strip():
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <api key>'.")
        api_key = api_key_for_secret(secret.strip())
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        api_key_touch(api_key=api_key)
        return TenantPrincipal(tenant=api_key.tenant, api_key=api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
