"""Compaction: thresholds, spans, summaries with milestones, idempotency, condensing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import Q

from bench.synthetic_sessions import synthetic_session, value_present
from memory_app.services.compaction import session_compact
from memory_app.window.models import ContextSummary
from memory_app.window.signals import span_compacted
from sessions_app.models import ChatSession, ChatTurn, Tenant
from sessions_app.services.turn_rollback import turn_rollback
from tests.memory_app.window_helpers import loopback_llm, new_session, record, record_synthetic

pytestmark = pytest.mark.django_db


def _active(session: ChatSession) -> list[ContextSummary]:
    return list(
        ContextSummary.objects.filter(session=session, superseded_by__isnull=True).order_by(
            "first_turn"
        )
    )


def _assert_consistent(session: ChatSession) -> None:
    """Active summaries tile the compacted turns: no overlap, no compacted turn outside
    a summary, no summarised turn left open."""
    active = _active(session)
    covered: set[int] = set()
    for summary in active:
        span = set(range(summary.first_turn, summary.last_turn + 1))
        assert not covered & span, "two active summaries cover the same turn"
        covered |= span
    live = ChatTurn.objects.filter(session=session, rolled_back=False)
    compacted = set(live.filter(compacted=True).values_list("turn_number", flat=True))
    open_ = set(live.filter(compacted=False).values_list("turn_number", flat=True))
    assert compacted <= covered
    assert not open_ & covered


def test_200_turn_session_compacts_all_but_the_window_and_keeps_90_percent(
    tenant: Tenant, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_URL = ""
    turns = synthetic_session(200, seed=6)
    session = new_session(tenant)
    record_synthetic(tenant, session, turns, capture=django_capture_on_commit_callbacks)

    # Compaction ran from the turn_recorded hook along the way: the open window never
    # grew past max_turns (10), and long sessions were condensed more than once.
    open_turns = ChatTurn.objects.filter(session=session, compacted=False).count()
    assert 6 <= open_turns <= 10
    assert ContextSummary.objects.filter(session=session, kind="condensed").count() >= 2
    # The session ends: an operator's `compact_session --force` leaves the last 6.
    out = StringIO()
    call_command("compact_session", str(session.pk), "--force", stdout=out)
    assert out.getvalue().startswith("compacted")

    session.refresh_from_db()
    assert session.status == "compacted"
    numbers = list(
        ChatTurn.objects.filter(session=session)
        .order_by("turn_number")
        .values_list("turn_number", "compacted")
    )
    assert [n for n, _ in numbers] == list(range(1, 201)), "a turn was lost"
    assert [n for n, c in numbers if not c] == list(range(195, 201))
    _assert_consistent(session)
    active = _active(session)
    assert active[0].first_turn == 1 and active[-1].last_turn == 194
    assert len(active) <= 6

    stored = "\n".join(s.summary + "\n" + json.dumps(s.milestones) for s in active)
    planted = [v for turn in turns[:194] for v in turn.planted]
    kept = sum(1 for value in planted if value_present(value, stored))
    ratio = kept / len(planted)
    summary_only = sum(
        1 for v in planted if value_present(v, "\n".join(s.summary for s in active))
    ) / len(planted)
    print(
        f"\nretention over 194 compacted turns: {kept}/{len(planted)} planted mpns and "
        f"numbers = {ratio:.1%} (summary text alone: {summary_only:.1%}); "
        f"{len(active)} active summaries, {sum(s.tokens for s in active)} summary tokens"
    )
    assert ratio >= 0.9


def test_no_compaction_below_thresholds_and_rerun_is_a_no_op(tenant: Tenant) -> None:
    session = new_session(tenant)
    for i in range(10):
        record(tenant, session, f"question {i} about part AB-{1000 + i}", f"answer {i}")
    assert session_compact(session_id=session.pk).status == "not_due"
    record(tenant, session, "one more, part ZZ-4242", "fine")
    first = session_compact(session_id=session.pk)
    assert first.status == "compacted" and first.spans == [(1, 5)]
    again = session_compact(session_id=session.pk)
    assert again.status == "not_due"
    forced = session_compact(session_id=session.pk, force=True)
    assert forced.status == "nothing_to_compact"  # nothing older than the last 6 is open
    assert ContextSummary.objects.filter(session=session).count() == 1
    assert list(
        ChatTurn.objects.filter(session=session, compacted=True).values_list(
            "turn_number", flat=True
        )
    ) == [1, 2, 3, 4, 5]
    _assert_consistent(session)


def test_token_threshold_and_per_session_overrides(tenant: Tenant, settings: Any) -> None:
    settings.ENGRAM_COMPACT_MAX_TOKENS = 300
    session = new_session(tenant)
    ChatSession.objects.filter(pk=session.pk).update(compact_keep_last_turns=2)
    long_answer = "The XPS-9530 ships with 32 GB of RAM and a 15.6 inch screen. " * 8
    for i in range(3):
        record(tenant, session, f"tell me about option {i}", long_answer)
    result = session_compact(session_id=session.pk)
    assert result.reason == "max_tokens" and result.spans == [(1, 1)]

    other = new_session(tenant)
    ChatSession.objects.filter(pk=other.pk).update(compact_max_turns=3, compact_keep_last_turns=1)
    for i in range(4):
        record(tenant, other, f"q{i}", f"a{i}")
    result = session_compact(session_id=other.pk)
    assert result.reason == "max_turns" and result.spans == [(1, 3)]


def test_rolled_back_turns_are_neither_summarised_nor_flagged(tenant: Tenant) -> None:
    session = new_session(tenant)
    for i in range(1, 13):
        record(tenant, session, f"turn {i} mentions part RB-{7000 + i}", f"ok {i}")
    turn_rollback(tenant=tenant, session_id=session.pk, turn_number=12)
    record(tenant, session, "turn 13 mentions part RB-7013", "ok 13")
    result = session_compact(session_id=session.pk, force=True)
    # Live turns: 1..11, 13; the last 6 live are 7..11 and 13.
    assert result.spans == [(1, 6)]
    summary = _active(session)[0]
    items = {item["mpn"] for item in summary.milestones["items"]}
    assert items == {f"RB-{7000 + i}" for i in range(1, 7)}
    assert not ChatTurn.objects.get(session=session, turn_number=12).compacted
    assert ChatTurn.objects.count() == 13


def test_milestones_capture_selections_constraints_commitments_questions(tenant: Tenant) -> None:
    session = new_session(tenant)
    record(tenant, session, "I need 12 units of the Dell P2723DE, budget $4,800 total.",
           "I'll check stock for the P2723DE tomorrow and get back to you.")  # fmt: skip
    record(tenant, session, "Please add P2723DE to the cart, 12 of them.",
           "Added. Do you also need docking stations?")  # fmt: skip
    record(tenant, session, "We decided to go with the WD19S-180W dock, delivery by 2026-03-14.",
           "Great choice.", intent={"intent": "add_to_cart", "mpn": "WD19S-180W"})  # fmt: skip
    for i in range(6):
        record(tenant, session, f"filler {i}", "fine")
    session_compact(session_id=session.pk, force=True)
    milestones = _active(session)[0].milestones
    assert {i["mpn"] for i in milestones["items"]} >= {"P2723DE", "WD19S-180W"}
    assert {s["mpn"] for s in milestones["selections"]} == {"P2723DE", "WD19S-180W"}
    kinds = {(c["kind"], c["value"]) for c in milestones["constraints"]}
    assert ("budget", "$4,800") in kinds and ("deadline", "2026-03-14") in kinds
    assert ("quantity", "12 units") in kinds
    assert any("get back to you" in c["text"] for c in milestones["commitments"])
    assert any("docking stations" in q["text"] for q in milestones["open_questions"])
    assert any("WD19S-180W" in d["text"] for d in milestones["decisions"])


def test_span_compacted_is_announced_after_commit(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    heard: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        heard.append(kwargs)

    span_compacted.connect(receiver, dispatch_uid="test-span")
    try:
        session = new_session(tenant)
        for i in range(11):
            record(tenant, session, f"question {i} part SC-{100 + i}", "answer")
        with django_capture_on_commit_callbacks(execute=True):
            session_compact(session_id=session.pk)
    finally:
        span_compacted.disconnect(dispatch_uid="test-span")
    assert len(heard) == 1
    event = heard[0]
    assert (event["first_turn"], event["last_turn"]) == (1, 5)
    assert event["session_id"] == session.pk and event["tenant_id"] == tenant.pk
    assert "SC-100" in event["summary"] + json.dumps(event["milestones"])


def test_llm_summary_uses_the_extractive_draft_and_records_its_cost(
    tenant: Tenant, settings: Any
) -> None:
    with loopback_llm("- [t1] user wants part LL-1001 under $900") as llm:
        settings.ENGRAM_LLM_URL = llm.url
        settings.ENGRAM_LLM_API_KEY = "sk-test"
        settings.ENGRAM_LLM_MODEL = "gpt-4o-mini"
        session = new_session(tenant)
        for i in range(11):
            record(tenant, session, f"I want part LL-{1001 + i} under ${900 + i}", "Noted.")
        session_compact(session_id=session.pk)
    summary = _active(session)[0]
    assert summary.method == "llm"
    assert summary.summary == "- [t1] user wants part LL-1001 under $900"
    assert (summary.llm_input_tokens, summary.llm_output_tokens) == (321, 45)
    assert summary.llm_model == "gpt-4o-mini"
    assert summary.llm_cost_usd is not None and summary.llm_cost_usd > 0
    (call,) = llm.requests
    assert call["path"] == "/v1/chat/completions" and call["auth"] == "Bearer sk-test"
    draft = call["body"]["messages"][1]["content"]
    assert "[t1] U: I want part LL-1001" in draft  # the extractive draft is the input
    # Milestones come from the turns, not from the LLM's prose.
    assert len(summary.milestones["items"]) == 5


def test_llm_failure_falls_back_to_extractive_and_says_why(tenant: Tenant, settings: Any) -> None:
    with loopback_llm("unused", status=500) as llm:
        settings.ENGRAM_LLM_URL = llm.url
        session = new_session(tenant)
        for i in range(11):
            record(tenant, session, f"I want part FB-{1001 + i}", "Noted.")
        session_compact(session_id=session.pk)
    summary = _active(session)[0]
    assert summary.method == "extractive" and "FB-1001" in summary.summary
    assert "500" in summary.llm_error


def test_condensing_merges_oldest_summaries_and_unions_milestones(
    tenant: Tenant, settings: Any
) -> None:
    settings.ENGRAM_COMPACT_MAX_SUMMARIES = 3
    session = new_session(tenant)
    ChatSession.objects.filter(pk=session.pk).update(compact_max_turns=3, compact_keep_last_turns=1)
    for i in range(1, 16):
        record(tenant, session, f"turn {i}: part CD-{100 + i} costs ${i * 100}", "ok")
        session_compact(session_id=session.pk)
    active = _active(session)
    assert len(active) <= 3
    condensed = [s for s in active if s.kind == "condensed"]
    assert condensed and condensed[0].first_turn == 1
    merged = ContextSummary.objects.filter(superseded_by__isnull=False, session=session)
    assert merged.exists()  # the older summaries are kept, pointing at their replacement
    items = {i["mpn"] for s in active for i in s.milestones["items"]}
    compacted = ChatTurn.objects.filter(session=session, compacted=True).count()
    assert items == {f"CD-{100 + i}" for i in range(1, compacted + 1)}
    _assert_consistent(session)


def test_admin_action_compacts_now(tenant: Tenant, admin_client: Any) -> None:
    session = new_session(tenant)
    for i in range(8):
        record(tenant, session, f"question {i} part AD-{100 + i}", "answer")
    response = admin_client.post(
        "/admin/sessions_app/chatsession/",
        {"action": "compact_now", "_selected_action": [str(session.pk)]},
        follow=True,
    )
    assert response.status_code == 200
    assert b"Compacted 1 session" in response.content
    assert ContextSummary.objects.filter(session=session, first_turn=1, last_turn=2).exists()
    summaries = admin_client.get("/admin/memory_app/contextsummary/")
    assert summaries.status_code == 200 and str(session.pk).encode() in summaries.content


def test_an_episode_of_imported_history_is_dated_by_its_turns(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    """The episodic memory of a compacted span happened when its turns did: a history
    imported years later is not dated by its compaction."""
    from memory_app.models import Memory

    session = new_session(tenant)
    for i in range(11):
        number = record(tenant, session, f"question {i} about part EP-{300 + i}", "answer")
        ChatTurn.objects.filter(session=session, turn_number=number).update(
            occurred_at=datetime(2023, 5, 1 + i, 9, tzinfo=UTC)
        )
    with django_capture_on_commit_callbacks(execute=True):
        session_compact(session_id=session.pk)
    span = ContextSummary.objects.get(session=session, kind="span")
    episode = Memory.objects.get(tenant=tenant, type="episodic", source="system_generated")
    assert episode.occurred_at == datetime(2023, 5, span.last_turn, 9, tzinfo=UTC)


def test_compact_command_unknown_session(db: None) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("compact_session", "00000000-0000-0000-0000-000000000000")
    assert not ChatTurn.objects.filter(Q(compacted=True)).exists()


def test_a_compacted_span_becomes_one_episodic_memory_of_the_user(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    """Seed 001: after compaction, long-term memory is extracted from the summary. The
    hook runs the (eager) task after commit; running it again adds nothing."""
    from memory_app.models import Memory
    from memory_app.services.extraction import memories_extract_from_span

    session = new_session(tenant)
    for i in range(11):
        record(tenant, session, f"question {i} about part EP-{300 + i}", "answer")
    with django_capture_on_commit_callbacks(execute=True):
        session_compact(session_id=session.pk)
    episodes = Memory.objects.filter(tenant=tenant, type="episodic", source="system_generated")
    assert episodes.count() == 1
    episode = episodes.get()
    span = ContextSummary.objects.get(session=session, kind="span")
    assert episode.user_id == session.user_id and episode.session_id == session.pk
    assert episode.content == " ".join(span.summary.split())  # memory text is normalised
    assert "EP-300" in episode.content + json.dumps(episode.structured)
    again = memories_extract_from_span(summary_id=span.pk)
    assert [result.action for result in again] == ["duplicate"]
    assert episodes.count() == 1
