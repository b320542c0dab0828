"""Taking candidate memories out of a recorded turn's user message.

Two extractors, chosen by settings:
- heuristic (always available, offline): first-person patterns for preferences ("I
  prefer…", "please keep it short", "call me…", "I like/love/hate…") and facts ("I'm
  allergic to…", "my budget is…", "I live in…", "I work at…", "my name is…");
- LLM (when ENGRAM_LLM_URL is set): an OpenAI-compatible `/chat/completions` call asking
  for JSON, through `memory_app.llm` (the client summaries use too). Any failure (down,
  timeout, bad JSON) falls back to the heuristic, so a turn never loses its extraction
  because the LLM hiccupped.

Every candidate goes through `memory_add`, so re-running on the same turn adds nothing
(exact duplicates by hash). The LLM call, won or lost, is recorded as an `engram.extract`
step of the turn it read, so Engram's own spend counts against the session.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from memory_app.llm import ChatCompletion, LLMEndpoint, LLMError, chat_complete
from memory_app.models import MemorySource, MemoryType
from memory_app.services.llm_steps import STEP_EXTRACT, llm_step_record
from memory_app.services.memories import AddResult, MemoryDraft, memory_add_many
from sessions_app.selectors.turns import turn_get_by_id

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 8000
MAX_CANDIDATES = 20


@dataclass
class Candidate:
    type: str
    content: str
    summary: str = ""
    tags: list[str] = field(default_factory=list)
    structured: dict[str, Any] = field(default_factory=dict)
    importance: float = 0.5
    confidence: float = 0.8


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    type: str
    key: str
    summary: str
    tags: tuple[str, ...]
    importance: float
    confidence: float


def _rule(
    regex: str,
    memory_type: str,
    key: str,
    summary: str,
    tags: tuple[str, ...],
    importance: float,
    confidence: float = 0.8,
) -> _Rule:
    return _Rule(
        re.compile(regex, re.IGNORECASE), memory_type, key, summary, tags, importance, confidence
    )


_P, _F = MemoryType.PREFERENCE, MemoryType.FACT
_VALUE = r"(?P<value>[^.!?;\n]{2,200})"
RULES: tuple[_Rule, ...] = (
    _rule(rf"\bI(?:'d| would)? (?:really )?prefer {_VALUE}", _P, "prefers", "User prefers {v}",
          ("preference",), 0.7),
    _rule(r"\bplease (?:keep (?:it|answers|your answers|replies)|be) (?P<value>short|brief|"
          r"concise|succinct|detailed|formal|casual|funny|humorous)\b", _P, "response_style",
          "User wants answers {v}", ("preference", "style"), 0.8, 0.9),
    _rule(r"\bcall me (?P<value>[A-Z][\w'-]{0,40}(?: [A-Z][\w'-]{0,40})?)", _P,
          "preferred_name", "User wants to be called {v}", ("preference", "name"), 0.8, 0.9),
    _rule(rf"\bI (?:really )?(?P<verb>like|love|enjoy|hate|dislike|can't stand) {_VALUE}", _P,
          "likes", "User {verb} {v}", ("preference",), 0.6, 0.75),
    _rule(rf"\bI(?:'m| am) allergic to {_VALUE}", _F, "allergy", "User is allergic to {v}",
          ("fact", "health", "allergy"), 0.95, 0.9),
    _rule(rf"\bmy budget (?:is|of|would be) {_VALUE}", _F, "budget", "User's budget is {v}",
          ("fact", "budget"), 0.7, 0.85),
    _rule(rf"\bI live in {_VALUE}", _F, "home", "User lives in {v}", ("fact", "location"),
          0.7, 0.85),
    _rule(rf"\bI work (?:at|for) {_VALUE}", _F, "employer", "User works at {v}",
          ("fact", "work"), 0.6, 0.85),
    _rule(r"\bmy name is (?P<value>[A-Z][\w'-]{0,40}(?: [A-Z][\w'-]{0,40})?)", _F, "name",
          "User's name is {v}", ("fact", "name"), 0.8, 0.9),
)  # fmt: skip

_SENTENCE = re.compile(r"[^.!?;\n]+[.!?]?")
# "I live in Lisbon and I work at Initech" holds two memories: split before a new subject.
_CLAUSE = re.compile(r",?\s+(?:and|but)\s+(?=(?:I|my)\b)", re.IGNORECASE)


def extract_heuristic(message: str) -> list[Candidate]:
    """Rule-based candidates: the sentence as the user said it, plus a summary."""
    out: list[Candidate] = []
    clauses = [
        clause
        for sentence in _SENTENCE.findall(message[:MAX_MESSAGE_CHARS])
        for clause in _CLAUSE.split(sentence)
    ]
    for sentence in clauses:
        sentence = sentence.strip()
        for rule in RULES:
            match = rule.pattern.search(sentence)
            if not match:
                continue
            value = match.group("value").strip().rstrip(",")
            verb = match.groupdict().get("verb") or ""
            verb_s = {"can't stand": "can't stand"}.get(verb.lower(), f"{verb.lower()}s")
            out.append(
                Candidate(
                    type=rule.type,
                    content=sentence.rstrip(".!?"),
                    summary=rule.summary.format(v=value, verb=verb_s),
                    tags=list(rule.tags),
                    structured={rule.key: value},
                    importance=rule.importance,
                    confidence=rule.confidence,
                )
            )
            break  # one memory per sentence: the first (most specific) rule wins
    return out[:MAX_CANDIDATES]


LLM_SYSTEM_PROMPT = (
    "You extract long-term memories about the user from one message they wrote. "
    "Keep only durable preferences and facts about the user (not questions, not "
    "small talk). Answer with JSON only: "
    '{"memories": [{"type": "preference|fact|profile|episodic|semantic|procedural", '
    '"content": "the statement in the user\'s words", "summary": "third-person summary", '
    '"tags": ["..."], "structured": {}, "importance": 0.0-1.0, "confidence": 0.0-1.0}]}. '
    'Answer {"memories": []} when there is nothing worth remembering.'
)


def extract_llm(message: str, endpoint: LLMEndpoint) -> tuple[list[Candidate], ChatCompletion]:
    """Candidates from the LLM, with the call that found them; raises `LLMError` when the
    call fails or its answer is not the JSON asked for (with what the call cost)."""
    completion = chat_complete(
        endpoint,
        [
            {"role": "system", "content": LLM_SYSTEM_PROMPT},
            {"role": "user", "content": message[:MAX_MESSAGE_CHARS]},
        ],
        json_object=True,
    )
    try:
        items = json.loads(completion.text)["memories"]
        if not isinstance(items, list):
            raise TypeError("'memories' is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        raise LLMError(
            f"{type(exc).__name__}: {exc}",
            model=completion.model,
            duration_ms=completion.duration_ms,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
        ) from exc
    candidates = [c for c in (_candidate_from_llm(item) for item in items[:MAX_CANDIDATES]) if c]
    return candidates, completion


def _unit(value: Any, default: float) -> float:
    try:
        return min(1.0, max(0.0, float(value)))
    except (TypeError, ValueError):
        return default


def _candidate_from_llm(item: Any) -> Candidate | None:
    """The LLM's output is untrusted input: anything malformed is dropped, not stored."""
    if not isinstance(item, dict):
        return None
    memory_type = item.get("type")
    content = item.get("content")
    if memory_type not in MemoryType.values or not isinstance(content, str):
        return None
    content = content.strip()[:2000]
    if not content:
        return None
    raw_tags, raw_structured, raw_summary = (
        item.get("tags"),
        item.get("structured"),
        item.get("summary"),
    )
    tags: list[Any] = raw_tags if isinstance(raw_tags, list) else []
    structured: dict[str, Any] = raw_structured if isinstance(raw_structured, dict) else {}
    summary: str = raw_summary if isinstance(raw_summary, str) else ""
    return Candidate(
        type=memory_type,
        content=content,
        summary=summary[:2000],
        tags=[str(tag)[:64] for tag in tags if str(tag).strip()][:20],
        structured=structured,
        importance=_unit(item.get("importance"), 0.5),
        confidence=_unit(item.get("confidence"), 0.7),
    )


def extraction_may_find(message: str) -> bool:
    """Whether `memories_extract_from_turn` could find anything in this message: with an
    LLM, any non-blank message; without, only one a heuristic rule matches. Asked before
    enqueueing, so that turns with nothing to remember cost no broker round trip."""
    if not message.strip():
        return False
    return bool(settings.ENGRAM_LLM_URL) or bool(extract_heuristic(message))


def memories_extract_from_turn(*, turn_id: int) -> list[AddResult]:
    """Extract and add the memories of one turn. Safe to run twice."""
    turn = turn_get_by_id(turn_id=turn_id)
    if turn is None or not turn.user_message.strip():
        return []
    source = MemorySource.HEURISTIC_EXTRACTION
    candidates: list[Candidate] = []
    endpoint = LLMEndpoint.from_settings()
    if endpoint is not None:
        # The call is one of the session's steps (`engram.extract`), won or lost.
        try:
            candidates, completion = extract_llm(turn.user_message, endpoint)
            llm_step_record(turn_id=turn.pk, step_type=STEP_EXTRACT, outcome=completion)
            source = MemorySource.LLM_EXTRACTION
        except LLMError as exc:
            llm_step_record(turn_id=turn.pk, step_type=STEP_EXTRACT, outcome=exc)
            logger.warning("LLM extraction failed for turn %s, using rules: %s", turn_id, exc)
            candidates = extract_heuristic(turn.user_message)
    else:
        candidates = extract_heuristic(turn.user_message)
    if not candidates:
        return []
    session = turn.session
    drafts = [
        MemoryDraft(
            user_id=session.user_id,
            agent_id=session.agent_id,
            type=candidate.type,
            content=candidate.content,
            summary=candidate.summary,
            structured={
                **candidate.structured,
                "extracted_from": {"turn_id": turn.pk, "turn_number": turn.turn_number},
            },
            tags=candidate.tags,
            importance=candidate.importance,
            confidence=candidate.confidence,
            source=source,
            session_id=session.pk,
        )
        for candidate in candidates
    ]
    return memory_add_many(tenant=turn.tenant, drafts=drafts)


def memories_extract_from_span(*, summary_id: int) -> list[AddResult]:
    """Seed 001: once older turns are compressed, what they were about becomes an
    episodic memory of the user ("In session …, turns 1-6: …"). The summary's text is
    the memory, so a re-run (or a retried task) answers `duplicate`."""
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
        summary=f"Turns {span.first_turn}-{span.last_turn} of a session with {session.agent_id}",
        structured={
            "extracted_from": {
                "summary_id": span.pk,
                "first_turn": span.first_turn,
                "last_turn": span.last_turn,
            },
            **{key: milestones[key] for key in ("mpns", "constraints") if key in milestones},
        },
        tags=["episode", "compaction"],
        importance=0.4,
        confidence=0.8,
        source=MemorySource.SYSTEM_GENERATED,
        session_id=session.pk,
    )
    return memory_add_many(tenant=span.tenant, drafts=[draft])
