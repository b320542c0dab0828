"""Every periodic task, declared once. `manage.py sync_schedules` (run by `make run` and
the deploy's migrate step) writes them into django-celery-beat's tables, where operators
can change the interval or disable a task in the admin; a later sync adds what is new and
never overwrites their edits.

`every` is in seconds; `expires` (seconds) drops a run that waited longer than that in
the queue, so a stalled worker does not meet a pile of stale runs when it comes back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Periodic:
    name: str
    task: str
    every: int
    expires: int
    description: str


SCHEDULE: list[Periodic] = [
    Periodic(
        name="sessions: expire, archive or delete",
        task="sessions_app.expire_sessions",
        every=300,
        expires=240,
        description="Expire sessions past their TTL; archive or delete them after retention.",
    ),
    Periodic(
        name="sessions: purge idempotency keys",
        task="sessions_app.purge_idempotency_records",
        every=3600,
        expires=1800,
        description="Delete Idempotency-Key records older than ENGRAM_IDEMPOTENCY_TTL_SECONDS.",
    ),
    Periodic(
        name="sessions: purge ended budget reservations",
        task="sessions_app.purge_budget_reservations",
        every=3600,
        expires=1800,
        description="Delete budget reservations whose lease ended without a turn.",
    ),
    Periodic(
        name="sessions: drain the outbox",
        task="sessions_app.outbox_drain",
        every=30,
        expires=25,
        description="Publish the tasks kept in the outbox while the broker was down or "
        "stalled (extraction, compaction, runaway checks), oldest first.",
    ),
    Periodic(
        name="sessions: turn_step partitions",
        task="sessions_app.step_partitions_maintain",
        every=3600,
        expires=1800,
        description="Make turn_step's monthly partitions ahead (ENGRAM_STEP_PARTITIONS_AHEAD), "
        "move steps out of DEFAULT into their month, and drop whole months past "
        "ENGRAM_STEP_RETENTION_DAYS once the spend rollups have counted them.",
    ),
    Periodic(
        name="analytics: fill spend rollups",
        task="analytics_app.rollups_fill",
        every=300,
        expires=240,
        description="Adds new turn_step rows to the spend rollups (resumes from its marker).",
    ),
    Periodic(
        name="analytics: runaway scan",
        task="analytics_app.runaway_scan",
        every=60,
        expires=50,
        description="Flags sessions that spend too fast, loop on a failing step, grow their "
        "context every turn or exceed their budget; alerts once per episode.",
    ),
    Periodic(
        name="memory: remember pending turns",
        task="memory_app.remember_pending_turns",
        every=30,
        expires=25,
        description="Write the turns still marked as waiting to become memories (a drain "
        "whose publish was lost, or marks left by a worker that died mid-batch).",
    ),
    Periodic(
        name="memory: decay",
        task="memory_app.decay_memories",
        every=3600,
        expires=1800,
        description="Rescore memory decay; delete unpinned memories below the threshold.",
    ),
    Periodic(
        name="memory: flush access statistics",
        task="memory_app.flush_memory_access",
        every=10,
        expires=9,
        description="Move the read counts that searches and contexts buffered in Valkey into "
        "memory.access_count / last_accessed_at (one UPDATE per batch).",
    ),
    Periodic(
        name="memory: fold lexical statistics",
        task="memory_app.fold_lexicon_stats",
        every=30,
        expires=25,
        description="Add what the users' BM25 statistics gained or lost since the last run "
        "to their tenant's sums, which tenant-wide searches read (exact either way; "
        "unfolded rows only cost those searches time).",
    ),
]
