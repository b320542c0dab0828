"""Admin for the short-term window: summaries (read-only), and a "compact now" action
that sessions_app's `ChatSessionAdmin` offers through its action registry
(`sessions_app.hooks.register_session_admin_action`: sessions_app must not import us)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memory_app.services.compaction import session_compact
from memory_app.window.models import ContextSummary
from sessions_app.hooks import register_session_admin_action


@admin.register(ContextSummary)
class ContextSummaryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in django-stubs only
    list_display = [
        "id",
        "session",
        "first_turn",
        "last_turn",
        "kind",
        "method",
        "tokens",
        "source_tokens",
        "superseded_by",
        "created_at",
    ]
    list_filter = ["kind", "method"]
    search_fields = ["=session__id"]
    raw_id_fields = ["tenant", "session", "superseded_by"]
    list_select_related = ["session"]
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # summaries come from compaction only

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.action(description="Compact now (summarise the older turns)")
def compact_now(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:  # type: ignore[type-arg]  # generic in django-stubs only
    compacted = skipped = 0
    for session_id in queryset.values_list("pk", flat=True):
        result = session_compact(session_id=session_id, force=True)
        if result.status == "compacted":
            compacted += 1
        else:
            skipped += 1
    modeladmin.message_user(
        request,
        f"Compacted {compacted} session(s); {skipped} had nothing to compact or were busy.",
        messages.SUCCESS,
    )


register_session_admin_action(compact_now)
