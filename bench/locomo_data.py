"""LoCoMo conversations as the evaluations read them (../shared/eval-data/README.md): the
turns in order with their sessions and dates, the questions that carry evidence, and the
turns paired as an agent's exchanges."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    date: str


@dataclass
class Conversation:
    index: int
    speaker_a: str
    speaker_b: str
    turns: list[Turn]
    questions: list[dict[str, Any]] = field(default_factory=list)


def load(path: Path) -> list[Conversation]:
    """Conversations with their turns in order and the questions that carry evidence
    (categories 1-4; 5 is adversarial, no answer)."""
    out = []
    for index, raw in enumerate(json.loads(path.read_text())):
        conv = raw["conversation"]
        numbers = sorted(
            int(key.split("_")[1])
            for key in conv
            if re.fullmatch(r"session_\d+", key) and isinstance(conv[key], list)
        )
        turns = [
            Turn(t["dia_id"], t["speaker"], t["text"], n, conv.get(f"session_{n}_date_time", ""))
            for n in numbers
            for t in conv[f"session_{n}"]
        ]
        questions = [
            q for q in raw["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")
        ]
        out.append(Conversation(index, conv["speaker_a"], conv["speaker_b"], turns, questions))
    return out


def _date(text: str) -> str | None:
    """LoCoMo dates look like '1:56 pm on 8 May, 2023'."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat() + "Z"
    except ValueError:
        return None


def _evidence(question: dict[str, Any]) -> set[str]:
    # A few evidence entries hold several ids ("D8:6; D9:17"); split them.
    return {part.strip() for item in question["evidence"] for part in re.split(r"[;,]", item)}


def _turn_pairs(conv: Conversation) -> Iterator[tuple[str, str]]:
    """A's line as the user message, B's as the reply; a speaker talking twice in a row
    makes a turn with the other side blank."""
    pending: str | None = None
    for turn in conv.turns:
        line = f"{turn.speaker}: {turn.text}"
        if turn.speaker == conv.speaker_a:
            if pending is not None:
                yield pending, ""
            pending = line
        else:
            yield pending or "", line
            pending = None
    if pending is not None:
        yield pending, ""
