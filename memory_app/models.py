"""Long-term memory: the record of seed 001, its earlier versions and its relations.

Vectors are stored at full precision (`vector(N)`, N = EMBEDDING_DIMENSIONS, 384 for the
local MiniLM) and indexed as `halfvec(N)` through an expression index: half the index
size, same recall on MiniLM vectors (docs/decisions/vector-index-halfvec-hnsw.md), and the
full-precision column stays available for exact re-ranking and dedupe. Queries must use
the same expression (`embedding::halfvec(N)`) to hit the index.

The full-text column is GENERATED, so no write path can forget it: English stems for words
plus the 'simple' configuration, which keeps ids and part numbers ("A-73812", "XPS-9530")
as tokens the way a user types them.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Case, F, Q, Value, When
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Concat
from pgvector.django import VectorField

from sessions_app.models import Tenant

# The vector column's size (and the halfvec the searches cast to, to hit its index).
EMBEDDING_DIMENSIONS: int = settings.ENGRAM_EMBEDDING_DIMENSIONS


class MemoryType(models.TextChoices):
    PREFERENCE = "preference", "preference"
    FACT = "fact", "fact"
    EPISODIC = "episodic", "episodic"
    SEMANTIC = "semantic", "semantic"
    PROCEDURAL = "procedural", "procedural"
    PROFILE = "profile", "profile"
    POLICY = "policy", "policy"
    INTEREST = "interest", "interest"  # seed 003: what the user follows or likes to hear of
    EVENT = "event", "event"  # seed 003: something that happened, at a time


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
    CONVERSATION_TURN = "conversation_turn", "a recorded turn, verbatim"
    SESSION_EPISODE = "session_episode", "a digest of a session that ended"


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
    return english + simple  # type: ignore[return-value]  # the stubs declare a narrower return type


def _lexical_document() -> CombinedExpression:
    """What the BM25 side indexes, as two BM25F fields: the memory's own text (content and
    summary, weight A) and its thread window (`thread_context`: its neighbours' text around
    its own, kept by the add service, weight B), or for a memory outside any thread its own
    text again. BM25's term frequency counts every position, so a word of the memory's own
    text counts twice and a neighbour's word once, for threaded and free-standing memories
    alike: the window still finds "Did you go?" / "Yes, last Friday" by the words of either
    line, but a line that says it itself ranks above the lines around it (BM25F's field
    boost; on LoCoMo the plain window put the neighbours level with the answer). English
    stems only: the query is parsed the same way, and the English parser keeps ids
    ("a-73812", "xps-9530") as tokens too."""
    own = Concat(F("content"), Value(" "), F("summary"), output_field=models.TextField())
    window = Case(
        When(~Q(thread_context=""), then=F("thread_context")),
        default=own,
        output_field=models.TextField(),
    )
    return SearchVector(own, config="english", weight="A") + SearchVector(
        window, config="english", weight="B"
    )


class OwnerLexemes(models.Func):
    """`memory_owner_lexemes(tenant, user, lexical_vector)` (SQL function of migration
    0001): the row's lexemes, each prefixed with its owner, as the keys of the lexical
    index a search of one user's memories reads (`memory_lexical_owner`) and, with the
    empty owner, of the tenant's public memories (`memory_lexical_public`)."""

    function = "memory_owner_lexemes"
    output_field = ArrayField(models.TextField())


# One text is current once per user, agent and type: the name of that unique constraint,
# which a write that loses a race to it reads from the database's error.
CURRENT_CONTENT_UNIQUE = "memory_current_content_unique"


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
    metadata = models.JSONField(
        default=dict,
        blank=True,
        db_default={},
        help_text="Free key/values of the caller (size-capped); filterable by containment.",
    )
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

    # Provenance: the thread (a conversation key, or "session:<id>") the memory came from,
    # its place in it and when it happened. Blank thread = a free-standing memory.
    thread_key = models.CharField(max_length=255, blank=True, default="")
    thread_order = models.BigIntegerField(null=True, blank=True)
    occurred_at = models.DateTimeField(null=True, blank=True)
    thread_context = models.TextField(
        blank=True,
        default="",
        help_text="The thread window the lexical side indexes: the two previous memories, "
        "this one and the next. Maintained by the add service as neighbours arrive.",
    )
    lexical_vector = models.GeneratedField(
        expression=_lexical_document(), output_field=SearchVectorField(), db_persist=True
    )

    # Validity: when what it states held. Either end open (null). A memory that a newer
    # one contradicts (memory_app.services.supersession) ends where the newer begins and
    # points at it; it stays stored and searchable.
    valid_from = models.DateTimeField(
        null=True, blank=True, help_text="When what it states began to hold; null: open."
    )
    valid_to = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When what it states stopped holding (exclusive); null: still holds.",
    )
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_index=False,  # a partial index below: almost every row is null
        related_name="+",
        help_text="The newer memory that states another value of the same subject.",
    )
    subject = models.CharField(
        max_length=100,
        blank=True,
        default="",
        db_default="",
        help_text="The attribute the memory states a value of ('home', 'employer', "
        "'favourite colour'): given, or read from the content by rules. Blank: none.",
    )

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
            # an advisory lock so that near-duplicates are serialised too). Current
            # memories only: a user who changes their mind back restates a superseded
            # text, which is a new memory beside the old one (services.supersession).
            models.UniqueConstraint(
                fields=["tenant", "user_id", "agent_id", "type", "content_hash"],
                condition=models.Q(superseded_by__isnull=True),
                name=CURRENT_CONTENT_UNIQUE,
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0, importance__lte=1),
                name="memory_importance_range",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0, confidence__lte=1),
                name="memory_confidence_range",
            ),
            models.CheckConstraint(
                condition=models.Q(valid_from__isnull=True)
                | models.Q(valid_to__isnull=True)
                | models.Q(valid_to__gt=F("valid_from")),
                name="memory_validity_order",
            ),
        ]
        indexes = [
            # A user's memories, newest first, with what the vector step of a search of
            # one user's memories reads: an index-only scan of a few
            # dozen pages instead of a heap page and a TOAST value per memory.
            models.Index(
                fields=["tenant", "user_id", "-created_at"],
                include=["id", "scope", "embedding"],
                name="memory_tenant_user_vectors",
            ),
            models.Index(fields=["tenant", "-created_at"], name="memory_tenant_created"),
            models.Index(fields=["decay_score"], name="memory_decay"),
            models.Index(fields=["tenant", "session_id"], name="memory_tenant_session"),
            GinIndex(fields=["search_vector"], name="memory_search_vector"),
            GinIndex(fields=["tags"], name="memory_tags"),
            GinIndex(fields=["metadata"], name="memory_metadata", opclasses=["jsonb_path_ops"]),
            # Tenant and user as btree_gin keys next to the lexemes: what a
            # tenant-wide lexical search that no user bounds (an operator's) reads.
            GinIndex(fields=["tenant", "user_id", "lexical_vector"], name="memory_lexical_scope"),
            # The lexical step's index of one user's memories: a key per (tenant, user,
            # lexeme), so a common word's postings are the user's rows, not the table's
            # (`lexical_hits_sql`). The three indexes a search's branches read have no
            # pending list (fastupdate off): every scan reads all of a pending list,
            # whoever's rows it holds.
            GinIndex(
                OwnerLexemes(F("tenant"), F("user_id"), F("lexical_vector")),
                name="memory_lexical_owner",
                fastupdate=False,
            ),
            # The lexical step's branch of public memories (`lexical_hits_sql`): only
            # public rows, each lexeme keyed by its tenant as an owner index's are by
            # the empty owner, so a word's postings are this tenant's public rows; no
            # tenant btree is read beside it (docs/decisions/lexical-search-indexes.md).
            GinIndex(
                OwnerLexemes(F("tenant"), Value(""), F("lexical_vector")),
                condition=Q(scope="public"),
                name="memory_lexical_public",
                fastupdate=False,
            ),
            # The vector step's branch of memories shared with the actor by someone else
            # (`visibility_branches_sql`): found exactly, not by a graph walk.
            GinIndex(
                fields=["tenant", "allowed_users", "allowed_roles"],
                condition=Q(scope="shared"),
                name="memory_shared_grants",
                fastupdate=False,
            ),
            # The current memories of a user that state a subject (supersession's lookup).
            models.Index(
                fields=["tenant", "user_id", "subject"],
                condition=~Q(subject="") & Q(superseded_by__isnull=True),
                name="memory_current_subject",
            ),
            # Who a deleted memory superseded (SET_NULL on delete) without a full scan.
            models.Index(
                fields=["superseded_by"],
                condition=Q(superseded_by__isnull=False),
                name="memory_superseded_by",
            ),
            models.Index(
                fields=["tenant", "user_id", "thread_key", "thread_order"],
                condition=~Q(thread_key=""),
                name="memory_thread_order",
            ),
            # The HNSW indexes on embedding::halfvec(N) are created in SQL (migration
            # 0003_search_triggers_and_indexes): Django cannot express an expression
            # index with an operator class.
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
    """A typed edge between two memories of one tenant, or (`target_version` set) from a
    memory to one of its own earlier versions.

    Why version edges: a merge or an update keeps one row per memory (its id is what
    callers and other edges hold) and moves the replaced text to `memory_version`, the
    way mem0 keeps one id with a history. The `supersedes` edge written then makes the
    replacement visible in the relations API like any other edge: "memory M (now)
    supersedes version n of M", with `reason` merged / updated / reverted."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="relations")
    target = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    type = models.CharField(max_length=16, choices=RelationType.choices)
    target_version = models.IntegerField(
        null=True,
        blank=True,
        help_text="Set on the supersedes edges the service writes: the earlier version of "
        "the target that this memory's newer version replaced; null for an edge between "
        "two memories.",
    )
    reason = models.CharField(
        max_length=16,
        blank=True,
        default="",
        db_default="",
        help_text="Why a version edge exists: 'merged', 'updated' or 'reverted'; blank "
        "for an edge made by a caller.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_relation"
        constraints = [
            models.UniqueConstraint(
                fields=["source", "target", "type"],
                condition=models.Q(target_version__isnull=True),
                name="memory_relation_unique",
            ),
            models.UniqueConstraint(
                fields=["source", "target", "type", "target_version"],
                condition=models.Q(target_version__isnull=False),
                name="memory_relation_version_unique",
            ),
        ]

    def __str__(self) -> str:
        version = f" v{self.target_version}" if self.target_version is not None else ""
        return f"{self.source_id} {self.type} {self.target_id}{version}"


from memory_app.lexicon.models import *  # noqa: E402, F403  the per-user term statistics
from memory_app.passage_vectors.models import *  # noqa: E402, F403  the vectors of passages
from memory_app.window.models import *  # noqa: E402, F403  the short-term window's summaries
