from __future__ import annotations

from django.db import models


class OutboxMessage(models.Model):
    """A Celery task that could not be published when its write committed (broker down
    or stalled past ENGRAM_PUBLISH_TIMEOUT_SECONDS). The periodic drain publishes it and
    deletes the row in one transaction; tasks are idempotent, so a publish that reached
    the broker before its timeout and is sent again costs a duplicate run, never a wrong
    result. Generic on purpose (task name + arguments): every app enqueues through it."""

    task_name = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        db_table = "outbox_message"
        verbose_name = "outbox message"

    def __str__(self) -> str:
        return f"{self.task_name}{tuple(self.args)}"
