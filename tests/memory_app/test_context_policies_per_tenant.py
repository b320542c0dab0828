"""Seed 004: named context policies are managed per tenant (API and admin),
the settings' ENGRAM_CONTEXT_POLICIES being every tenant's defaults; sessions and
`GET …/context?policy=` name them, and two policies can be compared on one session."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, Tenant, TenantContextPolicy
from tests.sessions_app.workspace_helpers import assert_error, create_session

pytestmark = pytest.mark.django_db
POLICIES = "/api/v1/tenant/context-policies"


def names(api: APIClient) -> dict[str, dict[str, Any]]:
    response = api.get(POLICIES)
    assert response.status_code == 200, response.content
    return {policy["name"]: policy for policy in response.json()["policies"]}


def assert_defaults_and_settings_policies_listed(api: APIClient) -> None:
    listed = names(api)
    assert list(listed) == ["default", "keep4", "keep8", "no_compression"]
    assert listed["default"] == {"name": "default", "origin": "default", "keep_last_turns": 6,
                                 "memory_limit": 12, "compression": True,
                                 "predecessor_depth": 3}  # fmt: skip
    assert listed["keep4"]["origin"] == "settings" and listed["keep4"]["keep_last_turns"] == 4


def define_then_replace_lean(api: APIClient) -> None:
    made = api.put(f"{POLICIES}/lean", {"keep_last_turns": 2, "memory_limit": 3,
                                         "compression": False}, format="json")  # fmt: skip
    assert made.status_code == 201, made.content
    assert made.json() == {"name": "lean", "origin": "tenant", "keep_last_turns": 2,
                           "memory_limit": 3, "compression": False,
                           "predecessor_depth": 3}  # fmt: skip
    replaced = api.put(f"{POLICIES}/lean", {"memory_limit": 5}, format="json")
    assert replaced.status_code == 200
    assert replaced.json()["keep_last_turns"] == 6  # replaced whole: left out = default's
    assert replaced.json()["memory_limit"] == 5


def assert_tenant_policy_shadows_settings_for_that_tenant_only(
    api: APIClient, other_api: APIClient
) -> None:
    """A tenant's policy named like a settings one replaces it for that tenant only."""
    assert api.put(f"{POLICIES}/keep4", {"keep_last_turns": 1}, format="json").status_code == 201
    assert names(api)["keep4"]["keep_last_turns"] == 1
    assert names(api)["keep4"]["origin"] == "tenant"
    assert names(other_api)["keep4"]["keep_last_turns"] == 4
    assert "lean" not in names(other_api)
    assert_error(other_api.get(f"{POLICIES}/lean"), 404, "not_found")
    assert api.get(f"{POLICIES}/lean").json()["memory_limit"] == 5


def session_naming_lean(api: APIClient, other_api: APIClient) -> str:
    """Sessions name the tenant's policies; another tenant's names are unknown to them."""
    sid = create_session(api, context_policy="lean")
    assert_error(other_api.post("/api/v1/sessions", {"user_id": "u", "agent_id": "a",
                                                     "context_policy": "lean"}, format="json"),
                 400, "invalid", field="context_policy")  # fmt: skip
    context = api.get(f"/api/v1/sessions/{sid}/context").json()
    assert context["policy"]["name"] == "lean" and context["policy"]["origin"] == "tenant"
    assert context["policy"]["memory_limit"] == 5
    keep4 = api.get(f"/api/v1/sessions/{sid}/context", {"policy": "keep4"}).json()["policy"]
    assert keep4["keep_last_turns"] == 1
    return sid


def assert_deleting_falls_sessions_back(api: APIClient, sid: str) -> None:
    """Deleting: the sessions that named it fall back (settings' policy of the name, else
    default), so no session names a policy that does not exist."""
    keep4_session = create_session(api, context_policy="keep4")
    assert api.delete(f"{POLICIES}/lean").status_code == 204
    assert api.delete(f"{POLICIES}/keep4").status_code == 204
    assert ChatSession.objects.get(pk=sid).context_policy == "default"
    assert ChatSession.objects.get(pk=keep4_session).context_policy == "keep4"
    assert names(api)["keep4"]["origin"] == "settings"
    assert_error(api.delete(f"{POLICIES}/lean"), 404, "not_found")
    assert_error(api.delete(f"{POLICIES}/keep8"), 404, "not_found")  # settings': not the tenant's
    assert_error(api.get(f"/api/v1/sessions/{sid}/context", {"policy": "lean"}), 400, "invalid",
                 field="policy")  # fmt: skip


@override_settings(ENGRAM_COMPACT_KEEP_LAST_TURNS=6, ENGRAM_CONTEXT_PREDECESSOR_DEPTH=3)
def test_a_tenant_defines_replaces_and_deletes_its_policies(
    api: APIClient, other_api: APIClient
) -> None:
    assert_defaults_and_settings_policies_listed(api)
    define_then_replace_lean(api)
    assert_tenant_policy_shadows_settings_for_that_tenant_only(api, other_api)
    sid = session_naming_lean(api, other_api)
    assert_deleting_falls_sessions_back(api, sid)


def test_bad_policies_are_400_naming_the_field(api: APIClient) -> None:
    assert_error(api.put(f"{POLICIES}/default", {}, format="json"), 400, "invalid", field="name")
    assert_error(api.put(f"{POLICIES}/-x", {}, format="json"), 400, "invalid", field="name")
    assert_error(api.put(f"{POLICIES}/{'a' * 65}", {}, format="json"), 400, "invalid",
                 field="name")  # fmt: skip
    for field, value in (("keep_last_turns", -1), ("memory_limit", 101), ("compression", "no"),
                         ("predecessor_depth", 21), ("keep_last_turns", "4")):  # fmt: skip
        assert_error(api.put(f"{POLICIES}/p", {field: value}, format="json"), 400, "invalid",
                     field=field)  # fmt: skip
    assert_error(api.put(f"{POLICIES}/p", {"k": 1}, format="json"), 400, "invalid", field="k")
    assert not TenantContextPolicy.objects.exists()
    assert_error(api.patch(f"/api/v1/sessions/{create_session(api)}",
                           {"context_policy": "nope"}, format="json"),
                 400, "invalid", field="context_policy")  # fmt: skip


def test_the_admin_manages_a_tenants_policies(tenant: Tenant, admin_client: Client) -> None:
    url = f"/admin/sessions_app/tenant/{tenant.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200 and b"context policies" in page.content.lower()
    form = {
        "name": tenant.name,
        "capture_prompts": "",
        "context_policies-TOTAL_FORMS": "1",
        "context_policies-INITIAL_FORMS": "0",
        "context_policies-MIN_NUM_FORMS": "0",
        "context_policies-MAX_NUM_FORMS": "1000",
        "context_policies-0-name": "wide",
        "context_policies-0-memory_limit": "40",
        "context_policies-0-compression": "",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content[:2000]
    policy = TenantContextPolicy.objects.get(tenant=tenant)
    assert (policy.name, policy.memory_limit, policy.keep_last_turns) == ("wide", 40, None)
    # `default` is refused by the admin form too.
    form["context_policies-INITIAL_FORMS"] = "1"
    form["context_policies-0-id"] = str(policy.pk)
    form["context_policies-0-tenant"] = str(tenant.pk)
    form["context_policies-0-name"] = "default"
    assert admin_client.post(url, form).status_code == 200  # the form again, with the error
    policy.refresh_from_db()
    assert policy.name == "wide"


@override_settings(ENGRAM_COMPACT_KEEP_LAST_TURNS=2, ENGRAM_COMPACT_MAX_TURNS=3)
def test_compaction_overhead_and_context_size_are_measured_per_policy(api: APIClient) -> None:
    from memory_app.services.compaction import session_compact
    from tests.sessions_app.helpers import post_turn, turn_body
    from tests.sessions_app.test_metrics import value

    def scrape() -> str:
        return Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()

    assert api.put(f"{POLICIES}/ab-b", {"keep_last_turns": 4}, format="json").status_code == 201
    sid = create_session(api, context_policy="ab-b")
    for i in range(6):
        body = turn_body(user_message=f"I need a laptop with {8 + i} GB of memory",
                         assistant_response=f"Here are laptops with {8 + i} GB.")  # fmt: skip
        assert post_turn(api, sid, body).status_code == 201
    before = scrape()
    result = session_compact(session_id=sid)
    assert result.status == "compacted"
    after = scrape()

    def delta(name: str, **labels: str) -> float:
        return (value(after, name, **labels) or 0.0) - (value(before, name, **labels) or 0.0)

    assert delta("engram_compaction_seconds_count", policy="ab-b", status="compacted") == 1
    source = delta("engram_compaction_tokens_total", policy="ab-b", kind="source")
    summary = delta("engram_compaction_tokens_total", policy="ab-b", kind="summary")
    assert source > summary > 0  # the saving: what the summaries replaced minus themselves
    assert delta("engram_compaction_tokens_total", policy="ab-b", kind="llm_input") == 0
    assert delta("engram_compaction_seconds_count", policy="default", status="compacted") == 0

    # The context's size, per policy asked for: the A/B on one session.
    for policy in ("ab-b", "no_compression"):
        served = api.get(f"/api/v1/sessions/{sid}/context", {"policy": policy})
        assert served.status_code == 200
    last = scrape()
    for policy in ("ab-b", "no_compression"):
        assert (value(last, "engram_context_tokens_count", policy=policy) or 0) >= 1
    compressed = value(last, "engram_context_tokens_sum", policy="ab-b") or 0
    raw = value(last, "engram_context_tokens_sum", policy="no_compression") or 0
    assert compressed > 0 and raw > 0
