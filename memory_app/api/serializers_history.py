"""A memory's versions, reverts and typed relations at the edge."""

from __future__ import annotations

from rest_framework import serializers

from memory_app.api.serializers import (
    RelationInputSerializer,
)


class MemoryVersionSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    version = serializers.IntegerField(help_text="Version number, 1 = first.")
    content = serializers.CharField(help_text="The text of that version.")
    summary = serializers.CharField(help_text="Its summary.")
    structured = serializers.DictField(help_text="Its structured form.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="Its tags.")
    importance = serializers.FloatField(help_text="Its importance.")
    confidence = serializers.FloatField(help_text="Its confidence.")
    scope = serializers.CharField(help_text="Its visibility.")
    source = serializers.CharField(help_text="Its source.")  # type: ignore[assignment]  # DRF moves declared fields off the class
    valid_from = serializers.DateTimeField(help_text="When it became current.")
    replaced_at = serializers.DateTimeField(
        allow_null=True, help_text="When it was replaced; null for the current one."
    )
    replaced_by = serializers.CharField(
        allow_null=True,
        help_text="'merged', 'updated' or 'reverted'; null for the current one.",
    )
    current = serializers.BooleanField(help_text="True for the current version.")


class MemoryHistorySerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    memory_id = serializers.UUIDField(help_text="The memory.")
    versions = MemoryVersionSerializer(many=True, help_text="Oldest first; last is current.")


class MemoryRevertSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    version = serializers.IntegerField(
        min_value=1,
        max_value=2**31 - 1,
        help_text="The earlier version whose content, summary, structured form, tags, "
        "importance, confidence and scope become current again, as a new version.",
    )


class RelationCreateSerializer(RelationInputSerializer):
    """An edge from this memory to `target_id`."""


class RelationSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    id = serializers.IntegerField(help_text="The edge's id (for DELETE).")
    type = serializers.CharField(help_text="related_to, supersedes or derived_from.")
    direction = serializers.ChoiceField(
        choices=["outgoing", "incoming"], help_text="Seen from this memory."
    )
    source_id = serializers.UUIDField(help_text="The memory the edge starts at.")
    target_id = serializers.UUIDField(help_text="The memory the edge points to.")
    other_id = serializers.UUIDField(help_text="The memory at the other end.")
    target_version = serializers.IntegerField(
        allow_null=True,
        min_value=1,
        help_text="On a `supersedes` edge written by a merge, an update or a revert: the "
        "earlier version of the target (this same memory) that the newer one replaced; "
        "its text is in `GET /memories/{id}/history`. Null for an edge between two "
        "memories.",
    )
    reason = serializers.ChoiceField(
        choices=["", "merged", "updated", "reverted", "contradicted"],
        help_text="What wrote a version edge: `merged` (a near-duplicate was added), "
        "`updated` (PATCH), `reverted` (revert); `contradicted` on a `supersedes` edge "
        "between two memories: the source gave the target's subject another value; "
        "blank for an edge made by a caller.",
    )
    created_at = serializers.DateTimeField(help_text="When the edge was made.")


class RelationListSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    memory_id = serializers.UUIDField(help_text="The memory.")
    relations = RelationSerializer(many=True, help_text="Outgoing edges, then incoming ones.")
