"""JSON bodies are held to the types the OpenAPI schema states.

DRF coerces generously: a string field takes `5`, an integer field takes `"5"` and `5.0`, a
boolean takes `"yes"` and `1`, a decimal takes `" 1e3 "`. The schema says `string`,
`integer`, `boolean` and a decimal pattern, so a client (or a fuzzer) reading the schema
cannot know what is accepted, and mistakes are stored instead of reported. Here every
serializer field that reads a JSON body takes exactly its schema's type; query parameters,
which are always text, keep DRF's parsing. Installed once from the app's `ready()`, so
serializers written later are held to it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, cast

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.fields import empty


def decimal_pattern(field: serializers.DecimalField) -> str:
    """The decimal strings a field takes: digits, an optional fraction, a sign only when
    negative values are allowed. The schema publishes the same pattern."""
    whole = (field.max_digits or 30) - (field.decimal_places or 0)
    places = field.decimal_places or 0
    non_negative = field.min_value is not None and Decimal(field.min_value) >= 0
    sign = "" if non_negative else "-?"
    fraction = rf"(?:\.\d{{1,{places}}})?" if places else ""
    return rf"^{sign}\d{{1,{max(whole, 1)}}}{fraction}$"


def _from_json_body(field: serializers.Field) -> bool:  # type: ignore[type-arg]  # generic in DRF's stubs only
    """Query serializers are bound to `request.query_params` (a QueryDict); anything else
    (bound to parsed JSON, or run with `run_validation` directly) reads a JSON body."""
    return not isinstance(getattr(field.root, "initial_data", None), QueryDict)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_CHECKS: dict[type, tuple[Callable[[serializers.Field, Any], bool], str]] = {  # type: ignore[type-arg]  # generic in DRF's stubs only
    serializers.CharField: (lambda f, v: isinstance(v, str), "Must be a string."),
    # JSON Schema counts 2.0 as an integer; DRF turns it into 2.
    serializers.IntegerField: (
        lambda f, v: (
            (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, float) and v.is_integer())
        ),
        "Must be an integer.",
    ),
    serializers.UUIDField: (lambda f, v: isinstance(v, str), "Must be a UUID string."),
    serializers.FloatField: (lambda f, v: _is_number(v), "Must be a number."),
    serializers.BooleanField: (lambda f, v: isinstance(v, bool), "Must be true or false."),
    serializers.DecimalField: (
        lambda f, v: (
            _is_number(v)
            # A minus sign passes this type check even where the pattern has none, so
            # that "-1" for a non-negative field hears the field's own "greater than or
            # equal to 0", as the number -1 does, not that it is no decimal string.
            or (
                isinstance(v, str)
                and re.fullmatch(decimal_pattern(f), v.removeprefix("-")) is not None  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept
            )
        ),
        'Must be a decimal string (e.g. "12.50") or a number.',
    ),
}


def _strict(
    original: Callable[[Any, Any], Any],
    check: Callable[[serializers.Field, Any], bool],  # type: ignore[type-arg]  # generic in DRF's stubs only
    message: str,
) -> Callable[[Any, Any], Any]:
    def run_validation(self: serializers.Field, data: Any = empty) -> Any:  # type: ignore[type-arg]  # generic in DRF's stubs only
        # Wraps run_validation, not to_internal_value: DRF turns "" into None for nullable
        # fields before to_internal_value runs, which would let `"budget_usd": ""` through.
        typed = data is not empty and data is not None
        if typed and _from_json_body(self) and not check(self, data):
            raise serializers.ValidationError(message, code="invalid")
        return original(self, data)

    run_validation.__engram_strict__ = True  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
    return run_validation


def _writable_names(serializer: serializers.Serializer) -> frozenset[str]:  # type: ignore[type-arg]  # generic in DRF's stubs only
    """The names of the serializer's writable fields, worked out once per instance (DRF
    binds an instance's fields once; the turn serializers are shared by every request)."""
    names = serializer.__dict__.get("_engram_writable_names")
    if names is None:
        names = frozenset(name for name, field in serializer.fields.items() if not field.read_only)
        serializer.__dict__["_engram_writable_names"] = names
    return cast(frozenset[str], names)


def _refuse_unknown_fields(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def to_internal_value(self: serializers.Serializer, data: Any) -> Any:  # type: ignore[type-arg]  # generic in DRF's stubs only
        if isinstance(data, Mapping) and _from_json_body(self):
            known = _writable_names(self)
            unknown = sorted(str(key) for key in data if key not in known)
            if unknown:
                raise serializers.ValidationError(
                    {name: ["Unknown field."] for name in unknown}, code="invalid"
                )
        return original(self, data)

    to_internal_value.__engram_strict__ = True  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
    return to_internal_value


def install() -> None:
    """Idempotent: wraps each field class's `run_validation` once, and makes serializers
    reading a JSON body refuse fields they do not declare (a typo such as `budget_token`
    would otherwise be dropped silently; the schema says `additionalProperties: false`)."""
    current_serializer = serializers.Serializer.to_internal_value
    if not getattr(current_serializer, "__engram_strict__", False):
        serializers.Serializer.to_internal_value = _refuse_unknown_fields(  # type: ignore[method-assign,assignment]  # replaced on the instance on purpose
            current_serializer
        )
    for cls, (check, message) in _CHECKS.items():
        current = cls.run_validation  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
        if getattr(current, "__engram_strict__", False):
            continue
        cls.run_validation = _strict(current, check, message)  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
