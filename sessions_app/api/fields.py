"""Serializer fields shared by the API's serializers."""

from __future__ import annotations

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
