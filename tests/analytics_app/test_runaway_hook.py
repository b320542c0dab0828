"""The per-turn hook skips the broker for sessions that cannot be runaway yet, and still
flags those that are, when turns go through the real `turn_record`."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from analytics_app.services.runaway import Thresholds, runaway_ruled_out
from sessions_app.models import ChatSession, Tenant
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts
from tests.analytics_app.factories import make_session

pytestmark = pytest.mark.django_db


def record(tenant: Tenant, session: ChatSession, capture: Any, *, failed: bool = False) -> Any:
    step = StepInput(
        step_type="tool_call",
        model="gpt-4o-mini",
        counts=TokenCounts(input_tokens=7000, output_tokens=300),
        success=not failed,
        error="schema mismatch" if failed else None,
    )
    with capture(execute=True):  # the after-commit hooks run, Celery is eager in tests
        return turn_record(tenant=tenant, session_id=session.pk, steps=[step])


def test_a_small_healthy_session_is_ruled_out_and_not_flagged(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = make_session(tenant)
    result = record(tenant, session, django_capture_on_commit_callbacks)
    assert runaway_ruled_out(session=result.session, turn=result.turn, t=Thresholds.from_settings())
    session.refresh_from_db()
    assert session.runaway_at is None


@override_settings(ENGRAM_RUNAWAY_RETRY_LOOP_COUNT=3)
def test_a_retry_loop_is_flagged_by_the_per_turn_hook(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = make_session(tenant)
    for _ in range(3):
        record(tenant, session, django_capture_on_commit_callbacks, failed=True)
    session.refresh_from_db()
    assert session.runaway_reason == "retry_loop"


@override_settings(ENGRAM_RUNAWAY_MAX_TOKENS_PER_WINDOW=20_000)
def test_token_velocity_is_flagged_by_the_per_turn_hook(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = make_session(tenant)
    for _ in range(3):
        record(tenant, session, django_capture_on_commit_callbacks)
    session.refresh_from_db()
    assert session.runaway_reason == "token_velocity"
