"""Admin for runaway alerts: read-only, with a resend action for failed deliveries."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from analytics_app.models import RunawayAlert
from analytics_app.services.alerts import alert_resend
from sessions_app.admin import LargeTableAdmin, admin_link_id


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
        session_model = RunawayAlert._meta.get_field("session").related_model
        return admin_link_id(session_model, alert.session_id, str(alert.session_id)[:8])

    @admin.action(description="Resend failed alerts")
    def resend(self, request: HttpRequest, queryset: QuerySet[RunawayAlert]) -> None:
        for alert in queryset:
            alert_resend(alert=alert)
        self.message_user(request, "Failed alerts queued for another delivery.")
