"""What the admins of every app share: links to admin pages, the defaults for tables
that grow with traffic (estimated counts, indexed search of a pasted id), and read-only
lists and inlines for audit rows."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db import models
from django.db.models import Model, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from sessions_app.admin_fields import AdminJSONField
from sessions_app.admin_paging import EstimatedCountPaginator


def admin_link(obj: Model | None, label: object = None) -> SafeString | str:
    """A link to the object's admin change page."""
    if obj is None:
        return "—"
    return admin_link_id(type(obj), obj.pk, label if label is not None else obj)


def admin_link_id(model: type[Model], pk: object, label: object) -> SafeString:
    """The same from an id alone, so that a list of rows does not load each related row."""
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, label)


def changelist_link(model: type[Model], label: str, **filters: object) -> SafeString:
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    query = "&".join(f"{key}={value}" for key, value in filters.items())
    return format_html('<a href="{}?{}">{}</a>', url, query, label)


class LargeTableAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in django-stubs only
    """Defaults for tables that grow with traffic."""

    formfield_overrides = {models.JSONField: {"form_class": AdminJSONField}}

    paginator = EstimatedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    # Searching a pasted session id filters by the indexed column instead of casting
    # every row to text (what the admin's default `=field` search does).
    uuid_search_field: str | None = None

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        if self.uuid_search_field:
            try:
                value = uuid.UUID(search_term.strip())
            except ValueError:
                pass
            else:
                return queryset.filter(**{self.uuid_search_field: value}), False
        return super().get_search_results(request, queryset, search_term)


class ReadOnlyAdminMixin:
    """Audit rows: viewable, never edited or deleted by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RecentFilter(admin.SimpleListFilter):
    """Time windows that use the created_at indexes (a date hierarchy on these tables would
    run SELECT DISTINCT date_trunc(…) over every row)."""

    title = "created"
    parameter_name = "recent"
    windows = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("1h", "last hour"), ("24h", "last 24 hours"), ("7d", "last 7 days")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        window = self.windows.get(self.value() or "")
        return queryset.filter(created_at__gte=timezone.now() - window) if window else queryset


class RecentInlineFormSet(BaseInlineFormSet):  # type: ignore[type-arg]  # generic in django-stubs only
    """Shows the newest rows only: a runaway session can hold tens of thousands of turns,
    which belong in the paginated turn list, not in one page."""

    limit = 20
    newest_first = "-turn_number"

    def get_queryset(self) -> QuerySet[Any]:
        if not hasattr(self, "_recent"):
            self._recent = super().get_queryset().order_by(self.newest_first)[: self.limit]
        return self._recent


class ReadOnlyInline(ReadOnlyAdminMixin, admin.TabularInline):  # type: ignore[type-arg]  # generic in django-stubs only
    extra = 0
    show_change_link = True
    can_delete = False
