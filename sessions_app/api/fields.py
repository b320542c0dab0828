"""Serializer fields shared by the API's serializers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

MAX_TOKENS_PER_VALUE = 10_000_000_000  # absurd above this: no request moves 10B tokens


def token_count_field(**kwargs: object) -> serializers.IntegerField:
    options: dict[str, object] = {"min_value": 0, "max_value": MAX_TOKENS_PER_VALUE}
    options.update(kwargs)
    return serializers.IntegerField(**options)  # type: ignore[arg-type]


def money_output_field(**kwargs: object) -> serializers.DecimalField:
    """USD as a decimal string with six places: micro-dollars."""
    options: dict[str, object] = {
        "max_digits": 20,
        "decimal_places": 6,
        "coerce_to_string": True,
        "read_only": True,
    }
    options.update(kwargs)
    return serializers.DecimalField(**options)  # type: ignore[arg-type]


def identifier_field(**kwargs: object) -> serializers.CharField:
    options: dict[str, object] = {"max_length": 255, "allow_blank": False, "trim_whitespace": True}
    options.update(kwargs)
    return serializers.CharField(**options)  # type: ignore[arg-type]


def context_policy_names() -> list[str]:
    """`default` and the names in ENGRAM_CONTEXT_POLICIES, as clients may name them."""
    return ["default", *sorted(settings.ENGRAM_CONTEXT_POLICIES)]


@extend_schema_field({"type": "string", "enum": context_policy_names()})
class ContextPolicyField(serializers.CharField):
    """A named context policy (seed 004's A/B toggles). The schema lists the names
    configured when it was generated; validation reads the settings of the moment."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        names = context_policy_names()
        if value not in names:
            raise serializers.ValidationError(f"One of: {', '.join(names)}.")
        return value
