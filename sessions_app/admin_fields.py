"""The admin's form field for JSON an operator types, held to the API's rules."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput

from sessions_app.api.parsers import document_errors


class AdminJSONField(forms.JSONField):
    """Django's JSON form field with the API's rules for a document (no NUL, no lone
    surrogate, not nested past ENGRAM_MAX_JSON_DEPTH: `document_errors`), and safe to show
    again with its error: text nested deeper than Python's recursion no longer raises out
    of the form, and a document holding a lone surrogate (typed as a `\\ud800` escape) is
    shown with escapes instead of failing to encode the page. Both were a 500 on the
    change page of a session (`metadata`)."""

    def to_python(self, value: Any) -> Any:
        try:
            document = super().to_python(value)
        except RecursionError as exc:
            raise ValidationError("Nested too deeply.", code="invalid") from exc
        problems = document_errors(document, settings.ENGRAM_MAX_JSON_DEPTH)
        if problems:
            raise ValidationError(
                [f"{path}: {' '.join(texts)}" for path, texts in problems.items()],
                code="invalid",
            )
        return document

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except RecursionError:
            return InvalidJSONInput(data)

    def prepare_value(self, value: Any) -> Any:
        text = super().prepare_value(value)
        if isinstance(value, InvalidJSONInput) or not isinstance(text, str):
            return text
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(value, cls=self.encoder)  # ASCII: the surrogate as an escape
        return text
