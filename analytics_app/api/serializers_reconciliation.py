"""Provider usage imports and the reconciliation report over the API."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from analytics_app.api.serializers import MAX_WINDOW_DAYS
from analytics_app.provider_exports import FORMATS
from sessions_app.api.fields import money_output_field

PROVIDERS = ("openai", "anthropic")


class UsageImportSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    format = serializers.ChoiceField(
        choices=list(FORMATS),
        help_text="openai_usage (organization/usage/completions, group_by=model), "
        "openai_costs (organization/costs, group_by=line_item), anthropic_usage "
        "(usage_report/messages, group_by model), anthropic_costs (cost_report).",
    )
    export = serializers.JSONField(
        help_text="The provider's JSON answer as saved to a file: an object with `data`, a "
        "list of day buckets and their `results`."
    )


class UsageImportResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    provider = serializers.CharField(help_text="openai or anthropic.")
    format = serializers.CharField(source="export_format", help_text="As sent.")
    rows = serializers.IntegerField(help_text="(day, model) rows imported or replaced.")
    first_day = serializers.DateField(allow_null=True, help_text="Earliest day in the file.")
    last_day = serializers.DateField(allow_null=True, help_text="Latest day in the file.")


class ReconciliationQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    provider = serializers.ChoiceField(choices=list(PROVIDERS), help_text="openai or anthropic.")
    to = serializers.DateField(required=False, help_text="Last UTC day, inclusive; default today.")

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]  # generic in DRF's stubs only
        fields = super().get_fields()
        fields["from"] = serializers.DateField(
            required=False, help_text="First UTC day, inclusive; default 30 days before `to`."
        )
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        end: date = attrs.get("to") or timezone.now().date()
        start: date = attrs.get("from") or end - timedelta(days=30)
        if start > end:
            raise serializers.ValidationError({"from": ["Must not be after `to`."]})
        if (end - start).days >= MAX_WINDOW_DAYS:
            raise serializers.ValidationError(
                {"from": [f"The window may span at most {MAX_WINDOW_DAYS} days."]}
            )
        return {"provider": attrs["provider"], "start": start, "end": end}


def _side(prefix: str, what: str) -> dict[str, serializers.Field]:  # type: ignore[type-arg]  # generic in DRF's stubs only
    return {
        f"{prefix}_input_tokens": serializers.IntegerField(
            allow_null=True, help_text=f"{what} input tokens (cache reads and writes included)."
        ),
        f"{prefix}_output_tokens": serializers.IntegerField(
            allow_null=True, help_text=f"{what} output tokens (reasoning included)."
        ),
        f"{prefix}_cached_tokens": serializers.IntegerField(
            allow_null=True, help_text=f"{what} input tokens read from cache."
        ),
        f"{prefix}_cost_usd": money_output_field(allow_null=True, help_text=f"{what} USD."),
    }


class ReconciliationTotalsSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]  # generic in DRF's stubs only
        return {
            **_side("engram", "Engram's"),
            **_side("provider", "The provider's"),
            **_side("drift", "Engram minus the provider's (null: the provider gave none);"),
        }


class ReconciliationRowSerializer(ReconciliationTotalsSerializer):
    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]  # generic in DRF's stubs only
        return {
            "day": serializers.DateField(help_text="UTC day."),
            "model": serializers.CharField(help_text="Model, without a release date."),
            **super().get_fields(),
        }


class ReconciliationReportSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    provider = serializers.CharField(help_text="openai or anthropic.")
    start = serializers.DateField(help_text="First UTC day.")
    end = serializers.DateField(help_text="Last UTC day, inclusive.")
    rows = ReconciliationRowSerializer(many=True, help_text="Per day and model, oldest first.")
    totals = ReconciliationTotalsSerializer(help_text="Sums over the rows.")
    truncated = serializers.BooleanField(help_text="True when not every row is listed.")
