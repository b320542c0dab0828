"""Admin for the short-term window: summaries (read-only), and a "compact now" action on
sessions. Imported from `MemoryAppConfig.ready()`, after the
admin autodiscovery has registered sessions_app's `ChatSessionAdmin`, whose actions we
extend rather than re-register (sessions_app must not import memory_app)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memory_app.services.compaction import session_compact
from memory_app.window.models import ContextSummary
from sessions_app.models import ChatSession


@admin.register(ContextSummary)
class ContextSummaryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
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
def compact_now(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:  # type: ignore[type-arg]
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


def _extend_session_admin() -> None:
    model_admin = admin.site._registry.get(ChatSession)
    if model_admin is None:
        return
    admin_class = type(model_admin)
    existing = list(admin_class.actions or [])
    added = [action for action in (compact_now,) if action not in existing]
    if added:
        admin_class.actions = [*existing, *added]
        model_admin.actions = admin_class.actions


_extend_session_admin()
