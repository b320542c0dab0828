"""A memory as the API writes it out: `MemorySerializer` (the schema, and the body of
the single-memory routes), `memory_data` (the same body written directly, for the
search's many hits) and the results of adding memories."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memory_app.api.serializers import RelationInputSerializer
from memory_app.models import Memory


class MemorySerializer(serializers.ModelSerializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    relations = serializers.SerializerMethodField(help_text="Edges to other memories.")
    superseded_by = serializers.UUIDField(
        source="superseded_by_id",
        allow_null=True,
        read_only=True,
        help_text="The newer memory that replaced this one (it gave the same subject "
        "another value); null while this one is current. A superseded memory stays "
        "searchable; questions about the current state rank it below its successor.",
    )

    class Meta:
        model = Memory
        fields = [
            "id",
            "user_id",
            "agent_id",
            "type",
            "scope",
            "content",
            "summary",
            "structured",
            "metadata",
            "tags",
            "importance",
            "confidence",
            "source",
            "session_id",
            "version",
            "embedding_model",
            "created_at",
            "updated_at",
            "last_accessed_at",
            "access_count",
            "decay_score",
            "pinned",
            "allowed_users",
            "allowed_roles",
            "relations",
            "thread_key",
            "thread_order",
            "occurred_at",
            "valid_from",
            "valid_to",
            "superseded_by",
            "subject",
        ]
        read_only_fields = fields

    @extend_schema_field(RelationInputSerializer(many=True))
    def get_relations(self, memory: Memory) -> list[dict[str, Any]]:
        return memory_edges(memory)


def memory_edges(memory: Memory) -> list[dict[str, Any]]:
    """A memory's edges to other memories as a memory body lists them, by edge id; not
    its version edges (those are in GET …/relations). A search hit brings its own
    (`search_edges`, memory_app.selectors.search); the other readers prefetch
    `relations`."""
    found = getattr(memory, "search_edges", None)
    if found is not None:
        return [{"type": kind, "target_id": str(target)} for kind, target in found]
    return [
        {"type": relation.type, "target_id": str(relation.target_id)}
        for relation in sorted(memory.relations.all(), key=lambda relation: relation.pk)
        if relation.target_version is None
    ]


_DATETIME = serializers.DateTimeField()  # DRF's own output format and time zone
_TEXT_FIELDS: tuple[str, ...] = ("user_id", "agent_id", "type", "scope", "content")
_TEXT_FIELDS += ("summary", "source", "embedding_model", "thread_key", "subject")


def memory_data(memory: Memory) -> dict[str, Any]:
    """`MemorySerializer(memory).data`, written out. A search answers with up to 100
    memories of 27 fields each, and DRF's generic path (a bound field, get_attribute and
    to_representation per field per memory) was about a sixth of a search's server time;
    tests/memory_app/test_search_payload.py keeps the two equal, field for field."""

    def when(value: Any) -> str | None:
        return None if value is None else _DATETIME.to_representation(value)

    data: dict[str, Any] = {"id": str(memory.id)}
    for name in _TEXT_FIELDS:
        data[name] = str(getattr(memory, name))
    data.update(
        structured=memory.structured,
        metadata=memory.metadata,
        tags=[str(tag) for tag in memory.tags],
        importance=float(memory.importance),
        confidence=float(memory.confidence),
        session_id=None if memory.session_id is None else str(memory.session_id),
        version=int(memory.version),
        created_at=when(memory.created_at),
        updated_at=when(memory.updated_at),
        last_accessed_at=when(memory.last_accessed_at),
        access_count=int(memory.access_count),
        decay_score=float(memory.decay_score),
        pinned=bool(memory.pinned),
        allowed_users=[str(user) for user in memory.allowed_users],
        allowed_roles=[str(role) for role in memory.allowed_roles],
        relations=memory_edges(memory),
        thread_order=None if memory.thread_order is None else int(memory.thread_order),
        occurred_at=when(memory.occurred_at),
        valid_from=when(memory.valid_from),
        valid_to=when(memory.valid_to),
        superseded_by=None if memory.superseded_by_id is None else str(memory.superseded_by_id),
    )
    return {name: data[name] for name in MemorySerializer.Meta.fields}


class MemoryAddResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    action = serializers.ChoiceField(
        choices=["created", "merged", "duplicate"],
        help_text="created: new; merged: a near-duplicate was updated into a new version; "
        "duplicate: the same content was already stored, nothing changed (not for the "
        "text of a superseded memory said again after what superseded it: that is "
        "created, a new current memory).",
    )
    similarity = serializers.FloatField(
        allow_null=True, help_text="Cosine similarity to the memory merged into or matched."
    )
    memory = MemorySerializer(help_text="The memory as stored now.")


class MemoryBulkItemResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    index = serializers.IntegerField(help_text="Position of the item in the request.")
    action = serializers.CharField(help_text="created, merged or duplicate.")
    memory_id = serializers.UUIDField(help_text="The memory the item ended in.")
    version = serializers.IntegerField(help_text="That memory's version now.")


class MemoryBulkResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    results = MemoryBulkItemResultSerializer(many=True, help_text="One per item, in order.")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Items per action.")
