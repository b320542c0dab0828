from __future__ import annotations

import uuid

from django.db import models

from sessions_app.models.fields import money_field, token_field
from sessions_app.models.tenancy import Tenant


class SessionStatus(models.TextChoices):
    OPENED = "opened", "opened"
    ACTIVE = "active", "active"
    COMPACTED = "compacted", "compacted"
    ARCHIVED = "archived", "archived"
    EXPIRED = "expired", "expired"


class ChatSession(models.Model):
    """One conversation of one user with one agent: its context, its totals, its budget."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sessions")
    user_id = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255)
    status = models.CharField(
        max_length=16, choices=SessionStatus.choices, default=SessionStatus.OPENED
    )
    state = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    external_session_id = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 - null: none given
    provider = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="The LLM provider behind the agent (claude, ollama…); picks the default TTL.",
    )

    # What the agent is looking at.
    focus_mpn = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 - null: no focus
    last_query = models.TextField(null=True, blank=True)  # noqa: DJ001 - null: no search yet
    last_filters = models.JSONField(null=True, blank=True)
    query_history = models.JSONField(
        default=list, blank=True, help_text="The last queries with their filters, newest last."
    )
    last_results = models.JSONField(
        default=list, blank=True, help_text="MPNs of the last stored results, in order."
    )

    # Totals, moved with F() by the services that record turns.
    turn_count = models.IntegerField(default=0)
    last_turn_number = models.IntegerField(default=0)
    total_input_tokens = token_field()
    total_output_tokens = token_field()
    total_cached_tokens = token_field()
    total_reasoning_tokens = token_field()
    total_cost_usd = money_field(default=0)
    total_calls = models.IntegerField(default=0)
    total_errors = models.IntegerField(default=0)
    unpriced_calls = models.IntegerField(default=0)
    total_duration_ms = models.BigIntegerField(default=0)

    # Budget.
    budget_tokens = models.BigIntegerField(null=True, blank=True)
    budget_usd = money_field(null=True, blank=True)
    budget_exceeded_at = models.DateTimeField(null=True, blank=True)

    # Runaway detection (set by analytics through sessions_app.services).
    runaway_at = models.DateTimeField(null=True, blank=True)
    runaway_reason = models.CharField(max_length=64, blank=True, default="")
    runaway_detail = models.JSONField(default=dict, blank=True)
    runaway_blocked = models.BooleanField(default=False)

    # Compaction thresholds; null means the settings' default.
    compact_max_turns = models.IntegerField(null=True, blank=True)
    compact_max_tokens = models.IntegerField(null=True, blank=True)
    compact_keep_last_turns = models.IntegerField(null=True, blank=True)
    compact_context_share = models.FloatField(
        null=True,
        blank=True,
        help_text="Compact when the open window passes this share of the model's context "
        "window; null means the settings' default.",
    )
    model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",
        help_text="The model the agent calls; blank: the model of its latest step.",
    )

    # Rotation (seed 002's "long session summarisation"): past this many tokens the next
    # turn opens a successor; null means the agent's or the settings' default.
    rotate_after_tokens = models.BigIntegerField(null=True, blank=True)
    previous_session = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="successors",
        help_text="The session this one continues after a rotation.",
    )

    capture_prompts = models.BooleanField(
        null=True,
        blank=True,
        help_text="Keep each step's prompt and completion; null: the tenant's choice.",
    )
    context_policy = models.CharField(
        max_length=64,
        default="default",
        db_default="default",
        help_text="The named context policy `GET …/context` uses unless asked for another.",
    )
    cart_link_generation = models.IntegerField(
        default=0,
        db_default=0,
        help_text="Signed into every cart link; revoking the links increments it.",
    )

    ttl_seconds = models.IntegerField()
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_active_at = models.DateTimeField()

    class Meta:
        db_table = "chat_session"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "user_id", "-created_at"], name="session_tenant_user"),
            models.Index(fields=["tenant", "agent_id", "-created_at"], name="session_tenant_agent"),
            models.Index(fields=["tenant", "external_session_id"], name="session_tenant_ext"),
            models.Index(fields=["status", "expires_at"], name="session_status_expiry"),
            models.Index(fields=["tenant", "-created_at"], name="session_tenant_created"),
            # The cockpit's "top sessions by cost": walk the costliest first, stop at N.
            models.Index(fields=["-total_cost_usd"], name="session_cost"),
            models.Index(fields=["tenant", "-total_cost_usd"], name="session_tenant_cost"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(total_input_tokens__gte=0)
                & models.Q(total_output_tokens__gte=0),
                name="session_tokens_non_negative",
            ),
            # One live session per conversation id of a user and agent: resume finds it,
            # a second create is refused (409). Expired and archived sessions keep their
            # id, so a conversation can be reopened after its session ended. Live here is
            # by status: a session past `expires_at` that the sweep has not reached yet
            # is marked expired by `session_create` before a new one takes its id.
            models.UniqueConstraint(
                fields=["tenant", "user_id", "agent_id", "external_session_id"],
                condition=models.Q(
                    external_session_id__isnull=False,
                    status__in=["opened", "active", "compacted"],
                ),
                name="session_live_external_id_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.agent_id} {self.id}"

    @property
    def total_tokens(self) -> int:
        return int(self.total_input_tokens) + int(self.total_output_tokens)
