"""Taking memories out of a recorded turn's user message.

Two extractors, chosen by settings (both in `memory_app.extraction`):
- heuristic (always available, offline): stated facts about the user (home, work,
  family, pets, health, name…) and explicit durable preferences, not reactions;
- LLM (when ENGRAM_LLM_URL is set): an OpenAI-compatible `/chat/completions` call asking
  for JSON facts with their time, through `memory_app.llm` (the client summaries use
  too). Any failure (down, timeout, bad JSON) falls back to the heuristic, so a turn
  never loses its extraction because the LLM hiccupped.

One message states each subject once: of its drafts that state the same subject
(memory_app.subjects), the last one said is kept ("I work as a teacher. Actually no, I
work as a pilot." keeps the pilot; "I moved to Porto last week, I live in Porto now"
keeps one).
A message that says a value has ended ("I quit nursing", memory_app.subject_endings) ends
the user's current memories of it, at the turn's time.

Every memory carries its time: `occurred_at` is when the fact happened when the LLM
could tell ("moved to Lisbon last May"), else when the turn was recorded. Every
candidate goes through `memory_add_many`, so re-running on the same turn adds nothing
(exact duplicates by hash). The LLM call, won or lost, is recorded as an
`engram.extract` step of the turn it read, so Engram's own spend counts against the
session.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction

from memory_app.extraction.candidates import Candidate
from memory_app.extraction.heuristic import MAX_MESSAGE_CHARS, extract_heuristic
from memory_app.extraction.llm import llm_messages, parse_llm_memories
from memory_app.llm import ChatCompletion, LLMEndpoint, LLMError, chat_complete
from memory_app.models import MemorySource, MemoryType, RelationType
from memory_app.services.conversation import conversation_lock
from memory_app.services.llm_steps import STEP_EXTRACT, llm_step_record
from memory_app.services.memories import (
    AddResult,
    MemoryDraft,
    memory_add_many,
    memory_gate_reasons,
)
from memory_app.services.supersession import draft_statement, memories_end_ceased
from memory_app.subject_endings import Ceased, ceased_values
from sessions_app.selectors.turns import turn_get_by_id, turn_ids_live, turns_last_occurred

__all__ = [
    "Candidate",
    "extract_heuristic",
    "extract_llm",
    "extraction_may_find",
    "memories_extract_from_span",
    "memories_extract_from_turn",
    "memories_extract_from_turns",
]

logger = logging.getLogger(__name__)


def extract_llm(
    message: str, endpoint: LLMEndpoint, *, written_at: datetime
) -> tuple[list[Candidate], ChatCompletion]:
    """Candidates from the LLM, with the call that found them; raises `LLMError` when the
    call fails or its answer is not the JSON asked for (with what the call cost)."""
    completion = chat_complete(
        endpoint,
        llm_messages(message[:MAX_MESSAGE_CHARS], written_at=written_at),
        json_object=True,
    )
    try:
        candidates = parse_llm_memories(completion.text, written_at=written_at)
    except (ValueError, RecursionError) as exc:  # json.JSONDecodeError is a ValueError
        raise LLMError(
            f"{type(exc).__name__}: {exc}",
            model=completion.model,
            duration_ms=completion.duration_ms,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
        ) from exc
    return candidates, completion


def extraction_may_find(message: str) -> bool:
    """Whether `memories_extract_from_turn` could find anything in this message: with an
    LLM, any non-blank message; without, only one a heuristic rule matches. Asked before
    enqueueing, so that turns with nothing to remember cost no broker round trip."""
    if not message.strip():
        return False
    return (
        bool(settings.ENGRAM_LLM_URL)
        or bool(extract_heuristic(message))
        or bool(ceased_values(message[:MAX_MESSAGE_CHARS]))
    )


def memories_extract_from_turn(*, turn_id: int) -> list[AddResult]:
    """Extract and add the memories of one turn. Safe to run twice."""
    turn = turn_get_by_id(turn_id=turn_id)
    if turn is None:
        return []
    drafts = _drafts_of_turn(turn)
    if not drafts and not _ceased_of_turn(turn):
        return []
    return _add_of_live_turns(turn.tenant, [(turn, drafts)])


def memories_extract_from_turns(*, turn_ids: Sequence[int]) -> list[AddResult]:
    """Extract the memories of several turns and add them with one `memory_add_many` per
    tenant (one embedding call for all their facts). Safe to run twice."""
    by_tenant: dict[int, tuple[Any, list[tuple[Any, list[MemoryDraft]]]]] = {}
    for turn_id in turn_ids:
        turn = turn_get_by_id(turn_id=turn_id)
        drafts = _drafts_of_turn(turn) if turn is not None else []
        if turn is not None and (drafts or _ceased_of_turn(turn)):
            by_tenant.setdefault(turn.tenant_id, (turn.tenant, []))[1].append((turn, drafts))
    results: list[AddResult] = []
    for tenant, of_turns in by_tenant.values():
        results.extend(_add_of_live_turns(tenant, of_turns))
    return results


def _add_of_live_turns(
    tenant: Any, of_turns: list[tuple[Any, list[MemoryDraft]]]
) -> list[AddResult]:
    """Add the drafts of the turns still live, under their sessions' conversation locks:
    extraction reads a turn and may then wait seconds for an LLM, so a rollback or an
    erasure that committed meanwhile leaves nothing of it behind, and one that comes
    later waits for this commit and deletes what it wrote. Then what the turns say has
    ended ends (module docstring)."""
    with transaction.atomic():
        conversation_lock([turn.session_id for turn, _ in of_turns])
        live = turn_ids_live(turn_ids=[turn.pk for turn, _ in of_turns])
        drafts = [draft for turn, drafts in of_turns if turn.pk in live for draft in drafts]
        results = memory_add_many(tenant=tenant, drafts=drafts) if drafts else []
        for turn, _ in of_turns:
            if turn.pk in live:
                memories_end_ceased(
                    tenant_id=tenant.pk,
                    user_id=turn.session.user_id,
                    ceased=_ceased_of_turn(turn),
                    at=turn.occurred_at,
                )
        return results


def _ceased_of_turn(turn: Any) -> list[Ceased]:
    return ceased_values(turn.user_message[:MAX_MESSAGE_CHARS])


def _drafts_of_turn(turn: Any) -> list[MemoryDraft]:
    """The memory drafts extracted from a turn's user message that pass the insertion
    gates (extraction is a guess, not a request: a draft below a gate is dropped)."""
    if not turn.user_message.strip():
        return []
    source, candidates = _candidates_of_turn(turn)
    session = turn.session
    stated_at = turn.occurred_at
    drafts = [
        MemoryDraft(
            user_id=session.user_id,
            agent_id=session.agent_id,
            type=candidate.type,
            content=candidate.content,
            summary=candidate.summary,
            structured={
                **candidate.structured,
                "stated_at": stated_at.isoformat(),
                "extracted_from": {"turn_id": turn.pk, "turn_number": turn.turn_number},
            },
            tags=candidate.tags,
            importance=candidate.importance,
            confidence=candidate.confidence,
            source=source,
            session_id=session.pk,
            occurred_at=candidate.occurred_at or stated_at,
        )
        for candidate in candidates
    ]
    return _last_per_subject([draft for draft in drafts if not memory_gate_reasons(draft)])


def _last_per_subject(drafts: list[MemoryDraft]) -> list[MemoryDraft]:
    """The drafts, each subject once: the last one that states it (module docstring)."""
    seen: set[str] = set()
    kept: list[MemoryDraft] = []
    for draft in reversed(drafts):
        statement = draft_statement(draft)
        if statement is not None:
            if statement.subject in seen:
                continue
            seen.add(statement.subject)
        kept.append(draft)
    return kept[::-1]


def _candidates_of_turn(turn: Any) -> tuple[str, list[Candidate]]:
    """The LLM's candidates when one is configured and answers, else the heuristic's.
    The call is one of the session's steps (`engram.extract`), won or lost."""
    endpoint = LLMEndpoint.from_settings()
    if endpoint is not None:
        try:
            candidates, completion = extract_llm(
                turn.user_message, endpoint, written_at=turn.occurred_at
            )
        except LLMError as exc:
            llm_step_record(turn_id=turn.pk, step_type=STEP_EXTRACT, outcome=exc)
            logger.warning("LLM extraction failed for turn %s, using rules: %s", turn.pk, exc)
        else:
            llm_step_record(turn_id=turn.pk, step_type=STEP_EXTRACT, outcome=completion)
            return MemorySource.LLM_EXTRACTION, candidates
    return MemorySource.HEURISTIC_EXTRACTION, extract_heuristic(turn.user_message)


def memories_extract_from_span(*, summary_id: int) -> list[AddResult]:
    """Seed 001: once older turns are compressed, what they were about becomes an
    episodic memory of the user. The span summary's text is the memory's content, so a
    re-run (or a retried task) answers `duplicate`. Its `summary` stays empty: the
    content is already the span's summary, and the context's line of a memory without
    one is the passage of its content that best answers the query. Which span it was
    ("Turns 1-6 of a session with shop") is `structured.span_label`, beside the turn
    numbers of `structured.extracted_from`."""
    from memory_app.models import ContextSummary

    summary = ContextSummary.objects.select_related("session", "tenant").filter(pk=summary_id)
    span = summary.first()
    if span is None or not span.summary.strip():
        return []
    session = span.session
    milestones = span.milestones or {}
    draft = MemoryDraft(
        user_id=session.user_id,
        agent_id=session.agent_id,
        type=MemoryType.EPISODIC,
        content=span.summary[:4000],
        structured={
            "span_label": span_label(span.first_turn, span.last_turn, session.agent_id),
            "extracted_from": {
                "summary_id": span.pk,
                "first_turn": span.first_turn,
                "last_turn": span.last_turn,
            },
            **{key: milestones[key] for key in ("items", "constraints") if key in milestones},
        },
        tags=["episode", "compaction"],
        importance=0.4,
        confidence=0.8,
        source=MemorySource.SYSTEM_GENERATED,
        session_id=session.pk,
        # An episode is dated by its conversation, not by when it was compacted.
        occurred_at=turns_last_occurred(
            session_id=span.session_id, first=span.first_turn, last=span.last_turn
        ),
        relations=[
            (RelationType.DERIVED_FROM, pk)
            for pk in _memories_of_turns(
                span.tenant_id, session.pk, span.first_turn, span.last_turn
            )
        ],
    )
    if memory_gate_reasons(draft):
        return []
    return memory_add_many(tenant=span.tenant, drafts=[draft])


def span_label(first_turn: int, last_turn: int, agent_id: str) -> str:
    """What a compaction episode's span was, in words (its `structured.span_label`)."""
    return f"Turns {first_turn}-{last_turn} of a session with {agent_id or 'an agent'}"


def _memories_of_turns(
    tenant_id: int, session_id: Any, first_turn: int, last_turn: int
) -> list[Any]:
    """Memories extracted from turns first..last of the session: what an episode made of
    that span is `derived_from` (seed 001's provenance)."""
    from memory_app.models import Memory

    return list(
        Memory.objects.filter(
            tenant_id=tenant_id,
            session_id=session_id,
            structured__extracted_from__turn_number__gte=first_turn,
            structured__extracted_from__turn_number__lte=last_turn,
        ).values_list("pk", flat=True)[:200]
    )
