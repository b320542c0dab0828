"""A turn that also reserves the budget for the agent's next call (`reserve_next`), so
that an agent under budgets makes one round trip per turn: the turn it records spends
the reservation it held, and the answer carries the next one (or says no, with when to
ask again) instead of a separate `POST …/budget/check`."""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from sessions_app.api.fields import token_count_field
from sessions_app.api.serializers_budget_check import BudgetReservationSerializer
from sessions_app.api.serializers_turns import (
    TurnCreateSerializer,
    TurnRecordedSerializer,
)


class NextCallSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    estimated_tokens = token_count_field(
        help_text="Input + output tokens the next call is about to spend."
    )
    estimated_cost_usd = serializers.DecimalField(
        required=False,
        max_digits=14,
        decimal_places=6,
        min_value=Decimal(0),
        help_text="USD the next call is about to spend, if the agent knows.",
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="The model of the next call, for model budgets; default: the session's.",
    )
    lease_seconds = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=3600,
        help_text="How long the reservation holds; default ENGRAM_BUDGET_LEASE_SECONDS (60).",
    )


# The single route's request keeps its component name: `reserve_next` is an optional
# addition to it (the batch items are a component of their own).
@extend_schema_serializer(component_name="TurnCreate")
class TurnCreateReservingSerializer(TurnCreateSerializer):
    reserve_next = NextCallSerializer(
        required=False,
        help_text="Also check and reserve the budget for the next call, after the turn is "
        "stored, as `POST …/budget/check` with `reserve: true` would; the answer's "
        "`next_call` says whether it may go ahead. The turn is stored either way.",
    )


class NextCallResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    allowed = serializers.BooleanField(help_text="May the next call go ahead?")
    reason = serializers.CharField(help_text="Why not, for a human; blank when allowed.")
    retry_after = serializers.IntegerField(
        allow_null=True,
        help_text="Seconds before asking again; null when allowed, and when waiting will "
        "not help (a session's own budget, a budget of period `none`, a runaway block: "
        "the reason says the limit does not reset by itself).",
    )
    tokens_remaining_after = serializers.IntegerField(
        allow_null=True,
        help_text="Tokens of the session's budget left after the estimate; null: none.",
    )
    reservation = BudgetReservationSerializer(
        allow_null=True,
        help_text="The reservation taken; the next turn spends it. Null when refused or "
        "when no budget applies.",
    )


class TurnRecordedReservingSerializer(TurnRecordedSerializer):
    next_call = NextCallResultSerializer(
        required=False, help_text="Present when the turn was sent with `reserve_next`."
    )
