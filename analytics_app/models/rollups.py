"""Spend rollups and their fill markers.

Modelled on Zulip's analytics app: a count table keyed on (scope, property, bucket),
written only with INSERT … ON CONFLICT upserts by `services.rollups`, and a fill marker
per table so that a fill killed half-way resumes where it stopped instead of counting a
batch twice. Dashboards and `usage_from_rollups` read these tables, never `turn_step`,
so they stay fast at millions of steps.
"""

from __future__ import annotations

from django.db import models

from sessions_app.models import Tenant
from sessions_app.models.fields import money_field, token_field


class Granularity(models.TextChoices):
    HOUR = "hour", "hour"
    DAY = "day", "day"


# The counter columns of `SpendCounters`, in one order for the fill's SQL and the reads.
ROLLUP_COUNTERS = (
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "cost_usd",
    "calls",
    "errors",
    "unpriced_calls",
    "zero_cost_calls",
    "negative_cost_calls",
)


class SpendCounters(models.Model):
    """The counters every rollup row carries. Anomalies are counted, never dropped (as in
    PostHog's LLM cost rollups): a step of an unknown model still adds its tokens and a
    call, and shows up in `unpriced_calls`."""

    input_tokens = token_field()
    output_tokens = token_field()
    cached_tokens = token_field()
    cache_write_tokens = token_field()
    reasoning_tokens = token_field()
    cost_usd = money_field(default=0, help_text="Sum of the priced steps' cost; unpriced add 0.")
    calls = models.BigIntegerField(default=0)
    errors = models.BigIntegerField(default=0, help_text="Steps with success = false.")
    unpriced_calls = models.BigIntegerField(
        default=0, help_text="Steps without a price: unknown model or price_missing."
    )
    zero_cost_calls = models.BigIntegerField(
        default=0, help_text="Steps priced at exactly 0 although they used tokens."
    )
    negative_cost_calls = models.BigIntegerField(
        default=0, help_text="Steps with a negative cost (a pricing bug, or a refund)."
    )

    class Meta:
        abstract = True


class SpendRollup(SpendCounters):
    """Spend per (tenant, granularity, bucket, model, agent, step type)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    granularity = models.CharField(max_length=8, choices=Granularity.choices)
    bucket_start = models.DateTimeField(help_text="Start of the hour or UTC day.")
    model = models.CharField(max_length=200, blank=True, default="")
    agent_id = models.CharField(max_length=255)
    step_type = models.CharField(max_length=64)

    class Meta:
        db_table = "spend_rollup"
        ordering = ["-bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "granularity", "bucket_start", "model", "agent_id", "step_type"],
                name="spend_rollup_key",
            ),
        ]
        indexes = [
            models.Index(fields=["granularity", "bucket_start"], name="spend_rollup_bucket"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.granularity} {self.bucket_start:%Y-%m-%d %H:%M} {self.model}/{self.step_type}"
        )


class UserSpendRollup(SpendCounters):
    """Spend per (tenant, UTC day, user): the 'top users' view and `group_by=user`,
    which the main rollup cannot answer without a key per user (Zulip's UserCount)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    bucket_start = models.DateTimeField(help_text="Start of the UTC day.")
    user_id = models.CharField(max_length=255)

    class Meta:
        db_table = "user_spend_rollup"
        ordering = ["-bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "bucket_start", "user_id"], name="user_spend_rollup_key"
            ),
        ]
        indexes = [models.Index(fields=["bucket_start"], name="user_spend_rollup_bucket")]

    def __str__(self) -> str:
        return f"{self.bucket_start:%Y-%m-%d} {self.user_id}"


class RollupFillState(models.Model):
    """How far a rollup has been filled: every step with id <= last_step_id is counted.
    Advanced in the same transaction as the upsert of its batch."""

    name = models.CharField(max_length=32, unique=True, help_text="e.g. spend:hour")
    last_step_id = models.BigIntegerField(default=0)
    filled_through = models.DateTimeField(
        null=True, blank=True, help_text="created_at of the last step counted."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "rollup_fill_state"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} through step {self.last_step_id}"


__all__ = [
    "ROLLUP_COUNTERS",
    "Granularity",
    "RollupFillState",
    "SpendRollup",
    "UserSpendRollup",
]
