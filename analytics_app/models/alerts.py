"""Runaway alerts: one row per runaway episode of a session, delivered to a webhook."""

from __future__ import annotations

from django.db import models

from sessions_app.models import ChatSession, Tenant


class AlertStatus(models.TextChoices):
    PENDING = "pending", "pending"
    DELIVERED = "delivered", "delivered"
    FAILED = "failed", "failed (retries spent)"
    NOT_CONFIGURED = "not_configured", "no webhook configured"


class RunawayAlert(models.Model):
    """One alert per runaway episode. An episode starts when the session is flagged
    (`runaway_at`) and ends when an operator clears the flag; the unique constraint makes
    a second flagger, scan or retry unable to open a second alert for it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    episode = models.DateTimeField(help_text="The session's runaway_at for this episode.")
    reason = models.CharField(max_length=64)
    payload = models.JSONField(help_text="The body sent to the webhook.")
    status = models.CharField(
        max_length=16, choices=AlertStatus.choices, default=AlertStatus.PENDING
    )
    attempts = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runaway_alert"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["session", "episode"], name="runaway_alert_episode"),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="runaway_alert_status")]

    def __str__(self) -> str:
        return f"{self.reason} on {self.session_id} ({self.status})"


__all__ = ["AlertStatus", "RunawayAlert"]
