"""Admin for the rollups, their fill markers and runaway alerts. Rollups are derived data:
read-only here; a wrong number is fixed by the fill, never by hand."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from analytics_app.models import (
    RollupFillState,
    RunawayAlert,
    SpendRollup,
    UserSpendRollup,
)
from analytics_app.services.alerts import alert_resend
from sessions_app.admin import LargeTableAdmin, ReadOnlyAdminMixin, admin_link_id
from sessions_app.models import ChatSession

_COUNTERS = [
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "cost_usd",
    "calls",
    "errors",
    "unpriced_calls",
    "zero_cost_calls",
    "negative_cost_calls",
]


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
class RollupFillStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["name", "last_step_id", "filled_through", "updated_at"]


@admin.register(RunawayAlert)
class RunawayAlertAdmin(LargeTableAdmin):
    list_display = [
        "created_at",
        "reason",
        "session_link",
        "tenant",
        "status",
        "attempts",
        "delivered_at",
    ]
    list_filter = ["status", "reason", "tenant"]
    uuid_search_field = "session_id"
    list_select_related = ["tenant"]
    raw_id_fields = ["session", "tenant"]
    readonly_fields = [
        "tenant",
        "session",
        "episode",
        "reason",
        "payload",
        "status",
        "attempts",
        "last_error",
        "delivered_at",
        "created_at",
    ]
    actions = ["resend"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # alerts are opened by the detector, one per episode

    @admin.display(description="session")
    def session_link(self, alert: RunawayAlert) -> SafeString:
        return admin_link_id(ChatSession, alert.session_id, str(alert.session_id)[:8])

    @admin.action(description="Resend failed alerts")
    def resend(self, request: HttpRequest, queryset: QuerySet[RunawayAlert]) -> None:
        for alert in queryset:
            alert_resend(alert=alert)
        self.message_user(request, "Failed alerts queued for another delivery.")
