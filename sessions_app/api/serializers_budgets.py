"""Period budgets over the API: what a client sends, and a budget with its current period."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rest_framework import serializers

from sessions_app.api.fields import money_output_field, token_count_field
from sessions_app.api.parsers import BIGINT_MAX
from sessions_app.models import BudgetAction, BudgetPeriod, BudgetScope
from sessions_app.services.spend_budgets import MAX_THRESHOLD


def _choices(enum: Any) -> str:
    return "; ".join(f"`{value}`: {label}" for value, label in enum.choices)


class SpendBudgetWriteSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    """Types and ranges here; which keys a scope needs, and the time zone, are checked by
    the service (`spend_budget_create` / `_update`), with the same error shape."""

    name = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="A label for people."
    )
    scope = serializers.ChoiceField(
        choices=BudgetScope.choices, help_text=f"What the budget covers: {_choices(BudgetScope)}."
    )
    user_id = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="The end user; required for scopes `user` and `user_agent`, else blank.",
    )
    agent_id = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="The agent; required for scopes `agent` and `user_agent`, else blank.",
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="The model; required for scope `model`, else blank. Stored in lower case "
        "without a gateway's routing prefix or a release date (`openai/gpt-4o-mini` and "
        "`gpt-4o-mini-2024-07-18` are gpt-4o-mini), and each step's model, read the same "
        "way, is compared with it.",
    )
    period = serializers.ChoiceField(
        choices=BudgetPeriod.choices,
        help_text=f"How often the budget starts afresh: {_choices(BudgetPeriod)}.",
    )
    time_zone = serializers.CharField(
        required=False,
        max_length=64,
        help_text="IANA time zone whose midnights bound the periods (default `UTC`).",
    )
    limit_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=BIGINT_MAX,
        help_text="Input + output tokens per period; null: no token limit.",
    )
    limit_usd = serializers.DecimalField(
        required=False,
        allow_null=True,
        max_digits=20,
        decimal_places=6,
        min_value=Decimal(0),
        help_text="USD per period; null: no USD limit. At least one limit is required.",
    )
    action = serializers.ChoiceField(
        choices=BudgetAction.choices,
        required=False,
        help_text=f"At the limit: {_choices(BudgetAction)} (default `refuse`).",
    )
    alert_thresholds = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_THRESHOLD),
        required=False,
        max_length=20,
        help_text="Percents of the limit at which the alert webhook fires, once per period "
        "each (default [50, 80, 100]).",
    )


class BudgetPeriodSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    period_start = serializers.DateTimeField(help_text="When the current period began.")
    period_end = serializers.DateTimeField(
        allow_null=True, help_text="When it ends (the next starts); null: no period."
    )
    spent_tokens = serializers.IntegerField(help_text="Input + output tokens recorded in it.")
    spent_usd = money_output_field(help_text="USD recorded in it.")
    reserved_tokens = serializers.IntegerField(help_text="Tokens held by live reservations.")
    reserved_usd = money_output_field(help_text="USD held by live reservations.")
    percent = serializers.FloatField(
        allow_null=True, help_text="Share of the tighter limit spent, in percent."
    )
    forecast_tokens = serializers.IntegerField(
        allow_null=True,
        help_text="Tokens at the period's end at the rate so far; null: no period.",
    )
    forecast_usd = money_output_field(
        allow_null=True, help_text="USD at the period's end at the rate so far; null: no period."
    )


class SpendBudgetSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    id = serializers.UUIDField(help_text="The budget's id.")
    name = serializers.CharField(help_text="A label for people.")
    scope = serializers.CharField(help_text="tenant, user, agent, model or user_agent.")
    user_id = serializers.CharField(help_text="The end user, or blank.")
    agent_id = serializers.CharField(help_text="The agent, or blank.")
    model = serializers.CharField(
        help_text="The model (lower case, without a gateway's routing prefix or a release "
        "date), or blank."
    )
    period = serializers.CharField(help_text="day, week, month or none.")
    time_zone = serializers.CharField(help_text="IANA time zone of the periods.")
    limit_tokens = serializers.IntegerField(allow_null=True, help_text="Tokens per period.")
    limit_usd = money_output_field(allow_null=True, help_text="USD per period.")
    action = serializers.CharField(help_text="refuse or alert.")
    alert_thresholds = serializers.ListField(
        child=serializers.IntegerField(), help_text="Alert percents."
    )
    created_at = serializers.DateTimeField(help_text="When it was made.")
    updated_at = serializers.DateTimeField(help_text="When it last changed.")
    current = BudgetPeriodSerializer(
        help_text="The current period: spend, reservations and forecast."
    )


class BudgetFiguresSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    """A period budget as a budget check saw it."""

    id = serializers.UUIDField(help_text="The budget's id.")
    scope = serializers.CharField(help_text="tenant, user, agent, model or user_agent.")
    period = serializers.CharField(help_text="day, week, month or none.")
    action = serializers.CharField(help_text="refuse or alert.")
    limit_tokens = serializers.IntegerField(allow_null=True, help_text="Tokens per period.")
    limit_usd = money_output_field(allow_null=True, help_text="USD per period.")
    period_start = serializers.DateTimeField(help_text="When the current period began.")
    period_end = serializers.DateTimeField(allow_null=True, help_text="When it ends.")
    spent_tokens = token_count_field(help_text="Tokens recorded in the period.")
    spent_usd = money_output_field(help_text="USD recorded in the period.")
    reserved_tokens = token_count_field(help_text="Tokens held by other live reservations.")
    reserved_usd = money_output_field(help_text="USD held by other live reservations.")
