"""Serializer fields shared by the API's serializers."""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import datetime
from typing import Any

from django.core.validators import RegexValidator
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils import html

MAX_TOKENS_PER_VALUE = 10_000_000_000  # absurd above this: no request moves 10B tokens


def token_count_field(**kwargs: object) -> serializers.IntegerField:
    options: dict[str, object] = {"min_value": 0, "max_value": MAX_TOKENS_PER_VALUE}
    options.update(kwargs)
    return serializers.IntegerField(**options)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept


def money_output_field(**kwargs: object) -> serializers.DecimalField:
    """USD as a decimal string with six places: micro-dollars."""
    options: dict[str, object] = {
        "max_digits": 20,
        "decimal_places": 6,
        "coerce_to_string": True,
        "read_only": True,
    }
    options.update(kwargs)
    return serializers.DecimalField(**options)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept


# Text the API takes: any string without NUL, which the JSON parser and the query-string
# middleware refuse everywhere (PostgreSQL cannot store it). The schema states it as the
# `pattern` of every request string that has no stricter one (sessions_app.api.schema).
TEXT_PATTERN = r"^[^\u0000]*$"
# The same without "": drf-spectacular states a field that allows blank text as
# `oneOf: [its schema, {maxLength: 0}]`, so its own branch must not match "" too.
NON_EMPTY_TEXT_PATTERN = r"^[^\u0000]+$"
# What Python's str.strip() (which DRF trims with) removes.
_STRIPPED = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0"
    r"\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
)
# A trimmed field that refuses blank text: something besides what strip() removes, no NUL.
NOT_BLANK_TEXT_PATTERN = rf"^[^\u0000]*[^\u0000{_STRIPPED}][^\u0000]*$"
# A free-form JSON value nests strings and keys that OpenAPI 3.0 cannot give a pattern
# (it has no `propertyNames`), so its description says what the JSON parser does: NUL at
# any depth is refused, 400 naming the path (`metadata.notes.0`).
FREE_JSON_NOTE = (
    "No string or key inside may hold NUL (\\u0000), which PostgreSQL cannot store: "
    "400 naming its path."
)

# An identifier (user, agent, …) holds a visible character: not only whitespace or
# control characters, and no NUL anywhere. The class spells out every character Python's
# str.strip() or ECMAScript's \s treats as blank, so the server and a client reading the
# schema's `pattern` decide alike.
_VISIBLE = r"[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
IDENTIFIER_PATTERN = rf"^[^\u0000]*{_VISIBLE}[^\u0000]*$"
IDENTIFIER_MAX_LENGTH = 255
IDENTIFIER_RULE = f"1 to {IDENTIFIER_MAX_LENGTH} characters, not only blanks or control characters."
_IDENTIFIER_RE = re.compile(IDENTIFIER_PATTERN)
_identifier_validator = RegexValidator(_IDENTIFIER_RE, message=IDENTIFIER_RULE)
# The schema of an identifier in a path.
IDENTIFIER_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": IDENTIFIER_MAX_LENGTH,
    "pattern": IDENTIFIER_PATTERN,
}


class IdentifierField(serializers.CharField):
    """A trimmed identifier whose length limit counts the value as sent, as the schema's
    `maxLength` does (DRF measures after trimming)."""

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return str(super().to_internal_value(data))


def identifier_field(**kwargs: object) -> serializers.CharField:
    options: dict[str, object] = {
        "max_length": IDENTIFIER_MAX_LENGTH,
        "allow_blank": False,
        "trim_whitespace": True,
        "validators": [_identifier_validator],
    }
    options.update(kwargs)
    return IdentifierField(**options)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept


def checked_identifier(value: str) -> str | None:
    """`value` trimmed the way an identifier field trims it, or None when it breaks
    IDENTIFIER_RULE: for identifiers outside a body (a path), so that one rule holds. The
    length is the value's as sent, before trimming, as the schema's `maxLength` says."""
    if len(value) > IDENTIFIER_MAX_LENGTH:
        return None
    value = value.strip()
    if not _IDENTIFIER_RE.search(value):
        return None
    return value


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


def given_blank(field: serializers.Field, data: Any) -> bool:  # type: ignore[type-arg]  # generic in DRF's stubs only
    """True when a query string gives `field` blank (`?budget=`). DRF reads a blank
    optional field of a query string as omitted; a field that calls this refuses it as
    the bad value it is instead of answering with the default."""
    return html.is_html_input(data) and data.get(field.field_name) == ""


class QueryIntegerField(serializers.IntegerField):
    """An integer query parameter: given blank (`?memory_limit=`), 400 "A valid integer
    is required." like any other value that is not one; omitted, its default."""

    def get_value(self, dictionary: Any) -> Any:
        if given_blank(self, dictionary):
            return ""
        return super().get_value(dictionary)


# What the API says of every date-time it takes (the schema's `date-time` format is
# RFC 3339's, which has no time without an offset and no bare date).
OFFSET_REQUIRED = (
    "Give the time with its UTC offset, e.g. 2024-05-01T10:00:00Z or 2024-05-01T12:00:00+02:00."
)
OFFSET_RULE = (
    "With its UTC offset (2024-05-01T10:00:00Z, 2024-05-01T12:00:00+02:00); a time "
    "without one, or a bare date, is refused: 400 naming the field."
)
# A stored time is kept in UTC, so it must fall inside Python's calendar there.
STORED_TIME_RANGE = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"
RANGE_RULE = f"Once in UTC, within {STORED_TIME_RANGE} (else 400 naming the field)."


def without_offset(value: Any) -> bool:
    """True for a datetime, or an ISO 8601 string of one, that has no UTC offset (a bare
    date reads as a local midnight)."""
    if isinstance(value, datetime):
        return timezone.is_naive(value)
    if not isinstance(value, str):
        return False
    with suppress(ValueError):  # a malformed value is the field's own `invalid` error
        parsed = parse_datetime(value)
        return parsed is not None and parsed.tzinfo is None
    return False


class OffsetDateTimeField(serializers.DateTimeField):
    """A date-time the client sends: ISO 8601 with its UTC offset, kept as that moment in
    UTC. A local time or a bare date is refused rather than read in some zone: only the
    client knows which zone it meant, and a guess moves the moment by hours. `help_text`
    gets the rules appended, so that every such field documents them alike."""

    default_error_messages = {
        "offset": OFFSET_REQUIRED,
        "overflow": f"Outside the supported range, {STORED_TIME_RANGE}.",
    }
    rules: tuple[str, ...] = (OFFSET_RULE, RANGE_RULE)

    def __init__(self, *, help_text: str = "", **kwargs: Any) -> None:
        super().__init__(help_text=" ".join((help_text, *self.rules)).strip(), **kwargs)

    def to_internal_value(self, value: Any) -> datetime:
        if without_offset(value):
            self.fail("offset")
        return super().to_internal_value(value)
