"""Serializers of the budget check (`POST …/budget/check`): the estimate asked about, the
reservation it may hold, and the answer."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rest_framework import serializers

from sessions_app.api.fields import money_output_field, token_count_field
from sessions_app.api.serializers_budgets import BudgetFiguresSerializer


class BudgetCheckSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    estimated_tokens = token_count_field(
        help_text="Input + output tokens the agent is about to spend."
    )
    estimated_cost_usd = serializers.DecimalField(
        required=False,
        max_digits=14,
        decimal_places=6,
        min_value=Decimal(0),
        help_text="USD the agent is about to spend, if it knows.",
    )
    estimated_usd = serializers.DecimalField(
        required=False,
        max_digits=14,
        decimal_places=6,
        min_value=Decimal(0),
        help_text="Older name of `estimated_cost_usd`; still accepted.",
    )
    reserve = serializers.BooleanField(
        required=False,
        default=False,
        help_text="When allowed, hold the estimate against the budget until a turn is "
        "recorded (which spends the named, else the oldest, reservation) or the lease "
        "ends. Sessions without a budget hold nothing.",
    )
    lease_seconds = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=3600,
        help_text="How long the reservation holds; default ENGRAM_BUDGET_LEASE_SECONDS (60).",
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="The model the next call uses, for model budgets (a gateway-routed or dated "
        "name such as `openai/gpt-4o-mini-2024-07-18` counts as gpt-4o-mini); default: the "
        "session's "
        "model (set on it, else its latest step's).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        legacy = attrs.pop("estimated_usd", None)
        if attrs.get("estimated_cost_usd") is None:
            attrs["estimated_cost_usd"] = legacy
        return attrs


class BudgetReservationSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    id = serializers.UUIDField(help_text="Name it as the turn's `reservation_id`.")
    tokens = serializers.IntegerField(help_text="Tokens held.")
    cost_usd = money_output_field(allow_null=True, help_text="USD held; null if not given.")
    expires_at = serializers.DateTimeField(help_text="When the lease ends.")


class BudgetCheckResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    allowed = serializers.BooleanField(help_text="Always true on a 200; a 429 means no.")
    estimated_tokens = serializers.IntegerField(help_text="As sent.")
    tokens_remaining_after = serializers.IntegerField(
        allow_null=True, help_text="Tokens left after the estimate; null: no token budget."
    )
    budget = serializers.DictField(help_text="The session's budget state.")
    reserved_tokens = serializers.IntegerField(
        help_text="Tokens held by other live reservations, set aside before this check."
    )
    reservation = BudgetReservationSerializer(
        allow_null=True, help_text="The reservation taken (with `reserve: true`), else null."
    )
    budgets = BudgetFiguresSerializer(
        many=True,
        help_text="Every period budget that applies (user, agent, model, tenant), as checked: "
        "spend in the current period and what other reservations hold.",
    )
