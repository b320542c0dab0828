"""Budgets above the session: a scope (tenant, user, agent, model, user x agent), a
period (day, week, calendar month in a time zone, or none) and limits in tokens and USD.

`BudgetSpend` holds what each budget's period has spent, moved by every recorded turn
(`sessions_app.services.spend_budgets`): a few rows per (budget, period start), one per
`shard`, and the period's spend is their sum. A turn adds to the shard of its database
connection, so concurrent turns under one budget update different rows and do not wait
for each other's commit. A
reservation taken by `budget/check` holds its estimate against every refusing budget
that applied (`BudgetReservation.budget_ids`); deleting the reservation (the turn spends
it, or its lease ended) releases every hold at once.
"""

from __future__ import annotations

import uuid

from django.db import models

from sessions_app.models.fields import money_field
from sessions_app.models.tenancy import Tenant


class BudgetScope(models.TextChoices):
    TENANT = "tenant", "every session of the tenant"
    USER = "user", "one end user"
    AGENT = "agent", "one agent"
    MODEL = "model", "one model"
    USER_AGENT = "user_agent", "one user with one agent"


class BudgetPeriod(models.TextChoices):
    DAY = "day", "calendar day"
    WEEK = "week", "ISO week, from Monday"
    MONTH = "month", "calendar month"
    NONE = "none", "no period: a lifetime limit"


class BudgetAction(models.TextChoices):
    REFUSE = "refuse", "refuse with 429 until the period ends"
    ALERT = "alert", "only alert"


# Which key fields a scope names; the others stay blank.
SCOPE_KEYS: dict[str, tuple[str, ...]] = {
    BudgetScope.TENANT: (),
    BudgetScope.USER: ("user_id",),
    BudgetScope.AGENT: ("agent_id",),
    BudgetScope.MODEL: ("model",),
    BudgetScope.USER_AGENT: ("user_id", "agent_id"),
}
DEFAULT_ALERT_THRESHOLDS = [50, 80, 100]


def default_alert_thresholds() -> list[int]:
    return list(DEFAULT_ALERT_THRESHOLDS)


class SpendBudget(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="spend_budgets")
    name = models.CharField(max_length=200, blank=True, default="")
    scope = models.CharField(max_length=16, choices=BudgetScope.choices)
    user_id = models.CharField(max_length=255, blank=True, default="")
    agent_id = models.CharField(max_length=255, blank=True, default="")
    model = models.CharField(max_length=255, blank=True, default="")  # a model_key
    period = models.CharField(max_length=8, choices=BudgetPeriod.choices)
    time_zone = models.CharField(max_length=64, default="UTC")
    limit_tokens = models.BigIntegerField(null=True, blank=True)
    limit_usd = money_field(null=True, blank=True)
    action = models.CharField(
        max_length=8, choices=BudgetAction.choices, default=BudgetAction.REFUSE
    )
    alert_thresholds = models.JSONField(default=default_alert_thresholds, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "spend_budget"
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["tenant", "scope"], name="spend_budget_tenant_scope")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(limit_tokens__isnull=True) | models.Q(limit_tokens__gte=0),
                name="spend_budget_tokens_not_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(limit_usd__isnull=True) | models.Q(limit_usd__gte=0),
                name="spend_budget_usd_not_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(limit_tokens__isnull=False) | models.Q(limit_usd__isnull=False),
                name="spend_budget_has_a_limit",
            ),
        ]

    def __str__(self) -> str:
        keys = "/".join(getattr(self, key) for key in SCOPE_KEYS.get(self.scope, ()))
        return self.name or f"{self.scope} {keys} per {self.period}".replace("  ", " ")


# How many rows a budget's period spreads its spend over (`BudgetSpend.shard`).
SPEND_SHARDS = 16


class BudgetSpend(models.Model):
    """Part of what one period of one budget spent (the period's spend is the sum over its
    shards). `alerted`, kept on shard 0, is the highest threshold (percent) already
    alerted for the period, so each threshold alerts once per budget and period."""

    budget = models.ForeignKey(SpendBudget, on_delete=models.CASCADE, related_name="spends")
    period_start = models.DateTimeField()
    shard = models.SmallIntegerField(default=0)
    tokens = models.BigIntegerField(default=0)
    cost_usd = money_field(default=0)
    alerted = models.IntegerField(default=0)
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "budget_spend"
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "period_start", "shard"], name="budget_spend_one_per_shard"
            ),
            models.CheckConstraint(
                condition=models.Q(shard__gte=0) & models.Q(shard__lt=SPEND_SHARDS),
                name="budget_spend_shard_in_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.budget_id} from {self.period_start:%Y-%m-%d %H:%M} ({self.shard})"
