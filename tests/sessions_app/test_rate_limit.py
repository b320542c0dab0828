"""Rate limiting per API key, counted in the shared cache (the test Valkey)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from rest_framework.test import APIClient

from sessions_app.services.api_keys import IssuedKey, api_key_create
from tests.sessions_app.helpers import assert_error

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _clean_counters() -> None:
    client = cache._cache.get_client()
    for key in client.keys("*ratelimit:*"):
        client.delete(key)


def test_a_key_past_its_limit_gets_429_with_retry_after_other_keys_do_not(
    api: APIClient, issued_key: IssuedKey, make_client: Any, settings: Any
) -> None:
    settings.ENGRAM_RATE_LIMIT = "5/hour"
    for _ in range(5):
        assert api.get("/api/v1/sessions").status_code == 200
    over = api.get("/api/v1/sessions")
    error = assert_error(over, 429, "rate_limited")
    assert error["fields"] == {}
    retry_after = int(over["Retry-After"])
    assert 1 <= retry_after <= 3600
    # Every route of the key counts against the same limit, writes included.
    write = api.post("/api/v1/sessions", {"user_id": "u", "agent_id": "a"}, format="json")
    assert write.status_code == 429
    # Another key of the same tenant has its own count.
    other = make_client(api_key_create(tenant=issued_key.api_key.tenant, name="b").secret)
    assert other.get("/api/v1/sessions").status_code == 200
    # Unauthenticated requests are refused by authentication, not counted.
    assert APIClient().get("/api/v1/sessions").status_code == 401
    # Off again: the key is served.
    settings.ENGRAM_RATE_LIMIT = ""
    assert api.get("/api/v1/sessions").status_code == 200


def test_the_limit_is_shared_across_processes_through_the_cache(
    api: APIClient, issued_key: IssuedKey, settings: Any
) -> None:
    """Counts live in Valkey, not in the process: what another process (here: a direct
    INCR on the same counter key) counted, this one sees."""
    settings.ENGRAM_RATE_LIMIT = "3/day"
    assert api.get("/api/v1/sessions").status_code == 200
    keys = list(cache._cache.get_client().keys("*ratelimit:*"))
    assert len(keys) == 1
    cache._cache.get_client().incrby(keys[0], 2)
    assert_error(api.get("/api/v1/sessions"), 429, "rate_limited")


def test_schema_documents_429_on_authenticated_operations(api: APIClient) -> None:
    schema = APIClient().get("/api/schema/", {"format": "json"}).json()
    operations = [op for ops in schema["paths"].values() for op in ops.values()]
    secured = [op for op in operations if op.get("security")]
    assert secured and all("429" in op["responses"] for op in secured)
    check = schema["paths"]["/api/v1/sessions/{session_id}/budget/check"]["post"]["responses"]
    assert "budget_exceeded" in check["429"]["description"]
    assert "rate_limited" in check["429"]["description"]


def test_a_malformed_limit_fails_the_system_check(settings: Any) -> None:
    settings.ENGRAM_RATE_LIMIT = "lots"
    with pytest.raises(SystemCheckError, match="ENGRAM_RATE_LIMIT"):
        call_command("check")
