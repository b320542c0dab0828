"""Admin for the rollups and their fill markers. Rollups are derived data:
read-only here; a wrong number is fixed by the fill, never by hand."""

from __future__ import annotations

from django.contrib import admin

from analytics_app.models import ROLLUP_COUNTERS, RollupFillState, SpendRollup, UserSpendRollup
from sessions_app.admin import LargeTableAdmin, ReadOnlyAdminMixin

_COUNTERS = list(ROLLUP_COUNTERS)


@admin.register(SpendRollup)
class SpendRollupAdmin(ReadOnlyAdminMixin, LargeTableAdmin):
    list_display = ["bucket_start", "granularity", "tenant", "model", "agent_id", "step_type"]
    list_display += _COUNTERS
    list_filter = ["granularity", "tenant"]
    search_fields = ["model__exact", "agent_id__exact", "step_type__exact"]
    date_hierarchy = "bucket_start"
    list_select_related = ["tenant"]


@admin.register(UserSpendRollup)
class UserSpendRollupAdmin(ReadOnlyAdminMixin, LargeTableAdmin):
    list_display = ["bucket_start", "tenant", "user_id", *_COUNTERS]
    list_filter = ["tenant"]
    search_fields = ["user_id__exact"]
    date_hierarchy = "bucket_start"
    list_select_related = ["tenant"]


@admin.register(RollupFillState)
class RollupFillStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]  # generic in django-stubs only
    list_display = ["name", "last_step_id", "filled_through", "updated_at"]
