"""The floor every feature stands on: keys, tenancy, the error shape, limits."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import override_settings
from rest_framework.test import APIClient

from sessions_app.models import ApiKey
from sessions_app.services.api_keys import IssuedKey, api_key_revoke

pytestmark = pytest.mark.django_db


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["fields"], dict)
    return body["error"]


def test_no_key_is_401_in_error_shape(make_client) -> None:
    assert_error(make_client(None).get("/api/v1/sessions"), 401, "not_authenticated")


def test_unknown_key_is_401(make_client, issued_key: IssuedKey) -> None:
    forged = issued_key.secret[:-4] + "abcd"
    assert_error(make_client(forged).get("/api/v1/sessions"), 401, "authentication_failed")
    assert_error(make_client("garbage").get("/api/v1/sessions"), 401, "authentication_failed")


def test_revoked_key_is_401(api: APIClient, issued_key: IssuedKey) -> None:
    assert api.get("/api/v1/sessions").status_code == 200
    api_key_revoke(api_key=issued_key.api_key)
    assert_error(api.get("/api/v1/sessions"), 401, "authentication_failed")


def test_a_key_revoked_by_another_process_stops_working_within_the_cache_ttl(
    api: APIClient, issued_key: IssuedKey, settings
) -> None:
    from django.utils import timezone

    settings.ENGRAM_API_KEY_CACHE_SECONDS = 5
    assert api.get("/api/v1/sessions").status_code == 200
    # Another process revokes: this one hears no signal and trusts its cache a while.
    ApiKey.objects.filter(pk=issued_key.api_key.pk).update(revoked_at=timezone.now())
    assert api.get("/api/v1/sessions").status_code == 200
    settings.ENGRAM_API_KEY_CACHE_SECONDS = 0  # as if the TTL had passed
    assert_error(api.get("/api/v1/sessions"), 401, "authentication_failed")


def test_no_key_is_stored_in_clear(issued_key: IssuedKey) -> None:
    secret_part = issued_key.secret.split("_")[2]
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM api_key")
        rows = cursor.fetchall()
    assert rows
    dumped = json.dumps(rows, default=str)
    assert issued_key.secret not in dumped
    assert secret_part not in dumped
    stored = ApiKey.objects.get(pk=issued_key.api_key.pk)
    assert stored.key_hash != issued_key.secret and len(stored.key_hash) == 64


def test_last_used_at_is_recorded(api: APIClient, issued_key: IssuedKey) -> None:
    assert ApiKey.objects.get(pk=issued_key.api_key.pk).last_used_at is None
    api.get("/api/v1/sessions")
    assert ApiKey.objects.get(pk=issued_key.api_key.pk).last_used_at is not None


def test_other_tenants_session_is_404(api: APIClient, other_api: APIClient) -> None:
    created = other_api.post("/api/v1/sessions", {"user_id": "u1", "agent_id": "a1"}, format="json")
    assert created.status_code == 201
    session_id = created.json()["id"]
    url = f"/api/v1/sessions/{session_id}"
    assert_error(api.get(url), 404, "not_found")
    assert_error(api.patch(url, {"state": {"x": 1}}, format="json"), 404, "not_found")
    assert_error(api.delete(url), 404, "not_found")
    assert api.get("/api/v1/sessions").json()["results"] == []
    # The owner still sees it, untouched.
    owner_view = other_api.get(url).json()
    assert owner_view["state"] == {}


def test_malformed_json_is_400(api: APIClient) -> None:
    response = api.generic(
        "POST", "/api/v1/sessions", '{"user_id": "u1", ', content_type="application/json"
    )
    assert_error(response, 400, "malformed_json")


def test_missing_and_wrong_fields_are_400_with_field_names(api: APIClient) -> None:
    error = assert_error(
        api.post("/api/v1/sessions", {"user_id": 5, "ttl_seconds": "soon"}, format="json"),
        400,
        "invalid",
    )
    assert "agent_id" in error["fields"]
    assert "ttl_seconds" in error["fields"]


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10_000)
def test_body_over_limit_is_413(api: APIClient) -> None:
    body = json.dumps({"user_id": "u", "agent_id": "a", "state": {"blob": "x" * 20_000}})
    response = api.generic("POST", "/api/v1/sessions", body, content_type="application/json")
    assert_error(response, 413, "request_too_large")
    assert api.get("/api/v1/sessions").json()["results"] == []


def test_unknown_session_id_shapes_are_404(api: APIClient) -> None:
    for bad in ["not-a-uuid", "00000000-0000-0000-0000-000000000000"]:
        assert_error(api.get(f"/api/v1/sessions/{bad}"), 404, "not_found")
