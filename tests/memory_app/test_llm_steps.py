"""Engram's own LLM calls are steps of the session that caused them: the
summarizer's and the extractor's tokens and cost show in `/usage`, in the turn's and the
session's totals, and so in the budget, through a real loopback LLM server."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.services.compaction import session_compact
from memory_app.services.extraction import memories_extract_from_turn
from memory_app.window.models import ContextSummary
from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnStep
from sessions_app.selectors.budgets import budget_remaining
from tests.memory_app.window_helpers import loopback_llm, new_session, record

pytestmark = pytest.mark.django_db
MICRO = Decimal("0.000001")


def _llm_settings(settings: Any, url: str) -> None:
    settings.ENGRAM_LLM_URL = url
    settings.ENGRAM_LLM_API_KEY = "sk-test"
    settings.ENGRAM_LLM_MODEL = "gpt-4o-mini"


def test_the_summarizers_tokens_show_in_usage_by_step_type(
    api: APIClient, tenant: Tenant, settings: Any
) -> None:
    with loopback_llm("- [t1] user wants part LS-1001 under $900") as llm:
        _llm_settings(settings, llm.url)
        session = new_session(tenant)
        for i in range(11):
            record(tenant, session, f"I want part LS-{1001 + i} under ${900 + i}", "Noted.")
        before = ChatSession.objects.get(pk=session.pk)
        result = session_compact(session_id=session.pk)
    assert result.status == "compacted" and len(llm.requests) == 1

    (step,) = TurnStep.objects.filter(session=session, step_type="engram.summarize")
    assert (step.model, step.input_tokens, step.output_tokens) == ("gpt-4o-mini", 321, 45)
    assert step.success and step.error is None and step.cost_usd is not None
    assert step.cost_usd > 0 and step.user_id == session.user_id
    # On the newest turn the summary covers, after that turn's own step.
    assert step.turn.turn_number == result.spans[0][1] and step.step_order == 2
    summary = ContextSummary.objects.get(pk=result.summary_ids[0])
    assert summary.llm_cost_usd == step.cost_usd  # one price, one place

    # The turn's and the session's totals carry it, so the budget does too.
    turn = ChatTurn.objects.get(pk=step.turn_id)
    assert (turn.input_tokens, turn.output_tokens, turn.call_count) == (900 + 321, 120 + 45, 2)
    after = ChatSession.objects.get(pk=session.pk)
    assert after.total_input_tokens == before.total_input_tokens + 321
    assert after.total_output_tokens == before.total_output_tokens + 45
    assert after.total_cost_usd == before.total_cost_usd + step.cost_usd
    assert after.total_calls == before.total_calls + 1
    assert after.turn_count == before.turn_count  # no turn was added

    response = api.get("/api/v1/usage", {"group_by": "step_type"})
    assert response.status_code == 200, response.content
    rows = {row["key"]: row for row in response.json()["rows"]}
    summarize = rows["engram.summarize"]
    assert (summarize["input_tokens"], summarize["output_tokens"]) == (321, 45)
    assert summarize["calls"] == 1 and summarize["errors"] == 0
    assert Decimal(summarize["cost_usd"]) == step.cost_usd.quantize(MICRO)
    assert rows["response"]["input_tokens"] == 11 * 900  # the agent's own steps, apart


def test_a_failed_summary_call_is_a_failed_step(tenant: Tenant, settings: Any) -> None:
    with loopback_llm("unused", status=500) as llm:
        _llm_settings(settings, llm.url)
        session = new_session(tenant)
        for i in range(11):
            record(tenant, session, f"I want part LF-{1001 + i}", "Noted.")
        session_compact(session_id=session.pk)
    (step,) = TurnStep.objects.filter(session=session, step_type="engram.summarize")
    assert not step.success and "500" in (step.error or "")
    assert (step.input_tokens, step.output_tokens) == (0, 0)  # the endpoint billed nothing
    assert ChatSession.objects.get(pk=session.pk).total_errors == 1


def test_summaries_count_against_the_sessions_budget(tenant: Tenant, settings: Any) -> None:
    with loopback_llm("- [t1] a short summary of the span") as llm:
        _llm_settings(settings, llm.url)
        # 11 turns of 1,020 tokens: within 11,300; the summary's 366 tokens are not.
        session = new_session(tenant, budget_tokens=11_300)
        for i in range(11):
            record(tenant, session, f"I want part LB-{1001 + i}", "Noted.")
        assert not budget_remaining(ChatSession.objects.get(pk=session.pk)).exceeded
        session_compact(session_id=session.pk)
    session.refresh_from_db()
    assert budget_remaining(session).exceeded and session.budget_exceeded_at is not None


def test_llm_extraction_is_a_step_of_the_turn_it_read(
    api: APIClient, tenant: Tenant, settings: Any
) -> None:
    reply = '{"memories": [{"type": "fact", "content": "Lives in Ghent"}]}'
    with loopback_llm(reply) as llm:
        _llm_settings(settings, llm.url)
        session = new_session(tenant)
        record(tenant, session, "I live in Ghent.", "Noted.")
        turn = ChatTurn.objects.get(session=session, turn_number=1)
        memories_extract_from_turn(turn_id=turn.pk)
    (step,) = TurnStep.objects.filter(session=session, step_type="engram.extract")
    assert step.turn_id == turn.pk and step.success
    assert (step.model, step.input_tokens, step.output_tokens) == ("gpt-4o-mini", 321, 45)
    rows = {r["key"]: r for r in api.get("/api/v1/usage", {"group_by": "step_type"}).json()["rows"]}
    assert rows["engram.extract"]["input_tokens"] == 321 and rows["engram.extract"]["calls"] == 1


def test_an_unusable_extraction_answer_is_a_failed_step_that_still_cost(
    tenant: Tenant, settings: Any
) -> None:
    with loopback_llm("this is not JSON") as llm:
        _llm_settings(settings, llm.url)
        session = new_session(tenant)
        record(tenant, session, "I live in Ghent.", "Noted.")
        turn = ChatTurn.objects.get(session=session, turn_number=1)
        memories_extract_from_turn(turn_id=turn.pk)
    (step,) = TurnStep.objects.filter(session=session, step_type="engram.extract")
    assert not step.success and step.error
    assert (step.input_tokens, step.output_tokens) == (321, 45)  # billed all the same
    assert step.cost_usd is not None and step.cost_usd > 0
