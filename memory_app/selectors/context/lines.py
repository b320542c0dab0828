"""How a candidate's text becomes one line of a section."""

from __future__ import annotations

from datetime import datetime, tzinfo

from memory_app.window.tokens import truncate_to_tokens

MAX_LINE_TOKENS = 300  # one state/result line never crowds out everything else


def line(text: str) -> str:
    """`text` on one line (whitespace runs collapsed), at most MAX_LINE_TOKENS tokens."""
    return truncate_to_tokens(" ".join(text.split()), MAX_LINE_TOKENS)


def date_label(at: datetime | None, zone: tzinfo | None = None) -> str:
    """When a recalled turn was said or a memory happened, as its line's label shows it:
    in `zone` (the offset of the question's `as_of`, so that the labels and the question
    share one calendar), the year in four digits."""
    if at is None:
        return "undated"
    try:
        local = at.astimezone(zone) if zone is not None else at
    except OverflowError:  # within hours of the calendar's ends
        local = at
    return f"{local.year:04d}-{local:%m-%d %H:%M}"


def memory_label(at: datetime, until: datetime | None, as_of: datetime) -> str:
    """A long-term memory's label: when it happened (or was noted), and, for one that no
    longer held when the question is asked (`as_of`), until when it held; in `as_of`'s
    offset."""
    zone = as_of.tzinfo
    if until is not None and until <= as_of:
        return f"{date_label(at, zone)}, until {date_label(until, zone)}"
    return date_label(at, zone)
