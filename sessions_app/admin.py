"""Operators' admin for sessions, turns, steps, workspace and keys.

Turn, step and workspace rows are the audit log: shown read-only, written only by the
services. Every list is safe on tables of millions of rows: no full COUNT(*)
(`EstimatedCountPaginator`, `show_full_result_count = False`), no DISTINCT-over-table
list filters, raw-id widgets for foreign keys, and a pasted session id searches by index.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import models
from django.db.models import Model, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from sessions_app.admin_fields import AdminJSONField
from sessions_app.admin_paging import EstimatedCountPaginator
from sessions_app.hooks import session_admin_actions
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
from sessions_app.services.erasure import user_erase
from sessions_app.services.runaway import session_clear_runaway, session_set_runaway_block
from sessions_app.services.sessions import session_archive, session_delete, session_update


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


class RunawayFilter(admin.SimpleListFilter):
    title = "runaway"
    parameter_name = "runaway"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("flagged", "flagged"), ("blocked", "blocked"), ("no", "not flagged")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "flagged":
            return queryset.filter(runaway_at__isnull=False)
        if value == "blocked":
            return queryset.filter(runaway_blocked=True)
        if value == "no":
            return queryset.filter(runaway_at__isnull=True)
        return queryset


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


class RecentTurnInline(ReadOnlyInline):
    model = ChatTurn
    formset = RecentInlineFormSet
    verbose_name_plural = f"latest {RecentInlineFormSet.limit} turns (all in the turn list)"
    fields = readonly_fields = (
        "turn_number",
        "kind",
        "created_at",
        "message",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "call_count",
        "error_count",
        "rolled_back",
    )

    @admin.display(description="user message")
    def message(self, turn: ChatTurn) -> str:
        return turn.user_message[:80]


class ComponentInline(ReadOnlyInline):
    model = SessionComponent
    fields = readonly_fields = ("position", "mpn", "name", "component_type", "fetched_at")


class SelectionInline(ReadOnlyInline):
    model = SessionSelection
    fields = readonly_fields = ("position", "mpn", "quantity", "note", "selected_at")


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


@admin.register(ChatSession)
class ChatSessionAdmin(LargeTableAdmin):
    list_display = [
        "id",
        "tenant",
        "user_id",
        "agent_id",
        "status",
        "turn_count",
        "tokens",
        "total_cost_usd",
        "budget_use",
        "runaway",
        "last_active_at",
    ]
    list_filter = ["status", RunawayFilter, "runaway_reason", "tenant"]
    search_fields = ["user_id__exact", "agent_id__exact", "external_session_id__exact"]
    uuid_search_field = "pk"
    raw_id_fields = ["tenant"]
    date_hierarchy = "created_at"
    list_select_related = ["tenant"]
    inlines = [RecentTurnInline, ComponentInline, SelectionInline]
    own_actions = ["archive", "clear_runaway", "block", "unblock", "erase_users"]

    @property
    def actions(self) -> list[Any]:  # type: ignore[override]  # the framework allows this narrower signature
        """Ours, then those other apps registered (`hooks.register_session_admin_action`)."""
        return [*self.own_actions, *session_admin_actions()]

    def delete_model(self, request: HttpRequest, obj: ChatSession) -> None:
        session_delete(session=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> None:
        for session in queryset:
            session_delete(session=session)

    # Only budgets and metadata are edited here, through `session_update`; totals, flags and
    # workspace move with the services that own them.
    editable = ["budget_tokens", "budget_usd", "metadata"]
    fieldsets = [
        (None, {"fields": ["id", "tenant_link", "user_id", "agent_id", "status", "links"]}),
        (
            "Totals",
            {
                "fields": [
                    "turn_count",
                    "tokens",
                    "total_input_tokens",
                    "total_output_tokens",
                    "total_cached_tokens",
                    "total_reasoning_tokens",
                    "total_cost_usd",
                    "cost_per_turn",
                    "total_calls",
                    "total_errors",
                    "unpriced_calls",
                ]
            },
        ),
        ("Budget", {"fields": ["budget_tokens", "budget_usd", "budget_use", "budget_exceeded_at"]}),
        (
            "Runaway",
            {"fields": ["runaway_at", "runaway_reason", "runaway_detail", "runaway_blocked"]},
        ),
        (
            "Context",
            {
                "classes": ["collapse"],
                "fields": [
                    "focus_mpn",
                    "last_query",
                    "last_filters",
                    "last_results",
                    "state",
                    "metadata",
                    "external_session_id",
                    "provider",
                    "model",
                    "compact_context_share",
                    "rotate_after_tokens",
                    "previous_session",
                ],
            },
        ),
        (
            "Lifetime",
            {"fields": ["ttl_seconds", "expires_at", "created_at", "last_active_at", "updated_at"]},
        ),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        names = [
            name
            for fieldset in self.fieldsets
            for name in fieldset[1]["fields"]
            if isinstance(name, str)
        ]
        return [name for name in names if name not in self.editable]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # sessions are opened by agents through the API

    def save_model(self, request: HttpRequest, obj: ChatSession, form: Any, change: bool) -> None:
        changes = {
            name: form.cleaned_data[name] for name in self.editable if name in form.changed_data
        }
        if changes:
            session_update(session=obj, **changes)

    @admin.display(description="tokens")
    def tokens(self, session: ChatSession) -> int:
        return session.total_tokens

    @admin.display(description="tenant")
    def tenant_link(self, session: ChatSession) -> SafeString | str:
        return admin_link(session.tenant)

    @admin.display(description="cost per turn")
    def cost_per_turn(self, session: ChatSession) -> str:
        if not session.turn_count:
            return "—"
        return f"${session.total_cost_usd / session.turn_count:.6f}"

    @admin.display(description="budget used")
    def budget_use(self, session: ChatSession) -> str:
        parts = []
        if session.budget_tokens:
            parts.append(f"{100 * session.total_tokens / session.budget_tokens:.0f}% tokens")
        if session.budget_usd:
            parts.append(f"{100 * session.total_cost_usd / session.budget_usd:.0f}% USD")
        return ", ".join(parts) or "no budget"

    @admin.display(description="runaway")
    def runaway(self, session: ChatSession) -> str:
        if session.runaway_at is None:
            return ""
        return f"{session.runaway_reason}{' (blocked)' if session.runaway_blocked else ''}"

    @admin.display(description="see also")
    def links(self, session: ChatSession) -> SafeString:
        links = format_html(
            "{} · {}",
            changelist_link(ChatTurn, "all turns", session__id__exact=session.pk),
            changelist_link(TurnStep, "all steps", session__id__exact=session.pk),
        )
        try:  # the operators' cockpit, by URL name: this app does not import it
            cockpit = format_html(
                ' · <a href="{}">cockpit: session</a> · <a href="{}">cockpit: user</a>',
                reverse("cockpit-session", args=[session.pk]),
                reverse("cockpit-user", args=[session.tenant_id, session.user_id]),
            )
        except NoReverseMatch:
            return links
        return format_html("{}{}", links, cockpit)

    @admin.action(description="Archive selected sessions")
    def archive(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> None:
        for session in queryset:
            session_archive(session=session)
        self.message_user(request, f"Archived {len(queryset)} session(s).")

    @admin.action(description="Clear the runaway flag (unblocks; a new episode can alert)")
    def clear_runaway(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> None:
        for session in queryset.filter(runaway_at__isnull=False):
            session_clear_runaway(session=session)
        self.message_user(request, "Runaway flags cleared.")

    @admin.action(description="Block: budget/check answers 429")
    def block(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> None:
        for session in queryset:
            session_set_runaway_block(session=session, blocked=True)
        self.message_user(request, f"Blocked {len(queryset)} session(s).")

    @admin.action(description="Unblock")
    def unblock(self, request: HttpRequest, queryset: QuerySet[ChatSession]) -> None:
        for session in queryset:
            session_set_runaway_block(session=session, blocked=False)
        self.message_user(request, f"Unblocked {len(queryset)} session(s).")

    @admin.action(
        description="Erase these sessions' users (everything the tenant holds about them)"
    )
    def erase_users(
        self, request: HttpRequest, queryset: QuerySet[ChatSession]
    ) -> TemplateResponse | None:
        """Right to erasure from the admin, behind a confirmation page: sessions, turns,
        steps, cart, memories and rollups of each (tenant, user) go, as with
        `DELETE /api/v1/users/{user_id}`."""
        users = sorted(
            set(queryset.values_list("tenant_id", "tenant__name", "user_id")),
            key=lambda u: u[1:],
        )
        if request.POST.get("confirm") == "yes":
            tenants = Tenant.objects.in_bulk([u[0] for u in users])
            for tenant_id, _name, user_id in users:
                user_erase(tenant=tenants[tenant_id], user_id=user_id)
            self.message_user(request, f"Erased {len(users)} user(s).", messages.SUCCESS)
            return None
        return TemplateResponse(
            request,
            "admin/sessions_app/erase_users_confirm.html",
            {
                **self.admin_site.each_context(request),
                "title": "Erase users?",
                "users": users,
                "queryset": queryset,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
            },
        )


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
        return admin_link_id(ChatTurn, step.turn_id, f"turn {step.turn_id}")

    @admin.display(description="session")
    def session_link(self, step: TurnStep) -> SafeString | str:
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


from sessions_app import admin_budgets  # noqa: E402, F401 - registers the period budgets' admin
