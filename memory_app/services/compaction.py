"""Compaction: the older span of a session's window becomes a summary with milestones.

Safe to run twice, safe to kill (ARCHITECTURE: background work is idempotent):

- One compaction per session at a time: a PostgreSQL advisory lock keyed on the session
  is held for the whole run (summarising, maybe an LLM call, then writing). A killed
  worker's connection closes and PostgreSQL releases the lock with it.
- The span is re-read under the session's row lock inside the write transaction, and the
  summary row and the `compacted` flags of its turns are written in that ONE
  transaction: a crash half-way leaves no summary and no flag, and the next run does it
  again. `(session, first_turn, last_turn)` is unique, so even a bug around the lock
  cannot store a span twice.
- Turns are flagged, never deleted; the turn log keeps everything.

Summaries outgrow their share on long sessions: when there are more active summaries
than ENGRAM_COMPACT_MAX_SUMMARIES, or more tokens than ENGRAM_COMPACT_SUMMARY_TOKEN_CAP,
the oldest are condensed into one (milestones unioned) and point at it.

Writes to `chat_turn.compacted` and `chat_session.status` are the two sessions_app
fields this service owns by design (sessions_app has no service for them and must not
import us).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction

from memory_app.llm import LLMEndpoint, LLMError
from memory_app.metrics import compaction_observe
from memory_app.services.llm_steps import STEP_SUMMARIZE, llm_step_record
from memory_app.window.milestones import extract_milestones, merge_milestones
from memory_app.window.models import ContextSummary, SummaryKind, SummaryMethod
from memory_app.window.selectors import (
    active_summaries,
    compaction_due,
    turn_text_tokens,
    window_thresholds,
)
from memory_app.window.signals import span_compacted
from memory_app.window.summarize import (
    abstractive_summary,
    condense_summaries,
    extractive_summary,
    summary_budget,
)
from memory_app.window.text import TurnText
from memory_app.window.tokens import count_tokens
from sessions_app.locks import advisory_lock
from sessions_app.selectors.sessions import session_get_by_id, session_lock
from sessions_app.selectors.turns import turn_workspace_before, turns_live, turns_open
from sessions_app.services.lifecycle import session_mark_compacted, turns_mark_compacted

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, ChatTurn

logger = logging.getLogger(__name__)

MAX_SPAN_TURNS = 40  # a long backlog is summarised in spans of at most this many turns


@dataclass
class CompactionResult:
    session_id: uuid.UUID
    status: str  # compacted | not_due | nothing_to_compact | busy
    reason: str | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)
    turns_compacted: int = 0
    summary_ids: list[int] = field(default_factory=list)
    condensed_ids: list[int] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)


@dataclass
class SummaryDraft:
    text: str
    method: str
    tokens: int
    llm: dict[str, Any] = field(default_factory=dict)


def summary_draft(draft: str, *, max_tokens: int, turn_id: int | None) -> SummaryDraft:
    """The extractive draft, rewritten by the LLM when one is configured. The call, won
    or lost, is recorded as an `engram.summarize` step of turn `turn_id` (the newest turn
    the summary covers), so that its cost counts against the session."""
    endpoint = LLMEndpoint.from_settings()
    if endpoint is None:
        return SummaryDraft(draft, SummaryMethod.EXTRACTIVE, count_tokens(draft))
    try:
        result = abstractive_summary(draft, endpoint=endpoint, max_tokens=max_tokens)
    except LLMError as exc:
        logger.warning("compaction: LLM unavailable, keeping the extractive summary: %s", exc)
        if turn_id is not None:
            llm_step_record(turn_id=turn_id, step_type=STEP_SUMMARIZE, outcome=exc)
        return SummaryDraft(
            draft, SummaryMethod.EXTRACTIVE, count_tokens(draft), {"llm_error": str(exc)[:500]}
        )
    step = (
        None
        if turn_id is None
        else llm_step_record(turn_id=turn_id, step_type=STEP_SUMMARIZE, outcome=result)
    )
    cost = None if step is None else step.cost_usd
    return SummaryDraft(
        result.text,
        SummaryMethod.LLM,
        count_tokens(result.text),
        {
            "llm_model": result.model,
            "llm_input_tokens": result.input_tokens,
            "llm_output_tokens": result.output_tokens,
            "llm_cost_usd": cost,
            "llm_duration_ms": result.duration_ms,
        },
    )


def _compactable_turns(session: ChatSession, keep_last: int) -> list[ChatTurn]:
    """Open turns older than the last `keep_last` live (not rolled back) turns."""
    live = turns_live(session_id=session.pk)
    kept = list(live.order_by("-turn_number").values_list("turn_number", flat=True)[:keep_last])
    older = live.filter(compacted=False)
    if keep_last:
        if not kept:
            return []
        older = older.filter(turn_number__lt=min(kept))
    return list(older.order_by("turn_number"))


def _cart_around(session: ChatSession, span: list[ChatTurn]) -> tuple[list[Any], list[Any]]:
    """The cart as the turn before the span left it, and as the span's last turn left it
    (each turn stores the context it left behind, `context_after`)."""
    before = turn_workspace_before(session_id=session.pk, turn_number=span[0].turn_number)
    after = span[-1].context_after
    return (
        list((before or {}).get("selections") or []),
        list((after or {}).get("selections") or []),
    )


def _write_span(
    session: ChatSession, span: list[ChatTurn], draft: SummaryDraft, milestones: dict[str, Any]
) -> ContextSummary | None:
    """Summary row + compacted flags + session status, in one transaction. None when
    the span is no longer what it was (compacted or rolled back meanwhile)."""
    numbers = [turn.turn_number for turn in span]
    with transaction.atomic():
        session_lock(session_id=session.pk)
        still_open = turns_open(session_id=session.pk).filter(turn_number__in=numbers).count()
        if still_open != len(numbers):
            return None
        summary = ContextSummary.objects.create(
            tenant_id=session.tenant_id,
            session=session,
            first_turn=numbers[0],
            last_turn=numbers[-1],
            turn_count=len(numbers),
            kind=SummaryKind.SPAN,
            summary=draft.text,
            milestones=milestones,
            method=draft.method,
            tokens=draft.tokens,
            source_tokens=sum(turn_text_tokens(turn) for turn in span),
            last_turn_at=span[-1].created_at,
            **draft.llm,
        )
        # A crash from here on rolls back the summary and the flags together.
        turns_mark_compacted(session_id=session.pk, turn_numbers=numbers)
        session_mark_compacted(session_id=session.pk)
        payload = {
            "sender": ContextSummary,
            "tenant_id": session.tenant_id,
            "session_id": session.pk,
            "summary_id": summary.pk,
            "first_turn": summary.first_turn,
            "last_turn": summary.last_turn,
            "summary": summary.summary,
            "milestones": summary.milestones,
        }
        transaction.on_commit(lambda: span_compacted.send(**payload))
    return summary


def _condense(session: ChatSession) -> list[int]:
    """Merge the oldest active summaries while they exceed their count or token cap."""
    max_summaries = max(2, settings.ENGRAM_COMPACT_MAX_SUMMARIES)
    token_cap = settings.ENGRAM_COMPACT_SUMMARY_TOKEN_CAP
    created: list[int] = []
    for _ in range(10):  # each round strictly reduces the count; bounded anyway
        active = active_summaries(session)
        total = sum(s.tokens for s in active)
        if len(active) < 2 or (len(active) <= max_summaries and total <= token_cap):
            break
        keep_newest = max(1, max_summaries // 2)
        merge = active[: max(2, len(active) - keep_newest)]
        budget = max(80, token_cap // 3)
        newest_turn = (
            turns_live(session_id=session.pk)
            .order_by("-turn_number")
            .values_list("pk", flat=True)
            .first()
        )
        draft = summary_draft(
            condense_summaries([s.summary for s in merge], budget),
            max_tokens=budget,
            turn_id=newest_turn,
        )
        with transaction.atomic():
            session_lock(session_id=session.pk)
            ids = [s.pk for s in merge]
            if ContextSummary.objects.filter(pk__in=ids, superseded_by__isnull=True).count() != len(
                ids
            ):
                break
            condensed = ContextSummary.objects.create(
                tenant_id=session.tenant_id,
                session=session,
                first_turn=merge[0].first_turn,
                last_turn=merge[-1].last_turn,
                turn_count=sum(s.turn_count for s in merge),
                kind=SummaryKind.CONDENSED,
                summary=draft.text,
                milestones=merge_milestones([s.milestones for s in merge]),
                method=draft.method,
                tokens=draft.tokens,
                source_tokens=sum(s.tokens for s in merge),
                last_turn_at=merge[-1].last_turn_at,
                **draft.llm,
            )
            ContextSummary.objects.filter(pk__in=ids).update(superseded_by=condensed)
        created.append(condensed.pk)
    return created


def session_compact(
    *, session_id: uuid.UUID | str, force: bool = False, tenant_id: int | None = None
) -> CompactionResult:
    """Compact the session's older span if a threshold is crossed (or `force`), then
    condense old summaries if they outgrew their share."""
    session = session_get_by_id(session_id=session_id, tenant_id=tenant_id)
    started = time.perf_counter()
    result = _session_compact(session, force)
    compaction_observe(
        policy=session.context_policy,
        status=result.status,
        seconds=time.perf_counter() - started,
        summary_ids=[*result.summary_ids, *result.condensed_ids],
    )
    return result


def _session_compact(session: ChatSession, force: bool) -> CompactionResult:
    result = CompactionResult(session_id=session.pk, status="nothing_to_compact")
    with advisory_lock(f"compaction:{session.pk}") as acquired:
        if not acquired:
            result.status = "busy"  # another run holds it and will see the same turns
            return result
        thresholds = window_thresholds(session)
        reason = compaction_due(session, thresholds)
        result.reason = reason or ("forced" if force else None)
        if reason is None and not force:
            result.status = "not_due"
            return result
        span_turns = _compactable_turns(session, thresholds.keep_last_turns)
        for start in range(0, len(span_turns), MAX_SPAN_TURNS):
            span = span_turns[start : start + MAX_SPAN_TURNS]
            texts = [
                TurnText(t.turn_number, t.user_message, t.assistant_response, t.intent_data or {})
                for t in span
            ]
            source_tokens = sum(turn_text_tokens(turn) for turn in span)
            budget = summary_budget(source_tokens)
            draft = summary_draft(
                extractive_summary(texts, budget), max_tokens=budget, turn_id=span[-1].pk
            )
            cart_before, cart_after = _cart_around(session, span)
            milestones = extract_milestones(texts, cart_before=cart_before, cart_after=cart_after)
            summary = _write_span(session, span, draft, milestones)
            if summary is None:
                break
            result.status = "compacted"
            result.spans.append((summary.first_turn, summary.last_turn))
            result.summary_ids.append(summary.pk)
            result.turns_compacted += len(span)
            result.methods.append(summary.method)
        result.condensed_ids = _condense(session)
    return result
