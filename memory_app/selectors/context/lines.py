"""How a candidate's text becomes one line of a section."""

from __future__ import annotations

from datetime import datetime

from memory_app.window.tokens import truncate_to_tokens

MAX_LINE_TOKENS = 300  # one state/result line never crowds out everything else


def line(text: str) -> str:
    """`text` on one line (whitespace runs collapsed), at most MAX_LINE_TOKENS tokens."""
    return truncate_to_tokens(" ".join(text.split()), MAX_LINE_TOKENS)


def date_label(at: datetime | None) -> str:
    """When a recalled turn was said, as its line's label shows it."""
    return at.strftime("%Y-%m-%d %H:%M") if at is not None else "undated"


def memory_label(at: datetime, until: datetime | None, as_of: datetime) -> str:
    """A long-term memory's label: when it happened (or was noted), and, for one that no
    longer held when the question is asked (`as_of`), until when it held."""
    if until is not None and until <= as_of:
        return f"{date_label(at)}, until {date_label(until)}"
    return date_label(at)
