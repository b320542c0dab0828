"""The session as it stood when a context's question was asked in the past: nothing it
said or learnt after `as_of`.

- Verbatim turns: those whose `occurred_at` is at or before `as_of`.
- Summaries and their milestones: a summary is kept only when every turn it covers had
  happened by `as_of`. One built from any later turn is left out whole, milestones
  included: its text mixes what was said before and after, and nothing splits it
  faithfully. The turns it covers that had happened by `as_of` are offered verbatim
  instead, as they stood before compaction.
- Turns the recall finds in the session (`candidates.recalled`): those that had happened
  by `as_of`, the same moment (the recall of other sessions and long-term memories keeps
  its day of tolerance: `happened_by`).
- The predecessors of a rotated session (`candidates.predecessors`): each read as the
  session's own turns and summaries are.
- Tool outputs and failing steps (`candidates.tools`, `candidates.failures`): those of
  turns that had happened by `as_of`.
- State, focus, results and cart (`candidates.state`): the version in force at `as_of`;
  what has no version then is reported as left out (`no_history`).
- Long-term memories (`candidates.memories`): those known by `as_of`, noted by then or
  dated by then.

An `as_of` within ENGRAM_TURN_CLOCK_SKEW_SECONDS of the present is the present: the
caller's clock may lag the server's, which dated every turn recorded without
`occurred_at`, and the context for the next call must not lose the turn just recorded.
Nothing is cut then, as without `as_of`; nor when every turn had happened by `as_of`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings

from sessions_app.selectors.turns import turn_first_after

if TYPE_CHECKING:
    from memory_app.window.models import ContextSummary


@dataclass(frozen=True)
class SessionAt:
    """The session at `moment`: the last turn the summaries kept for it cover
    (`summarised_through`, 0: none)."""

    moment: datetime
    summarised_through: int = 0


def said_moment(as_of: datetime | None, now: datetime) -> datetime | None:
    """The moment after which the session's own words are left out: `as_of` when it is
    in the past beyond the clock skew, else None (asked now)."""
    skew = timedelta(seconds=settings.ENGRAM_TURN_CLOCK_SKEW_SECONDS)
    if as_of is None or as_of >= now - skew:
        return None
    return as_of


def session_at(
    session_id: Any, summaries: list[ContextSummary], moment: datetime | None
) -> tuple[list[ContextSummary], SessionAt | None]:
    """The `summaries` (oldest span first) that cover only turns said by `moment`, and
    the session at `moment`; the summaries as given and None when nothing of the session
    happened after `moment` (or `moment` is None)."""
    if moment is None:
        return summaries, None
    first_after = turn_first_after(session_id=session_id, moment=moment)
    if first_after is None:
        return summaries, None
    kept = [summary for summary in summaries if summary.last_turn < first_after]
    return kept, SessionAt(moment, max((s.last_turn for s in kept), default=0))
