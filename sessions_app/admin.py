"""Operators' admin for sessions, turns, steps, workspace and keys.

Turn, step and workspace rows are the audit log: shown read-only, written only by the
services. Every list is safe on tables of millions of rows: no full COUNT(*)
(`EstimatedCountPaginator`, `show_full_result_count = False`), no DISTINCT-over-table
list filters, raw-id widgets for foreign keys, and a pasted session id searches by index.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

# The sessions' and the period budgets' admins register on import.
from sessions_app import admin_budgets, admin_sessions  # noqa: F401
from sessions_app.admin_common import (
    LargeTableAdmin,
    ReadOnlyAdminMixin,
    ReadOnlyInline,
    RecentFilter,
    admin_link_id,
)
from sessions_app.models import (
    ApiKey,
    ChatSession,
    ChatTurn,
    IdempotencyRecord,
    OutboxMessage,
    SessionComponent,
    SessionSelection,
    Tenant,
    TenantContextPolicy,
    TurnStep,
)
from sessions_app.services.api_keys import api_key_create, api_key_revoke


class StepInline(ReadOnlyInline):
    model = TurnStep
    show_change_link = False
    fields = readonly_fields = (
        "step_order",
        "step_type",
        "model",
        "input_tokens",
        "cached_tokens",
        "output_tokens",
        "reasoning_tokens",
        "cost_usd",
        "price_missing",
        "duration_ms",
        "success",
        "error",
    )


class TenantContextPolicyInline(admin.TabularInline):  # type: ignore[type-arg]  # generic in django-stubs only
    """The tenant's named context policies (also editable by its keys through
    `/api/v1/tenant/context-policies`); ENGRAM_CONTEXT_POLICIES are every tenant's
    defaults and a row of the same name replaces one for this tenant."""

    model = TenantContextPolicy
    extra = 0
    fields = ["name", "keep_last_turns", "memory_limit", "compression", "predecessor_depth"]


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in django-stubs only
    inlines = [TenantContextPolicyInline]
    list_display = [
        "name",
        "default_budget_tokens",
        "default_budget_usd",
        "capture_prompts",
        "created_at",
    ]
    search_fields = ["name"]
    actions = ["issue_api_key"]

    @admin.action(description="Issue a new API key (shown once)")
    def issue_api_key(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            issued = api_key_create(tenant=tenant, name=f"admin:{request.user}")
            self.message_user(
                request, f"New key for {tenant}: {issued.secret} (shown once)", messages.WARNING
            )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in django-stubs only
    list_display = ["prefix", "tenant", "name", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "name", "tenant__name"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at", "revoked_at"]
    raw_id_fields = ["tenant"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # keys are issued from a tenant, so that the secret can be shown once

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for api_key in queryset:
            api_key_revoke(api_key=api_key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


@admin.register(ChatTurn)
class ChatTurnAdmin(ReadOnlyAdminMixin, LargeTableAdmin):
    list_display = [
        "__str__",
        "session_link",
        "turn_number",
        "kind",
        "changed_by",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "call_count",
        "error_count",
        "rolled_back",
        "created_at",
    ]
    list_filter = [RecentFilter, "kind", "over_limit", "rolled_back", "compacted"]
    search_fields = ["idempotency_key__exact"]
    uuid_search_field = "session_id"
    raw_id_fields = ["session", "tenant"]
    inlines = [StepInline]
    ordering = ["-created_at"]

    @admin.display(description="session")
    def session_link(self, turn: ChatTurn) -> SafeString | str:
        return admin_link_id(ChatSession, turn.session_id, str(turn.session_id)[:8])


@admin.register(TurnStep)
class TurnStepAdmin(ReadOnlyAdminMixin, LargeTableAdmin):
    list_display = [
        "id",
        "step_type",
        "model",
        "input_tokens",
        "cached_tokens",
        "output_tokens",
        "cost_usd",
        "price_missing",
        "success",
        "turn_link",
        "session_link",
        "created_at",
    ]
    list_filter = [RecentFilter, "success", "price_missing"]
    search_fields = ["step_type__exact", "model__exact"]
    uuid_search_field = "session_id"
    raw_id_fields = ["session", "turn", "tenant"]
    ordering = ["-id"]

    @admin.display(description="turn")
    def turn_link(self, step: TurnStep) -> SafeString | str:
        if step.turn_id is None:
            return "— (user erased)"
        return admin_link_id(ChatTurn, step.turn_id, f"turn {step.turn_id}")

    @admin.display(description="session")
    def session_link(self, step: TurnStep) -> SafeString | str:
        if step.session_id is None:
            return "— (user erased)"
        return admin_link_id(ChatSession, step.session_id, str(step.session_id)[:8])

    def get_queryset(self, request: HttpRequest) -> QuerySet[TurnStep]:
        # The links need only the ids; no join per row.
        return super().get_queryset(request).defer("usage_raw")


@admin.register(SessionComponent)
class SessionComponentAdmin(ReadOnlyAdminMixin, LargeTableAdmin):
    list_display = ["mpn", "name", "component_type", "position", "session_link", "fetched_at"]
    search_fields = ["mpn__exact"]
    uuid_search_field = "session_id"
    raw_id_fields = ["session", "tenant"]

    @admin.display(description="session")
    def session_link(self, component: SessionComponent) -> SafeString | str:
        return admin_link_id(ChatSession, component.session_id, str(component.session_id)[:8])


@admin.register(SessionSelection)
class SessionSelectionAdmin(ReadOnlyAdminMixin, LargeTableAdmin):
    list_display = ["mpn", "position", "quantity", "session_link", "selected_at"]
    search_fields = ["mpn__exact"]
    uuid_search_field = "session_id"
    raw_id_fields = ["session", "tenant"]

    @admin.display(description="session")
    def session_link(self, selection: SessionSelection) -> SafeString | str:
        return admin_link_id(ChatSession, selection.session_id, str(selection.session_id)[:8])


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdminMixin, LargeTableAdmin):
    list_display = ["key", "tenant", "scope", "status", "response_status", "created_at"]
    list_filter = ["status"]
    search_fields = ["key__exact"]
    raw_id_fields = ["tenant"]


@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):  # type: ignore[type-arg]  # generic in django-stubs only
    """Tasks waiting for the broker: a growing list means the broker or the beat is down."""

    list_display = ["task_name", "args", "attempts", "created_at", "last_error"]
    list_filter = ["task_name"]
