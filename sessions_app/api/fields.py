"""Serializer fields shared by the API's serializers."""

from __future__ import annotations

from typing import Any

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


POLICY_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


@extend_schema_field({"type": "string", "pattern": POLICY_NAME_PATTERN, "maxLength": 64})
class ContextPolicyField(serializers.RegexField):
    """A named context policy (seed 004's A/B toggles): `default`, a name from
    ENGRAM_CONTEXT_POLICIES or one of the tenant's own. The field checks the shape only;
    whether the tenant has a policy of that name is checked where the tenant is known
    (the session services, the context selector), 400 naming the field."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 64)
        super().__init__(POLICY_NAME_PATTERN, **kwargs)
        self.error_messages["invalid"] = (
            "A policy name: letters, digits, '_', '.', '-', starting with a letter or digit."
        )
