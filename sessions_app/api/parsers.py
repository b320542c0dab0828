"""The API's JSON parser: refuses, at the edge, what PostgreSQL cannot store.

Each of these would otherwise reach the database from whichever field carried it and fail
there as a 500: NUL characters and lone UTF-16 surrogates in any string or object key (text
and jsonb reject them), integers outside PostgreSQL's bigint, non-finite numbers (1e400
parses to infinity) and nesting deep enough to exhaust recursion in Python or PostgreSQL.
Checking the parsed document once here covers every field of every route, present and
future, and names the field (`metadata.notes.0`) in the 400.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

# Integer serializer fields stored in bigint columns cap at this (jsonb takes any number).
BIGINT_MAX = 2**63 - 1


def _bad_text(text: str) -> str | None:
    if "\x00" in text:
        return "NUL (\\u0000) characters are not allowed."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Lone UTF-16 surrogates (\\ud800-\\udfff) are not allowed."
    return None


def _path(parent: str, key: object) -> str:
    return f"{parent}.{key}" if parent else str(key)


def document_errors(document: Any, max_depth: int) -> dict[str, list[str]]:
    """Problems in a parsed JSON document, by dotted field path. Iterative: the check itself
    must not recurse on a document built to be deep."""
    errors: dict[str, list[str]] = {}
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        name = path or "non_field_errors"
        if depth > max_depth and isinstance(value, (dict, list)):
            errors[name] = [f"Nested deeper than {max_depth} levels."]
            continue
        if isinstance(value, str):
            problem = _bad_text(value)
            if problem:
                errors[name] = [problem]
        elif isinstance(value, float):
            if not math.isfinite(value):
                errors[name] = ["Numbers must be finite."]
        elif isinstance(value, dict):
            for key, item in value.items():
                key_problem = _bad_text(key)
                if key_problem:
                    errors[_path(path, repr(key)[1:-1])] = [f"Object key: {key_problem}"]
                    continue
                stack.append((item, _path(path, key), depth + 1))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                stack.append((item, _path(path, index), depth + 1))
    return errors


class StrictJSONParser(JSONParser):
    """DRF's JSONParser (which already refuses NaN/Infinity) plus the checks above."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
        except (UnicodeError, LookupError) as exc:
            # UnicodeError, not only UnicodeDecodeError: a UTF-16 body without a BOM
            # raises the base class (a 500 before); LookupError: an unknown charset.
            raise ParseError(f"The body is not valid {encoding}.") from exc
        try:
            document = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError as exc:
            raise ParseError("JSON nested too deeply.") from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        errors = document_errors(document, settings.ENGRAM_MAX_JSON_DEPTH)
        if errors:
            raise ValidationError(errors)
        return document


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
