"""Admin for the short-term window: summaries (read-only), and "compact now" and "erase
these users" actions on sessions. Imported from `MemoryAppConfig.ready()`, after the
admin autodiscovery has registered sessions_app's `ChatSessionAdmin`, whose actions we
extend rather than re-register (sessions_app must not import memory_app)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from memory_app.models_window import ContextSummary
from memory_app.services.compaction import session_compact
from memory_app.services.erasure import user_erase
from sessions_app.models import ChatSession, Tenant


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


@admin.action(description="Erase these sessions' users (everything the tenant holds about them)")
def erase_users(
    modeladmin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    queryset: QuerySet,  # type: ignore[type-arg]
) -> TemplateResponse | None:
    """Right to erasure from the admin, behind a confirmation page: sessions, turns,
    steps, cart, memories and rollups of each (tenant, user) go, as with
    `DELETE /api/v1/users/{user_id}`."""
    users = sorted(
        set(queryset.values_list("tenant_id", "tenant__name", "user_id")), key=lambda u: u[1:]
    )
    if request.POST.get("confirm") == "yes":
        tenants = {
            tenant.pk: tenant for tenant in Tenant.objects.filter(pk__in=[u[0] for u in users])
        }
        for tenant_id, _name, user_id in users:
            user_erase(tenant=tenants[tenant_id], user_id=user_id)
        modeladmin.message_user(request, f"Erased {len(users)} user(s).", messages.SUCCESS)
        return None
    return TemplateResponse(
        request,
        "admin/memory_app/erase_users_confirm.html",
        {
            **modeladmin.admin_site.each_context(request),
            "title": "Erase users?",
            "users": users,
            "queryset": queryset,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "opts": modeladmin.model._meta,
        },
    )


def _extend_session_admin() -> None:
    model_admin = admin.site._registry.get(ChatSession)
    if model_admin is None:
        return
    admin_class = type(model_admin)
    existing = list(admin_class.actions or [])
    added = [action for action in (compact_now, erase_users) if action not in existing]
    if added:
        admin_class.actions = [*existing, *added]
        model_admin.actions = admin_class.actions


_extend_session_admin()
