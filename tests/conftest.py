"""Shared fixtures. Data is set up through our own services, never by hand-made rows."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from sessions_app.models import Tenant
from sessions_app.services.api_keys import IssuedKey, api_key_create, tenant_get_or_create


@pytest.fixture(autouse=True)
def _fresh_price_table() -> None:
    """Each test's prices are rolled back with it; the per-process price cache must not
    carry them into the next test."""
    from analytics_app.pricing import price_table_clear

    price_table_clear()


@pytest.fixture
def tenant(db: None) -> Tenant:
    return tenant_get_or_create(name="acme")


@pytest.fixture
def other_tenant(db: None) -> Tenant:
    return tenant_get_or_create(name="globex")


@pytest.fixture
def issued_key(tenant: Tenant) -> IssuedKey:
    return api_key_create(tenant=tenant, name="test")


@pytest.fixture
def make_client() -> Callable[[str | None], APIClient]:
    def _make(secret: str | None) -> APIClient:
        client = APIClient()
        if secret:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return _make


@pytest.fixture
def api(issued_key: IssuedKey, make_client: Callable[[str | None], APIClient]) -> APIClient:
    """A client authenticated as tenant 'acme'."""
    return make_client(issued_key.secret)


@pytest.fixture
def other_api(other_tenant: Tenant, make_client: Callable[[str | None], APIClient]) -> APIClient:
    """A client authenticated as tenant 'globex'."""
    return make_client(api_key_create(tenant=other_tenant).secret)
