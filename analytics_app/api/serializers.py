from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from analytics_app.selectors.usage import GROUPS
from sessions_app.api.fields import OFFSET_REQUIRED, money_output_field

MAX_WINDOW_DAYS = 366
FILTERS = ("user_id", "agent_id", "session_id")
_DATE_OR_DATE_TIME = "Expected YYYY-MM-DD or an ISO 8601 date-time with its UTC offset."
DEFAULT_WINDOW_DAYS = 30


class DateOrDateTimeField(serializers.Field):  # type: ignore[type-arg]  # generic in DRF's stubs only
    """`2025-01-31` (a whole UTC day) or an ISO 8601 date-time with its UTC offset; a
    date-time without one is refused, as every date-time the API takes."""

    def to_internal_value(self, data: Any) -> date | datetime:
        if not isinstance(data, str):
            raise serializers.ValidationError(_DATE_OR_DATE_TIME)
        try:
            if len(data) == 10:
                return date.fromisoformat(data)
            # RFC 3339 allows a lowercase t/z, which fromisoformat does not read.
            parsed = datetime.fromisoformat(data.upper().replace("Z", "+00:00"))
        except ValueError as exc:
            raise serializers.ValidationError(_DATE_OR_DATE_TIME) from exc
        if parsed.tzinfo is None:
            raise serializers.ValidationError(OFFSET_REQUIRED)
        return parsed

    def to_representation(self, value: Any) -> str:
        return str(value.isoformat())


class UsageQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    group_by = serializers.ChoiceField(
        choices=list(GROUPS), help_text="day, model, agent, user, step_type or session."
    )
    user_id = serializers.CharField(
        required=False, max_length=255, help_text="Only this user's steps."
    )
    agent_id = serializers.CharField(
        required=False, max_length=255, help_text="Only this agent's steps."
    )
    session_id = serializers.UUIDField(required=False, help_text="Only this session's steps.")
    # `from` is a Python keyword: declared below under its API name.
    to = DateOrDateTimeField(
        required=False,
        help_text="End: a date (inclusive, whole UTC day) or a date-time with its UTC "
        "offset (exclusive; without one: 400). Default: now.",
    )

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]  # generic in DRF's stubs only
        fields = super().get_fields()
        fields["from"] = DateOrDateTimeField(
            required=False,
            help_text="Start: a date (from 00:00 UTC) or a date-time with its UTC offset "
            "(without one: 400), inclusive. "
            f"Default: {DEFAULT_WINDOW_DAYS} days before `to`.",
        )
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._window(attrs)
        except OverflowError as exc:
            # e.g. to=9999-12-31: the day after it is past datetime's range.
            raise serializers.ValidationError(
                {"to": ["The window falls outside the supported dates (years 1-9999)."]}
            ) from exc

    def _window(self, attrs: dict[str, Any]) -> dict[str, Any]:
        end_raw = attrs.get("to")
        if end_raw is None:
            end = timezone.now()
        elif isinstance(end_raw, datetime):
            end = end_raw
        else:
            end = datetime.combine(end_raw + timedelta(days=1), time.min, tzinfo=UTC)
        start_raw = attrs.get("from")
        if start_raw is None:
            start = end - timedelta(days=DEFAULT_WINDOW_DAYS)
        elif isinstance(start_raw, datetime):
            start = start_raw
        else:
            start = datetime.combine(start_raw, time.min, tzinfo=UTC)
        if start >= end:
            raise serializers.ValidationError({"from": ["Must be before `to`."]})
        if end - start > timedelta(days=MAX_WINDOW_DAYS):
            raise serializers.ValidationError(
                {"from": [f"The window may span at most {MAX_WINDOW_DAYS} days."]}
            )
        filters = {name: str(attrs[name]) for name in FILTERS if name in attrs}
        return {"group_by": attrs["group_by"], "start": start, "end": end, "filters": filters}


class UsageRowSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    key = serializers.CharField(
        allow_null=True,
        help_text="The group: a date, model, agent, user, step type or session. null, "
        "grouped by user or session: the spend of erased users, still counted (the calls "
        "were made) but no longer tied to a user or session.",
    )
    input_tokens = serializers.IntegerField(help_text="All input tokens, cached included.")
    output_tokens = serializers.IntegerField(help_text="All output tokens, reasoning included.")
    cached_tokens = serializers.IntegerField(help_text="Input tokens read from cache.")
    cache_write_tokens = serializers.IntegerField(help_text="Input tokens written to cache.")
    reasoning_tokens = serializers.IntegerField(help_text="Reasoning tokens.")
    total_tokens = serializers.IntegerField(help_text="Input + output.")
    cost_usd = money_output_field(help_text="USD of the priced calls.")
    calls = serializers.IntegerField(help_text="Steps recorded.")
    errors = serializers.IntegerField(help_text="Steps that failed.")  # type: ignore[assignment]  # DRF moves declared fields off the class
    unpriced_calls = serializers.IntegerField(help_text="Steps whose model has no price.")
    zero_cost_calls = serializers.IntegerField(help_text="Steps with tokens but a zero cost.")
    negative_cost_calls = serializers.IntegerField(help_text="Steps with a negative cost.")


class UsageTotalsSerializer(UsageRowSerializer):
    key = None  # type: ignore[assignment]  # the stubs declare a narrower type than the framework assigns


class UsageReportSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    group_by = serializers.CharField(help_text="The dimension grouped by.")
    start = serializers.DateTimeField(help_text="Window start, inclusive.")
    end = serializers.DateTimeField(help_text="Window end, exclusive.")
    rows = UsageRowSerializer(many=True, help_text="One row per group.")
    totals = UsageTotalsSerializer(help_text="Sums over the whole window.")
    truncated = serializers.BooleanField(help_text="True when only the top groups are listed.")
