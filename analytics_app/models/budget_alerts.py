"""Budget threshold alerts: one row per (budget, period, threshold), sent to the webhook."""

from __future__ import annotations

from django.db import models

from analytics_app.models.alerts import AlertStatus
from sessions_app.models import Tenant


class BudgetAlert(models.Model):
    """A period budget's spend passed `threshold` percent of a limit in the period that
    starts at `period_start`. The unique constraint makes a retried or doubled signal
    unable to open a second alert for it. `budget_id` is not a foreign key: the alert
    outlives a deleted budget, as a record of what was sent."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    budget_id = models.UUIDField()
    period_start = models.DateTimeField()
    threshold = models.IntegerField(help_text="Percent of the budget's tighter limit.")
    payload = models.JSONField(help_text="The body sent to the webhook.")
    status = models.CharField(
        max_length=16, choices=AlertStatus.choices, default=AlertStatus.PENDING
    )
    attempts = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "budget_alert"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["budget_id", "period_start", "threshold"], name="budget_alert_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.threshold}% of {self.budget_id} ({self.status})"
