"""Admin for long-term memories. Edits go through `memory_app.services.memories`, as the
API's PATCH does: a new version (the previous one kept in history), re-embedded and
re-hashed when the text changes, duplicates refused. The list is safe on large tables
(estimated counts, exact-match searches, no full-table COUNT)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest

from memory_app.models import Memory, MemoryRelation, MemoryVersion
from memory_app.services.decay import memories_decay
from memory_app.services.memories import memory_delete, memory_update
from sessions_app.admin import LargeTableAdmin
from sessions_app.errors import ApplicationError

# What an operator may change; everything else is provenance or derived.
EDITABLE = [
    "content",
    "summary",
    "structured",
    "tags",
    "importance",
    "confidence",
    "scope",
    "allowed_users",
    "allowed_roles",
    "pinned",
    "valid_from",
    "valid_to",
]


class MemoryVersionInline(admin.TabularInline):  # type: ignore[type-arg]  # generic in django-stubs only
    model = MemoryVersion
    extra = 0
    can_delete = False
    fields = ("version", "content", "replaced_by", "valid_from", "replaced_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MemoryRelationInline(admin.TabularInline):  # type: ignore[type-arg]  # generic in django-stubs only
    model = MemoryRelation
    fk_name = "source"
    extra = 0
    raw_id_fields = ["target"]
    exclude = ["tenant"]
    readonly_fields = ["target_version", "reason"]  # written by merges and updates only


@admin.register(Memory)
class MemoryAdmin(LargeTableAdmin):
    list_display = [
        "short_content",
        "tenant",
        "user_id",
        "agent_id",
        "type",
        "scope",
        "importance",
        "decay_score",
        "access_count",
        "version",
        "pinned",
        "updated_at",
    ]
    list_filter = ["type", "scope", "source", "pinned", "tenant"]
    # Exact matches on indexed columns; a pasted memory id searches by primary key.
    search_fields = ["user_id__exact", "agent_id__exact"]
    uuid_search_field = "pk"
    list_select_related = ["tenant"]
    readonly_fields = [
        "id",
        "tenant",
        "user_id",
        "agent_id",
        "type",
        "source",
        "session_id",
        "content_hash",
        "embedding_model",
        "embedding_dimensions",
        "version",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "access_count",
        "decay_score",
        "superseded_by",  # set by supersession; a select of every memory is no editor
        "subject",
    ]
    exclude = ["embedding"]
    inlines = [MemoryVersionInline, MemoryRelationInline]
    actions = ["recompute_decay"]

    def save_model(self, request: HttpRequest, obj: Memory, form: ModelForm, change: bool) -> None:  # type: ignore[type-arg]  # generic only in the stubs
        """Through `memory_update`: a new version, re-embedded and re-hashed."""
        changes = {name: form.cleaned_data[name] for name in form.changed_data if name in EDITABLE}
        if not change or not changes:
            return
        try:
            memory_update(memory=Memory.objects.get(pk=obj.pk), changes=changes)
        except ApplicationError as exc:
            self.message_user(request, f"Not saved: {exc}", messages.ERROR)

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        memory_delete(memory=obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories are added through the API, which embeds and dedupes them

    @admin.display(description="content")
    def short_content(self, memory: Memory) -> str:
        return memory.content[:80]

    @admin.display(description="embedding")
    def embedding_dimensions(self, memory: Memory) -> str:
        return f"{len(memory.embedding)} dimensions ({memory.embedding_model})"

    @admin.action(description="Recompute decay (no deletion)")
    def recompute_decay(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        report = memories_decay(
            memory_ids=list(queryset.values_list("pk", flat=True)), delete=False
        )
        self.message_user(request, f"Rescored {report.scored} memories.", messages.INFO)
