"""The time of a question in the memory API: `as_of` in, the time scope read from the
query out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from memory_app.timeq import TimeScope
from sessions_app.api.fields import OFFSET_RULE, OffsetDateTimeField, given_blank


class AsOfField(OffsetDateTimeField):
    """An ISO 8601 datetime with its UTC offset, kept as sent: the offset is the calendar
    the query's time phrases are read in ("yesterday" in Tokyo is not yesterday in UTC).
    Not stored, so not moved to UTC: any moment Python's calendar holds in that offset."""

    rules = (OFFSET_RULE,)

    def get_value(self, dictionary: Any) -> Any:
        # `?as_of=` is not "now": it is refused as unparsable, as the date-time format says.
        if given_blank(self, dictionary):
            return ""
        return super().get_value(dictionary)

    def enforce_timezone(self, value: datetime) -> datetime:
        if timezone.is_aware(value):
            return value
        return super().enforce_timezone(value)


def as_of_field(more: str = "") -> AsOfField:
    """The `as_of` field of a request; `more`: what else the route reads it for."""
    return AsOfField(
        required=False,
        help_text="When the question is asked; its offset is the calendar the query's "
        "time phrases are read in. Default: now (UTC). Time "
        "phrases of the query ('yesterday', 'last Saturday', 'two weeks ago', 'in May', "
        "'since March', '8 May 2023') are resolved against it, and memories whose "
        "occurred_at lies in the phrase's interval, or shortly after it, get a small boost "
        "(score part `time`)." + (f" {more}" if more else ""),
    )


_AS_OF_OUT = AsOfField()


class TimeScopeSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    phrase = serializers.CharField(help_text="The words of the query that name a time.")
    kind = serializers.CharField(
        help_text="What kind of phrase: relative_day, earlier, ago, past_span, relative_week, "
        "weekend, relative_month, relative_year, year, named_month, named_weekday, "
        "absolute_date, before, after, range ('between August 11 and August 15 2023', "
        "'from March to June'), offset ('the week before August 3, 2023') (an interval); "
        "before_event, after_event (an order relative to an event the query names, "
        "`anchor`, that no memory dates: no interval, nothing boosted). An event that a "
        "memory tells of (the top hit for its words, holding one of them, happened by "
        "as_of) is dated by it: kind before or after, its `anchor` kept."
    )
    start = serializers.DateTimeField(
        allow_null=True, help_text="The interval's start, inclusive, in as_of's offset; null: open."
    )
    end = serializers.DateTimeField(
        allow_null=True, help_text="The interval's end, exclusive, in as_of's offset; null: open."
    )
    anchor = serializers.CharField(
        allow_null=True, help_text="For before_event/after_event: the event's words."
    )


def time_scope_data(scope: TimeScope | None) -> dict[str, Any] | None:
    """`TimeScopeSerializer(scope).data`, written out (the search answers built directly)."""
    if scope is None:
        return None
    return {
        "phrase": scope.phrase,
        "kind": scope.kind,
        "start": _AS_OF_OUT.to_representation(scope.start) if scope.start else None,
        "end": _AS_OF_OUT.to_representation(scope.end) if scope.end else None,
        "anchor": scope.anchor,
    }


def as_of_data(as_of: datetime) -> str:
    return str(_AS_OF_OUT.to_representation(as_of))
