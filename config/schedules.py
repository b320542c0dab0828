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
        name="memory-decay",
        task="memory_app.decay_memories",
        every=3600,
        expires=1800,
        description="Rescore memory decay; delete unpinned memories below the threshold.",
    ),
]
