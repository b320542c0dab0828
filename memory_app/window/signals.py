"""Hooks the short-term window offers to the rest of Engram.

`span_compacted` is sent after the transaction that stored a span's summary commits,
with `tenant_id`, `session_id`, `summary_id`, `first_turn`, `last_turn`, `summary`
(text) and `milestones` (JSON). Long-term memory extraction connects to it (seed 001:
"after more than 10 turns, compress, then extract long-term memory from the summary").
Receivers must be quick (enqueue a task) and must not raise. Condensed summaries do not
send it: they restate spans already announced.
"""

from __future__ import annotations

from django.dispatch import Signal

span_compacted = Signal()
