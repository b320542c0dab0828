from __future__ import annotations

import re
from typing import Any

import django_filters
from django import forms
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from sessions_app.models import ChatSession, SessionStatus
from sessions_app.selectors.session_status import sessions_of_status


class StrictBooleanField(forms.Field):
    """`true` or `false` only. django-filter's boolean reads anything else (`maybe`, `null`)
    as "no filter" and answers everything, which a client cannot tell from a match."""

    def to_python(self, value: Any) -> bool | None:
        if value is None:
            return None
        if value in ("true", "false"):
            return value == "true"
        raise forms.ValidationError("Use true or false.")


@extend_schema_field(OpenApiTypes.BOOL)
class StrictBooleanFilter(django_filters.Filter):
    field_class = StrictBooleanField


_CANONICAL_UUID = re.compile(r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


class StrictUUIDField(forms.UUIDField):
    """The canonical 8-4-4-4-12 form only, as the schema's `format: uuid` says. Python's
    UUID parser also takes braces, `urn:uuid:` and bare hex, which the schema does not."""

    def to_python(self, value: Any) -> Any:
        # Present but empty (`?session_id=`) is a bad UUID too, not "no filter".
        if value is not None and not _CANONICAL_UUID.match(str(value)):
            raise forms.ValidationError("A UUID in its canonical form.")
        return super().to_python(value)


@extend_schema_field(OpenApiTypes.UUID)
class StrictUUIDFilter(django_filters.Filter):
    field_class = StrictUUIDField


class StrictChoiceField(django_filters.fields.ChoiceField):
    """Present but empty (`?scope=`) is not one of the choices the schema's `enum` lists:
    400 naming the parameter, not "no filter" (django-filter's reading of an empty value)."""

    def to_python(self, value: Any) -> Any:
        if value == "":
            raise forms.ValidationError(
                "One of: " + ", ".join(str(choice) for choice, _ in self.choices if choice) + "."
            )
        return super().to_python(value)


class StrictChoiceFilter(django_filters.ChoiceFilter):
    field_class = StrictChoiceField


class SessionFilter(django_filters.FilterSet):
    user_id = django_filters.CharFilter(help_text="Only this user's sessions.")
    agent_id = django_filters.CharFilter(help_text="Only this agent's sessions.")
    status = StrictChoiceFilter(
        choices=SessionStatus.choices,
        method="filter_status",
        help_text="Only sessions of this status as of now: a session past `expires_at` is "
        "`expired` (and no longer `opened`, `active` or `compacted`) even before the "
        "periodic task stores it so.",
    )
    external_session_id = django_filters.CharFilter()
    runaway = StrictBooleanFilter(
        field_name="runaway_at",
        lookup_expr="isnull",
        exclude=True,
        help_text="true: only sessions flagged as runaway.",
    )

    class Meta:
        model = ChatSession
        fields = ["user_id", "agent_id", "status", "external_session_id", "runaway"]

    def filter_status(
        self, queryset: QuerySet[ChatSession], name: str, value: str
    ) -> QuerySet[ChatSession]:
        return sessions_of_status(queryset, status=value)
