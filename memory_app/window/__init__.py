"""The short-term window: everything about a session's recent turns and their summaries.

- `models`: the `context_summary` table; `admin`, `tasks`, `signals`, `receivers`: its
  admin, Celery tasks, the `span_compacted` hook and the reaction to `turn_recorded`;
- `selectors`: when a session is due for compaction (thresholds and the one decision),
  and its active summaries; `pending`: at most one queued compaction per session;
- `policies`: the named context policies (window size, memory K, compression);
- pure logic that touches neither the database nor settings, reusable from services,
  benchmarks and commands: `tokens`, `text`, `summarize`, `milestones`, `passages`.

The compaction service lives in `memory_app.services.compaction`, the context assembly
(its candidates, scoring and packing included) in `memory_app.selectors.context`."""
