"""Operators' admin for chat sessions: the list with its runaway filter, the session page
with its latest turns and workspace, and the actions (archive, clear or block a runaway,
erase users) and edits (budgets, metadata) that go through the session services."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from sessions_app.admin_common import (
    LargeTableAdmin,
    ReadOnlyInline,
    RecentInlineFormSet,
    admin_link,
    changelist_link,
)
from sessions_app.hooks import session_admin_actions
from sessions_app.models import (
    ChatSession,
    ChatTurn,
    SessionComponent,
    SessionSelection,
    Tenant,
    TurnStep,
)
from sessions_app.services.erasure import user_erase
from sessions_app.services.runaway import session_clear_runaway, session_set_runaway_block
from sessions_app.services.sessions import session_archive, session_delete, session_update


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
        cart, memories and rollups of each (tenant, user) go and their steps stay as
        anonymous spend, as with `DELETE /api/v1/users/{user_id}`."""
        users = sorted(
            set(queryset.values_list("tenant_id", "tenant__name", "user_id")),
            key=lambda u: u[1:],
        )
        if request.POST.get("confirm") == "yes":
            tenants = Tenant.objects.in_bulk([u[0] for u in users])
            steps = 0
            for tenant_id, _name, user_id in users:
                erasure = user_erase(tenant=tenants[tenant_id], user_id=user_id)
                steps += erasure.anonymised["steps"]
            message = f"Erased {len(users)} user(s); their {steps} step(s) stay as anonymous spend."
            self.message_user(request, message, messages.SUCCESS)
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
