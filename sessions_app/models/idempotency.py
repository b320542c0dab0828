from __future__ import annotations

from django.db import models

from sessions_app.models.tenancy import Tenant


class IdempotencyRecord(models.Model):
    """An `Idempotency-Key` seen for a tenant: the request's fingerprint and, once done,
    the response to replay. Purged after ENGRAM_IDEMPOTENCY_TTL_SECONDS."""

    class Status(models.TextChoices):
        IN_FLIGHT = "in_flight", "in flight"
        COMPLETED = "completed", "completed"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    scope = models.CharField(max_length=200, help_text="The route the key was used on.")
    # A plain column, not a foreign key: the key is claimed before the work checks that
    # the session exists. User erasure finds a user's records by it.
    session_id = models.UUIDField(
        null=True, blank=True, help_text="The session the request was about, if any."
    )
    request_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IN_FLIGHT)
    response_status = models.IntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "idempotency_record"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "key"], name="idempotency_key_unique"),
        ]
        indexes = [
            models.Index(fields=["created_at"], name="idempotency_created"),
            models.Index(
                fields=["tenant", "session_id"],
                name="idempotency_session",
                condition=models.Q(session_id__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.status})"
