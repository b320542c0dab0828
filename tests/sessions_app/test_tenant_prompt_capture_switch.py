"""Seed 000: the tenant's prompt-capture switch through the API
(`GET/PATCH /api/v1/tenant`), not only the admin. A key acts for its own tenant only."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.models import Tenant
from tests.sessions_app.test_prompt_capture import captured_turn, jsonl
from tests.sessions_app.workspace_helpers import assert_error, create_session

pytestmark = pytest.mark.django_db


def test_a_key_reads_and_switches_its_own_tenants_capture(
    api: APIClient, other_api: APIClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    body = api.get("/api/v1/tenant").json()
    assert body["name"] == "acme" and body["capture_prompts"] is False
    assert set(body) == {
        "name", "capture_prompts", "default_budget_tokens", "default_budget_usd", "created_at"
    }  # fmt: skip
    before = create_session(api)
    captured_turn(api, before)
    assert jsonl(api, before) == []  # off by default

    switched = api.patch("/api/v1/tenant", {"capture_prompts": True}, format="json")
    assert switched.status_code == 200, switched.content
    assert switched.json()["capture_prompts"] is True
    tenant.refresh_from_db()
    other_tenant.refresh_from_db()
    assert tenant.capture_prompts is True and other_tenant.capture_prompts is False
    theirs = other_api.get("/api/v1/tenant").json()
    assert theirs["name"] == "globex" and theirs["capture_prompts"] is False

    sid = create_session(api)  # the session leaves it to the tenant
    captured_turn(api, sid)
    assert len(jsonl(api, sid)) == 1
    quiet = create_session(api, capture_prompts=False)  # a session's own choice still wins
    captured_turn(api, quiet)
    assert jsonl(api, quiet) == []

    assert api.patch("/api/v1/tenant", {"capture_prompts": False}, format="json").status_code == 200
    later = create_session(api)
    captured_turn(api, later)
    assert jsonl(api, later) == []


def test_bad_tenant_updates_are_400_naming_the_field(api: APIClient, tenant: Tenant) -> None:
    assert_error(api.patch("/api/v1/tenant", {"capture_prompts": "yes"}, format="json"),
                 400, "invalid", field="capture_prompts")  # fmt: skip
    unchanged = api.patch("/api/v1/tenant", {}, format="json")
    assert unchanged.status_code == 200 and unchanged.json()["capture_prompts"] is False
    # Budget defaults are the operators' (admin), not a key's to raise.
    assert_error(api.patch("/api/v1/tenant", {"capture_prompts": True,
                                              "default_budget_tokens": 10**9}, format="json"),
                 400, "invalid", field="default_budget_tokens")  # fmt: skip
    tenant.refresh_from_db()
    assert tenant.capture_prompts is False and tenant.default_budget_tokens is None
    assert APIClient().get("/api/v1/tenant").status_code == 401
