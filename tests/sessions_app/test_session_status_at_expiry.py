"""A session reads `expired` from the moment `expires_at` passes, before the periodic
expiry task stores it: in its body, in the list and the list's `status` filter, and in
the 410 of a write."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, SessionStatus
from sessions_app.tasks import expire_sessions
from tests.sessions_app.helpers import assert_error, create_session, post_turn

pytestmark = pytest.mark.django_db


def _past_expiry(session_id: str) -> None:
    """As if its TTL ran out a moment ago and the expiry task has not run yet."""
    ChatSession.objects.filter(pk=session_id).update(
        expires_at=timezone.now() - timedelta(seconds=15)
    )


def _listed(api: APIClient, query: str = "") -> dict[str, str]:
    response = api.get(f"/api/v1/sessions{query}")
    assert response.status_code == 200, response.content
    return {row["id"]: row["status"] for row in response.json()["results"]}


def test_a_session_past_its_expiry_reads_expired_before_the_task_runs(api: APIClient) -> None:
    live = create_session(api, ttl_seconds=60)["id"]
    lapsed = create_session(api, ttl_seconds=60)["id"]
    post_turn(api, lapsed)  # stored status: active
    _past_expiry(lapsed)
    assert ChatSession.objects.get(pk=lapsed).status == SessionStatus.ACTIVE

    assert api.get(f"/api/v1/sessions/{lapsed}").json()["status"] == "expired"
    assert api.get(f"/api/v1/sessions/{live}").json()["status"] == "opened"
    assert _listed(api) == {live: "opened", lapsed: "expired"}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("expired", {"lapsed", "lapsed_unused", "stored_expired"}),
        ("active", {"active"}),
        ("opened", {"opened"}),
    ],
)
def test_the_status_filter_reads_the_status_as_of_now(
    api: APIClient, status: str, expected: set[str]
) -> None:
    stored_expired = create_session(api)["id"]
    _past_expiry(stored_expired)
    assert expire_sessions.delay().get()["expired"] == 1  # stored as expired
    ids = {name: create_session(api)["id"] for name in ("lapsed", "lapsed_unused", "active")}
    ids["opened"] = create_session(api)["id"]
    ids["stored_expired"] = stored_expired
    post_turn(api, ids["lapsed"])
    post_turn(api, ids["active"])
    _past_expiry(ids["lapsed"])  # stored status: active
    _past_expiry(ids["lapsed_unused"])  # stored status: opened

    name_of = {value: key for key, value in ids.items()}
    listed = _listed(api, f"?status={status}")
    assert {name_of[sid] for sid in listed} == expected
    assert set(listed.values()) == {status}


def test_the_410_of_a_write_says_expired(api: APIClient) -> None:
    sid = create_session(api)["id"]
    post_turn(api, sid)
    _past_expiry(sid)
    error = assert_error(post_turn(api, sid), 410, "session_expired")
    assert error["session_status"] == "expired"
