"""LLM extraction: the prompt asking for the facts a message states about its writer,
each with its time, and the parser of the answer.

The answer is untrusted input. A reply that is not the JSON object asked for raises
`ValueError` (the caller falls back to the heuristic); inside a good reply, an item with
a missing or unknown field, or a date that does not parse or lies outside
[1900, the message's time + 5 years], is skipped on its own.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from memory_app.extraction.candidates import Candidate
from memory_app.models import MemoryType

MAX_CANDIDATES = 20
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST_AHEAD = timedelta(days=5 * 366)
# Memory types an LLM may propose; `policy` is a tenant's rule, never read off a chat.
LLM_TYPES = frozenset(
    str(t.value)
    for t in (
        MemoryType.FACT,
        MemoryType.PREFERENCE,
        MemoryType.PROFILE,
        MemoryType.EVENT,
        MemoryType.INTEREST,
    )
)

SYSTEM_PROMPT = """\
You extract long-term memories about the user from one message the user wrote.
Keep only what the user states about themself that stays true or matters later:
where they live, work or study; family members and pets (with names); allergies, diet
and health; their name and how to address them; occupation; possessions; dates such as
birthdays; events in their life (moved, started a job, got married); explicit durable
preferences ("I prefer window seats", "I'm vegetarian", "I hate cilantro").
Skip reactions to the conversation ("I like these ideas", "I love that!"), questions,
requests, hypotheticals and wishes, negated or conditional statements, and what other
people do or like.

Answer with one JSON object and nothing else:
{"memories": [{"type": "fact|preference|profile|event|interest",
  "content": "one self-contained statement in the third person, e.g. 'Moved to Lisbon'",
  "when": "when it happened or holds from, ISO 8601 (YYYY, YYYY-MM, YYYY-MM-DD or a \
full date-time), or null when the message does not say",
  "when_text": "the words that gave the time, e.g. 'last May', or null",
  "tags": ["short", "keywords"], "importance": 0.0-1.0, "confidence": 0.0-1.0}]}
Resolve relative times ("yesterday", "last May", "two years ago") against the time the
message was written, given below. Answer {"memories": []} when nothing is worth keeping."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*(?P<body>.*?)\s*```\s*$", re.DOTALL)
_PARTIAL_DATE = re.compile(r"^(?P<y>\d{4})(?:-(?P<m>\d{2}))?$")


def llm_messages(message: str, *, written_at: datetime) -> list[dict[str, str]]:
    """The chat messages of one extraction call: the rules, then the dated message."""
    stamp = written_at.astimezone(UTC)
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"Written at: {stamp.isoformat()} ({stamp:%A})\n\nMessage:\n{message}",
        },
    ]


def parse_llm_memories(text: str, *, written_at: datetime) -> list[Candidate]:
    """The candidates of an LLM's answer; `ValueError` when the answer as a whole is not
    the JSON asked for, malformed items skipped one by one."""
    fenced = _FENCE.match(text)
    payload = json.loads(fenced.group("body") if fenced else text)
    items = payload.get("memories") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise ValueError("the answer holds no 'memories' list")
    out = []
    for item in items[:MAX_CANDIDATES]:
        candidate = _candidate(item, written_at)
        if candidate is not None:
            out.append(candidate)
    return out


def parse_when(value: Any, *, written_at: datetime) -> datetime | None:
    """An aware datetime for an ISO 8601 date, date-time, year-month or year; ValueError
    when it does not parse or lies outside the accepted range."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("not a date")
    text = value.strip()
    partial = _PARTIAL_DATE.match(text)
    if partial:
        when = datetime(int(partial["y"]), int(partial["m"] or 1), 1, tzinfo=UTC)
    elif len(text) == 10:
        when = datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
    else:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    if not EARLIEST <= when <= written_at + LATEST_AHEAD:
        raise ValueError(f"{text} is out of range")
    return when


def _unit(value: Any, default: float) -> float:
    if isinstance(value, bool):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return min(1.0, max(0.0, number)) if number == number else default  # NaN: default


def _candidate(item: Any, written_at: datetime) -> Candidate | None:
    if not isinstance(item, dict):
        return None
    memory_type, content = item.get("type"), item.get("content")
    if memory_type not in LLM_TYPES or not isinstance(content, str) or not content.strip():
        return None
    structured: dict[str, Any] = {}
    occurred_at = None
    if item.get("when") is not None:
        try:
            occurred_at = parse_when(item["when"], written_at=written_at)
        except (ValueError, OverflowError):
            return None  # a fact with a wrong time would be found at the wrong time
        structured["when"] = str(item["when"])[:64]
    if isinstance(item.get("when_text"), str) and item["when_text"].strip():
        structured["when_text"] = item["when_text"].strip()[:120]
    extra = item.get("structured")
    if isinstance(extra, dict):
        structured = {**extra, **structured}
    raw_tags, raw_summary = item.get("tags"), item.get("summary")
    tags: list[Any] = raw_tags if isinstance(raw_tags, list) else []
    summary: str = raw_summary if isinstance(raw_summary, str) else ""
    return Candidate(
        type=memory_type,
        content=content.strip()[:2000],
        summary=summary.strip()[:2000],
        tags=[str(tag).strip()[:64] for tag in tags if str(tag).strip()][:20],
        structured=structured,
        importance=_unit(item.get("importance"), 0.5),
        confidence=_unit(item.get("confidence"), 0.7),
        occurred_at=occurred_at,
    )
