"""Context candidates from the session's compacted spans: each active summary as a line
of the "summaries" section, and its milestones one line each in the "milestones"
section (a milestone said in several spans once). Each names the turns it restates: a
milestone its turn, a summary the turn of each of its lines tagged `[t12]`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from memory_app.selectors.context.candidate import Candidate, turn_ref
from memory_app.window.milestones import KINDS, milestone_lines
from sessions_app.selectors.turns import turn_times

if TYPE_CHECKING:
    from datetime import datetime

    from memory_app.window.models import ContextSummary
    from sessions_app.models import ChatSession

SUMMARY_SIGNAL = 0.5
MILESTONE_SIGNAL = {
    "selections": 0.9,
    "constraints": 0.8,
    "commitments": 0.8,
    "open_questions": 0.8,
    "decisions": 0.7,
    "ids": 0.7,
    "items": 0.5,
}
OTHER_MILESTONE_SIGNAL = 0.6
# The turn tag a summary line starts with ("[t12] U: …", "- [t12] …"), after the
# summary's own label on its first line.
_LINE_TURN = re.compile(r"^(?:\[turns \d+-\d+\] )?[-*•\s]*\[t(\d+)\]")


def summary_candidates(session: ChatSession, summaries: list[ContextSummary]) -> list[Candidate]:
    """The summaries, each followed by its milestones not already offered."""
    out: list[Candidate] = []
    seen: set[str] = set()
    # A milestone is as recent as the turn it came from, not as the summary holding it.
    compacted_at = turn_times(session_id=session.pk, compacted=True)
    for summary in summaries:
        text = f"[turns {summary.first_turn}-{summary.last_turn}] {summary.summary}"
        out.append(
            Candidate(
                key=f"summary:{summary.pk}",
                kind="summary",
                section="summaries",
                text=text,
                role="system",
                at=summary.last_turn_at,
                signal=SUMMARY_SIGNAL,
                order=(summary.first_turn,),
                restates=_restated(session.pk, text),
            )
        )
        out.extend(_milestone_candidates(session.pk, summary, compacted_at, seen))
    return out


def _restated(session_id: Any, text: str) -> tuple[str, ...]:
    """Per line of a summary's text, the turn its tag names ("" for an untagged line)."""
    found = (_LINE_TURN.match(line) for line in text.split("\n"))
    return tuple(turn_ref(session_id, int(m.group(1))) if m else "" for m in found)


def _milestone_candidates(
    session_id: Any, summary: ContextSummary, compacted_at: dict[int, datetime], seen: set[str]
) -> list[Candidate]:
    """The summary's milestone lines whose key is not in `seen` (which grows)."""
    out: list[Candidate] = []
    for index, (key, turn, text) in enumerate(milestone_lines(summary.milestones)):
        if key in seen:
            continue
        seen.add(key)
        kind = key.split(":", 1)[0]
        out.append(
            Candidate(
                key=f"milestone:{key}",
                kind="milestone",
                section="milestones",
                text=text,
                role="milestone",
                at=compacted_at.get(turn, summary.last_turn_at),
                signal=MILESTONE_SIGNAL.get(kind, OTHER_MILESTONE_SIGNAL),
                order=(turn, KINDS.index(kind) if kind in KINDS else 99, index),
                restates=(turn_ref(session_id, turn),) * len(text.split("\n")),
            )
        )
    return out
