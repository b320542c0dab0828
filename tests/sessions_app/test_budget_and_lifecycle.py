"""Budgets (pre-flight 429, turns past the budget still stored) and the session
lifecycle (TTL moved by writes, 410 after expiry, the expiry task)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, ChatTurn, SessionStatus, TurnStep
from sessions_app.services.lifecycle import sessions_housekeep
from sessions_app.tasks import expire_sessions
from tests.sessions_app.helpers import assert_error, create_session, post_turn

pytestmark = pytest.mark.django_db


def check(api: APIClient, sid: str, tokens: int):
    return api.post(
        f"/api/v1/sessions/{sid}/budget/check", {"estimated_tokens": tokens}, format="json"
    )


def test_budget_5000_answers_429_once_spent_and_later_turns_are_stored_and_flagged(
    api: APIClient,
) -> None:
    session = create_session(api, budget_tokens=5000)
    sid = session["id"]
    ok = check(api, sid, 1520)
    assert ok.status_code == 200
    assert ok.json()["tokens_remaining_after"] == 5000 - 1520
    # Three seed turns: 3 x 1,520 = 4,560 tokens spent, 440 left.
    for _ in range(3):
        body = post_turn(api, sid).json()
        assert body["budget"]["exceeded"] is False and body["warnings"] == []
    assert check(api, sid, 440).status_code == 200
    over = check(api, sid, 441)
    error = assert_error(over, 429, "budget_exceeded")
    assert "Retry-After" not in over  # a session's budget does not refill by waiting
    assert error["budget"]["tokens_remaining"] == 440

    # The fourth turn crosses the budget: stored, counted, flagged, said so.
    fourth = post_turn(api, sid)
    assert fourth.status_code == 201
    body = fourth.json()
    assert body["turn"]["turn_number"] == 4
    assert body["budget"]["exceeded"] is True
    assert body["budget"]["tokens_remaining"] == 5000 - 4 * 1520
    assert body["budget"]["exceeded_at"] is not None
    assert [w["code"] for w in body["warnings"]] == ["budget_exceeded"]
    assert ChatSession.objects.get(pk=sid).budget_exceeded_at is not None

    # Once spent, any check is 429, and a further turn is still stored and flagged.
    assert_error(check(api, sid, 0), 429, "budget_exceeded")
    fifth = post_turn(api, sid)
    assert fifth.status_code == 201
    assert fifth.json()["budget"]["exceeded"] is True
    assert "budget_exceeded" in [w["code"] for w in fifth.json()["warnings"]]
    assert ChatTurn.objects.filter(session_id=sid).count() == 5


def test_usd_budget_and_runaway_block_answer_429(api: APIClient) -> None:
    session = create_session(api, budget_usd="0.001")
    sid = session["id"]
    assert check(api, sid, 10).status_code == 200
    post_turn(api, sid)  # costs ~0.002 USD with seeded Gemini prices
    assert_error(check(api, sid, 10), 429, "budget_exceeded")

    free = create_session(api)
    assert check(api, free["id"], 10**9).status_code == 200  # no budget: anything goes
    ChatSession.objects.filter(pk=free["id"]).update(runaway_blocked=True)
    error = assert_error(check(api, free["id"], 1), 429, "budget_exceeded")
    assert "runaway" in error["message"]


def test_budget_check_validates_input(api: APIClient) -> None:
    sid = create_session(api)["id"]
    assert "estimated_tokens" in assert_error(check(api, sid, -1), 400, "invalid")["fields"]
    response = api.post(f"/api/v1/sessions/{sid}/budget/check", {}, format="json")
    assert "estimated_tokens" in assert_error(response, 400, "invalid")["fields"]


def test_writes_move_expiry_forward(api: APIClient) -> None:
    session = create_session(api, ttl_seconds=600)
    sid = session["id"]
    ChatSession.objects.filter(pk=sid).update(expires_at=timezone.now() + timedelta(seconds=5))
    post_turn(api, sid)
    after_turn = ChatSession.objects.get(pk=sid).expires_at
    assert after_turn > timezone.now() + timedelta(seconds=590)
    ChatSession.objects.filter(pk=sid).update(expires_at=timezone.now() + timedelta(seconds=5))
    assert api.patch(f"/api/v1/sessions/{sid}", {"state": {"a": 1}}, format="json").status_code
    assert ChatSession.objects.get(pk=sid).expires_at > timezone.now() + timedelta(seconds=590)


def test_writes_to_an_expired_session_are_410_and_write_nothing(api: APIClient) -> None:
    session = create_session(api)
    sid = session["id"]
    post_turn(api, sid)
    ChatSession.objects.filter(pk=sid).update(expires_at=timezone.now() - timedelta(seconds=1))
    turns, steps = ChatTurn.objects.count(), TurnStep.objects.count()
    assert_error(post_turn(api, sid), 410, "session_expired")
    assert_error(post_turn(api, sid, key="k410"), 410, "session_expired")
    assert_error(api.patch(f"/api/v1/sessions/{sid}", {"state": {"x": 1}}, format="json"), 410,
                 "session_expired")  # fmt: skip
    assert_error(api.post(f"/api/v1/sessions/{sid}/turns/1/rollback"), 410, "session_expired")
    assert_error(check(api, sid, 1), 410, "session_expired")
    assert (ChatTurn.objects.count(), TurnStep.objects.count()) == (turns, steps)
    assert api.get(f"/api/v1/sessions/{sid}").json()["state"] == {}
    assert api.get(f"/api/v1/sessions/{sid}/turns").status_code == 200  # reads still work


@override_settings(ENGRAM_SESSION_RETENTION="archive", ENGRAM_SESSION_RETENTION_DAYS=30)
def test_expiry_task_expires_then_archives_after_retention(api: APIClient) -> None:
    live = create_session(api)["id"]
    stale = create_session(api)["id"]
    ancient = create_session(api)["id"]
    post_turn(api, ancient)
    now = timezone.now()
    ChatSession.objects.filter(pk=stale).update(expires_at=now - timedelta(minutes=1))
    ChatSession.objects.filter(pk=ancient).update(expires_at=now - timedelta(days=31))

    result = expire_sessions.delay().get()
    assert result["expired"] == 2 and result["skipped"] is False
    assert result["archived"] == 1  # expired 31 days ago: past retention at once
    status = dict(ChatSession.objects.values_list("pk", "status"))
    assert {str(k): v for k, v in status.items()} == {
        live: SessionStatus.OPENED,
        stale: SessionStatus.EXPIRED,
        ancient: SessionStatus.ARCHIVED,
    }
    assert ChatTurn.objects.filter(session_id=ancient).count() == 1  # archived keeps turns
    assert expire_sessions.delay().get()["expired"] == 0  # safe to run twice
    assert_error(post_turn(api, stale), 410, "session_expired")
    assert_error(post_turn(api, ancient), 410, "session_expired")


@override_settings(ENGRAM_SESSION_RETENTION="delete", ENGRAM_SESSION_RETENTION_DAYS=7)
def test_expiry_deletes_after_retention_when_configured(api: APIClient) -> None:
    gone = create_session(api)["id"]
    kept = create_session(api)["id"]
    post_turn(api, gone)
    ChatSession.objects.filter(pk=gone).update(expires_at=timezone.now() - timedelta(days=8))
    ChatSession.objects.filter(pk=kept).update(expires_at=timezone.now() - timedelta(days=6))
    result = sessions_housekeep()
    assert (result.expired, result.deleted) == (2, 1)
    assert not ChatSession.objects.filter(pk=gone).exists()
    assert not TurnStep.objects.filter(session_id=gone).exists()
    assert ChatSession.objects.get(pk=kept).status == SessionStatus.EXPIRED
