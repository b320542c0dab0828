"""Long-term memory: the record of seed 001, its earlier versions and its relations.

Vectors are stored at full precision (`vector(384)`) and indexed as `halfvec(384)` through
an expression index: half the index size, same recall on MiniLM vectors (bench/RESULTS.md,
"B2-memory"), and the full-precision column stays available for exact re-ranking and
dedupe. Queries must use the same expression (`embedding::halfvec(384)`) to hit the index.

The full-text column is GENERATED, so no write path can forget it: English stems for words
plus the 'simple' configuration, which keeps ids and part numbers ("A-73812", "XPS-9530")
as tokens the way a user types them.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import VectorField

from sessions_app.models import Tenant

EMBEDDING_DIMENSIONS = 384


class MemoryType(models.TextChoices):
    PREFERENCE = "preference", "preference"
    FACT = "fact", "fact"
    EPISODIC = "episodic", "episodic"
    SEMANTIC = "semantic", "semantic"
    PROCEDURAL = "procedural", "procedural"
    PROFILE = "profile", "profile"
    POLICY = "policy", "policy"


class MemoryScope(models.TextChoices):
    """Visibility: private → its user only; shared → its user plus the listed users and
    roles; public → everyone in the tenant."""

    PRIVATE = "private", "private"
    SHARED = "shared", "shared"
    PUBLIC = "public", "public"


class MemorySource(models.TextChoices):
    EXPLICIT_USER_INPUT = "explicit_user_input", "explicit user input"
    IMPLICIT_INFERENCE = "implicit_inference", "implicit inference"
    SYSTEM_GENERATED = "system_generated", "system generated"
    EXTERNAL_DATA = "external_data", "external data"
    CORRECTED_MEMORY = "corrected_memory", "corrected memory"
    HEURISTIC_EXTRACTION = "heuristic_extraction", "extracted from a turn by rules"
    LLM_EXTRACTION = "llm_extraction", "extracted from a turn by an LLM"


class RelationType(models.TextChoices):
    RELATED_TO = "related_to", "related to"
    SUPERSEDES = "supersedes", "supersedes"
    DERIVED_FROM = "derived_from", "derived from"


def _search_document() -> SearchVector:
    english = SearchVector("content", config="english", weight="A") + SearchVector(
        "summary", config="english", weight="B"
    )
    simple = SearchVector("content", config="simple", weight="C") + SearchVector(
        "summary", config="simple", weight="D"
    )
    return english + simple  # type: ignore[return-value]


class Memory(models.Model):
    """One long-term memory about a user (or, when public, about the tenant's world)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255, blank=True, default="")
    type = models.CharField(max_length=16, choices=MemoryType.choices)
    scope = models.CharField(max_length=8, choices=MemoryScope.choices, default=MemoryScope.PRIVATE)

    content = models.TextField(help_text="The raw text, normalised.")
    summary = models.TextField(blank=True, default="")
    structured = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(
        max_length=64, help_text="SHA-256 of the case-folded normalised content."
    )
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)
    embedding_model = models.CharField(max_length=200)
    search_vector = models.GeneratedField(
        expression=_search_document(), output_field=SearchVectorField(), db_persist=True
    )

    importance = models.FloatField(default=0.5)
    confidence = models.FloatField(default=1.0)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    source = models.CharField(
        max_length=32, choices=MemorySource.choices, default=MemorySource.EXPLICIT_USER_INPUT
    )
    # A plain UUID, not a foreign key: deleting a session keeps what was learnt in it;
    # only erasing the user removes both.
    session_id = models.UUIDField(null=True, blank=True)
    version = models.IntegerField(default=1)

    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    last_accessed_at = models.DateTimeField()
    access_count = models.IntegerField(default=0)
    decay_score = models.FloatField(default=1.0)
    pinned = models.BooleanField(default=False, help_text="Pinned memories never decay away.")

    allowed_users = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    allowed_roles = ArrayField(models.CharField(max_length=64), default=list, blank=True)

    class Meta:
        db_table = "memory"
        ordering = ["-created_at"]
        verbose_name = "memory"
        verbose_name_plural = "memories"
        constraints = [
            # The backstop against two identical concurrent adds (the service also takes
            # an advisory lock so that near-duplicates are serialised too).
            models.UniqueConstraint(
                fields=["tenant", "user_id", "agent_id", "type", "content_hash"],
                name="memory_content_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0, importance__lte=1),
                name="memory_importance_range",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0, confidence__lte=1),
                name="memory_confidence_range",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "user_id", "-created_at"], name="memory_tenant_user"),
            models.Index(fields=["tenant", "-created_at"], name="memory_tenant_created"),
            models.Index(fields=["decay_score"], name="memory_decay"),
            models.Index(fields=["tenant", "session_id"], name="memory_tenant_session"),
            GinIndex(fields=["search_vector"], name="memory_search_vector"),
            GinIndex(fields=["tags"], name="memory_tags"),
            # The HNSW index on embedding::halfvec(384) is created in the migration with
            # RunSQL: Django cannot express an expression index with an operator class.
        ]

    def __str__(self) -> str:
        return f"{self.type}: {self.content[:60]}"


class MemoryVersion(models.Model):
    """A memory as it was before a merge or an update; the current text lives on Memory."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="versions")
    version = models.IntegerField()
    content = models.TextField()
    summary = models.TextField(blank=True, default="")
    structured = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    importance = models.FloatField()
    confidence = models.FloatField()
    scope = models.CharField(max_length=8, choices=MemoryScope.choices)
    source = models.CharField(max_length=32, choices=MemorySource.choices)
    valid_from = models.DateTimeField(help_text="When this version became current.")
    replaced_at = models.DateTimeField(help_text="When the next version replaced it.")
    replaced_by = models.CharField(
        max_length=16, help_text="What made the next version: 'merged' or 'updated'."
    )

    class Meta:
        db_table = "memory_version"
        ordering = ["memory", "version"]
        constraints = [
            models.UniqueConstraint(fields=["memory", "version"], name="memory_version_unique"),
        ]

    def __str__(self) -> str:
        return f"v{self.version} of {self.memory_id}"


class MemoryRelation(models.Model):
    """A typed edge between two memories of one tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="relations")
    target = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    type = models.CharField(max_length=16, choices=RelationType.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_relation"
        constraints = [
            models.UniqueConstraint(
                fields=["source", "target", "type"], name="memory_relation_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} {self.type} {self.target_id}"


from memory_app.window.models import *  # noqa: E402, F403  the short-term window's summaries
