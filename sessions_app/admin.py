from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from sessions_app.models import ApiKey, ChatSession, Tenant
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
