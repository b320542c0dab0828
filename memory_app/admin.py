from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memory_app.models import Memory, MemoryRelation, MemoryVersion
from memory_app.services.decay import memories_decay


class MemoryVersionInline(admin.TabularInline):  # type: ignore[type-arg]
    model = MemoryVersion
    extra = 0
    can_delete = False
    fields = ("version", "content", "replaced_by", "valid_from", "replaced_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MemoryRelationInline(admin.TabularInline):  # type: ignore[type-arg]
    model = MemoryRelation
    fk_name = "source"
    extra = 0
    raw_id_fields = ["target"]
    exclude = ["tenant"]


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
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
    search_fields = ["content", "summary", "user_id", "agent_id", "tags"]
    readonly_fields = [
        "id",
        "content_hash",
        "embedding_model",
        "embedding_dimensions",
        "version",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "access_count",
        "decay_score",
    ]
    exclude = ["embedding"]
    raw_id_fields = ["tenant"]
    inlines = [MemoryVersionInline, MemoryRelationInline]
    actions = ["recompute_decay"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return super().get_queryset(request).select_related("tenant")

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
