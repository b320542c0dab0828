"""Time phrases in queries ("last Saturday", "two weeks ago", "in May", "before I
moved"), resolved against the moment the question is asked (`as_of`).

Pure Python, no Django and no settings, so that search, context assembly, benchmarks and
evaluation scripts share one reading of a phrase:

- `vocabulary`: the word tables (numbers as words, months, weekdays, units, modifiers);
- `calendar`: day, week, month and year arithmetic in `as_of`'s time zone;
- `phrases`: the pattern table and `resolve_time_phrases` / `find_time_phrases`.
"""

from memory_app.timeq.phrases import (
    EVENT_KINDS,
    TimeKind,
    TimeScope,
    find_time_phrases,
    resolve_time_phrases,
)

__all__ = ["EVENT_KINDS", "TimeKind", "TimeScope", "find_time_phrases", "resolve_time_phrases"]
