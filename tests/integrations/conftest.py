"""A live Engram (pytest-django's live_server: the real WSGI app on a loopback port, real
PostgreSQL and Valkey) and the loopback fakes of the outside services."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sessions_app.services.api_keys import IssuedKey, api_key_create, tenant_get_or_create
from tests.integrations.loopback import FakeLLM, serve_fake_llm


@pytest.fixture
def live_key(transactional_db: None) -> IssuedKey:
    return api_key_create(tenant=tenant_get_or_create(name="acme"), name="live")


@pytest.fixture
def other_live_key(transactional_db: None) -> IssuedKey:
    return api_key_create(tenant=tenant_get_or_create(name="globex"), name="live")


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    with serve_fake_llm() as fake:
        yield fake
