"""Find and resolve the time phrases of a query against the moment it is asked.

`resolve_time_phrases(query, as_of)` answers the query's time scope: an interval
[start, end) in `as_of`'s time zone (either end may be open), the phrase that set it and
its kind. The kinds and what they resolve to are the rows of `patterns.PATTERNS`, plus:

- "before" / "after": "before May 2023", "after last Saturday", "since March", "until
  June": a time phrase after one of `ORDER_WORDS`. "before X" ends where X starts; "after
  X" starts where X ends; "since X" starts where X starts; "until X" ends where X ends.
  The other end is open.
- "before_event" / "after_event": "before I moved", "after my trip to Japan". X is an
  event, not a date, so nothing here knows when it was: the scope has no interval
  (`start` and `end` None), only the order (`kind`) and the event's words (`anchor`). A
  caller that can date X (e.g. by searching the memories for the anchor and reading the
  best hit's `occurred_at`) turns it into an interval with `TimeScope.around`.

- "range" / "offset": "between August 11 and August 15 2023", "from March to June"; "the
  week before August 3, 2023", "two days after 8 May" (`compound`).

When a query holds several phrases, `resolve_time_phrases` answers the first one, by
position, that has an interval, else the first event; `find_time_phrases` lists them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from memory_app.timeq import compound
from memory_app.timeq.patterns import PATTERNS, Now

TimeKind = Literal[
    "relative_day",
    "earlier",
    "ago",
    "past_span",
    "relative_week",
    "weekend",
    "relative_month",
    "relative_year",
    "year",
    "named_month",
    "named_weekday",
    "absolute_date",
    "before",
    "after",
    "before_event",
    "after_event",
    "range",
    "offset",
]

EVENT_KINDS: frozenset[str] = frozenset({"before_event", "after_event"})

# Words that put a time phrase or an event in order: which side of it the answer lies.
ORDER_WORDS = {
    "before": "before",
    "prior to": "before",
    "until": "until",
    "till": "until",
    "after": "after",
    "since": "since",
}
_ORDER_RE = re.compile(r"\b(before|prior\s+to|until|till|after|since)\s+", re.IGNORECASE)
# Where an event's words end: punctuation, a conjunction that starts another clause, or
# the inverted auxiliary of a question ("before my party did I order the cake").
_ANCHOR_END_RE = re.compile(
    r"[,.;:?!()\"]|\s(?:and|but|so|or|when|while|because|than|then|what|which|how)\b"
    r"|\s(?:did|do|does|was|were|is|are|have|has|had|will|would|can|could)\s+"
    r"(?:I|you|we|he|she|they|it|(?-i:[A-Z])\w*)\b",
    re.IGNORECASE,
)
_ANCHOR_MAX_WORDS = 8
# After an order word, these are no event: "before that", "after all", "since then".
_NOT_EVENTS = {"that", "this", "then", "now", "it", "all", "which", "them", "those", "these"}


@dataclass(frozen=True)
class TimeScope:
    """A query's time phrase and what it means. `start` inclusive, `end` exclusive, both
    aware datetimes in `as_of`'s zone, None where the interval is open; both None for an
    event (`anchor`: the event's words, to be dated by the caller)."""

    kind: TimeKind
    phrase: str
    span: tuple[int, int]
    start: datetime | None
    end: datetime | None
    anchor: str | None = None

    @property
    def has_interval(self) -> bool:
        return self.start is not None or self.end is not None

    def contains(self, moment: datetime) -> bool:
        """Whether aware `moment` lies in the interval (False for an event)."""
        if not self.has_interval:
            return False
        return (self.start is None or moment >= self.start) and (
            self.end is None or moment < self.end
        )

    def around(self, event_time: datetime) -> TimeScope:
        """An event scope dated: "before X" ends at `event_time`, "after X" starts there."""
        if self.kind == "before_event":
            return replace(self, kind="before", start=None, end=event_time)
        if self.kind == "after_event":
            return replace(self, kind="after", start=event_time, end=None)
        return self


def _now(as_of: datetime) -> Now:
    if as_of.tzinfo is None or as_of.utcoffset() is None:
        raise ValueError("as_of must be an aware datetime")
    return Now(as_of=as_of, zone=as_of.tzinfo, today=as_of.date())


def _dated(query: str, now: Now) -> list[TimeScope]:
    """Every match of every pattern that resolves, overlapping ones included."""
    found: list[TimeScope] = []
    for pattern in PATTERNS:
        for match in pattern.regex.finditer(query):
            try:
                interval = pattern.resolve(match, now)
            except (ValueError, OverflowError):  # past year 1 or 9999: no such date
                continue
            if interval is None:
                continue
            found.append(
                TimeScope(
                    kind=pattern.kind,  # type: ignore[arg-type]  # the table's kinds are TimeKind
                    phrase=match.group(0),
                    span=match.span(),
                    start=interval[0],
                    end=interval[1],
                )
            )
    return found


def _longest_at(dated: list[TimeScope]) -> dict[int, TimeScope]:
    """The longest dated phrase at each position of the query."""
    by_start: dict[int, TimeScope] = {}
    for scope in dated:
        best = by_start.get(scope.span[0])
        if best is None or scope.span[1] > best.span[1]:
            by_start[scope.span[0]] = scope
    return by_start


def _compounds(query: str, by_start: dict[int, TimeScope]) -> list[TimeScope]:
    """Ranges between two dated phrases and offsets from one (`compound`)."""
    return [
        TimeScope(
            kind=found.kind,  # type: ignore[arg-type]  # "range" or "offset", both TimeKinds
            phrase=query[found.span[0] : found.span[1]],
            span=found.span,
            start=found.start,
            end=found.end,
        )
        for found in (
            compound.ranges(query, by_start)
            + compound.offsets(query, by_start)
            + compound.months_of_years(query, by_start)
        )
    ]


def _ordered(query: str, dated: list[TimeScope]) -> list[TimeScope]:
    """The phrases an order word puts before: a dated one as an open interval, an event
    as its anchor."""
    by_start = _longest_at(dated)
    out: list[TimeScope] = []
    for match in _ORDER_RE.finditer(query):
        word = ORDER_WORDS[" ".join(match.group(1).lower().split())]
        inner = by_start.get(match.end())
        if inner is not None:
            out.append(_around_date(word, match.start(), inner, query))
            continue
        event = _event(word, match, query, dated)
        if event is not None:
            out.append(event)
    return out


def _around_date(word: str, start: int, inner: TimeScope, query: str) -> TimeScope:
    bounds = {
        "before": ("before", None, inner.start),
        "until": ("before", None, inner.end),
        "after": ("after", inner.end, None),
        "since": ("after", inner.start, None),
    }
    kind, low, high = bounds[word]
    return TimeScope(
        kind=kind,  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept
        phrase=query[start : inner.span[1]],
        span=(start, inner.span[1]),
        start=low,
        end=high,
    )


def _event(word: str, match: re.Match[str], query: str, dated: list[TimeScope]) -> TimeScope | None:
    """The event after an order word: its words up to punctuation, a new clause or a
    time phrase, at most `_ANCHOR_MAX_WORDS`; None for "before that", "after all"..."""
    begin = match.end()
    stop = _ANCHOR_END_RE.search(query, begin)
    end = stop.start() if stop else len(query)
    for scope in dated:
        if begin < scope.span[0] < end:
            end = scope.span[0]
    words = query[begin:end].split()[:_ANCHOR_MAX_WORDS]
    if not words or words[0].lower() in _NOT_EVENTS or words[0][0].isdigit():
        return None  # "after 5": a time of day or a count, not an event
    anchor = " ".join(words)
    phrase_end = begin + query[begin:].find(words[-1]) + len(words[-1])
    return TimeScope(
        kind="before_event" if word in ("before", "until") else "after_event",
        phrase=query[match.start() : phrase_end],
        span=(match.start(), phrase_end),
        start=None,
        end=None,
        anchor=anchor,
    )


def find_time_phrases(query: str, as_of: datetime) -> list[TimeScope]:
    """The query's time phrases, in order, none overlapping another: at each position the
    longest (an order word with its phrase counts as one), ties to the earlier row of the
    pattern table. `as_of` must be aware: its zone is the calendar's."""
    now = _now(as_of)
    dated = _dated(query, now)
    candidates = _ordered(query, dated) + dated + _compounds(query, _longest_at(dated))
    # Stable sort: among equal spans, order-word phrases, then the table's order, then
    # compounds ("the day before yesterday" stays a relative day).
    candidates.sort(key=lambda scope: (scope.span[0], -(scope.span[1] - scope.span[0])))
    chosen: list[TimeScope] = []
    for scope in candidates:
        if chosen and scope.span[0] < chosen[-1].span[1]:
            continue
        chosen.append(scope)
    return chosen


def resolve_time_phrases(query: str, as_of: datetime) -> TimeScope | None:
    """The query's time scope: its first phrase with an interval, else its first event
    ("before I moved"), else None."""
    scopes = find_time_phrases(query, as_of)
    for scope in scopes:
        if scope.has_interval:
            return scope
    return scopes[0] if scopes else None
