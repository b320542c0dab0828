from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from sessions_app.models import (
    ApiKey,
    ChatSession,
    ChatTurn,
    IdempotencyRecord,
    Tenant,
    TurnStep,
)
from sessions_app.services.api_keys import api_key_create, api_key_revoke


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["name", "default_budget_tokens", "default_budget_usd", "created_at"]
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
class ApiKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
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


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = [
        "id",
        "tenant",
        "user_id",
        "agent_id",
        "status",
        "turn_count",
        "total_cost_usd",
        "last_active_at",
    ]
    list_filter = ["status", "tenant"]
    search_fields = ["=id", "user_id", "agent_id", "external_session_id"]
    raw_id_fields = ["tenant"]
    date_hierarchy = "created_at"
    show_full_result_count = False


class TurnStepInline(admin.TabularInline):  # type: ignore[type-arg]
    model = TurnStep
    extra = 0
    can_delete = False
    show_change_link = True
    fields = [
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
    ]
    readonly_fields = fields


@admin.register(ChatTurn)
class ChatTurnAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = [
        "id",
        "session",
        "turn_number",
        "tenant",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "call_count",
        "unpriced_calls",
        "rolled_back",
        "created_at",
    ]
    list_filter = ["rolled_back", "compacted", "tenant"]
    search_fields = ["=session__id", "idempotency_key", "user_message"]
    raw_id_fields = ["tenant", "session"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    list_select_related = ["tenant", "session"]
    inlines = [TurnStepInline]


@admin.register(TurnStep)
class TurnStepAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = [
        "id",
        "turn",
        "step_order",
        "step_type",
        "model",
        "agent_id",
        "user_id",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "price_missing",
        "success",
        "created_at",
    ]
    list_filter = ["price_missing", "success", "step_type", "tenant"]
    list_select_related = ["turn"]
    search_fields = ["model", "agent_id", "user_id", "=session__id"]
    raw_id_fields = ["tenant", "turn", "session"]
    date_hierarchy = "created_at"
    show_full_result_count = False


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["key", "tenant", "scope", "status", "response_status", "created_at"]
    list_filter = ["status", "tenant"]
    search_fields = ["key", "scope"]
    raw_id_fields = ["tenant"]
    readonly_fields = ["request_hash", "response_body", "created_at"]
    date_hierarchy = "created_at"
    show_full_result_count = False
