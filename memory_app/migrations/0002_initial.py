"""Memories, their versions, relations and BM25 statistics, and the short-term window's
summaries, as the models declare them."""

import uuid

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.deletion
import django.db.models.functions.text
import pgvector.django.vector
from django.conf import settings
from django.db import migrations, models

import memory_app.models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("memory_app", "0001_extensions_and_functions"),
        ("sessions_app", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="Memory",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("user_id", models.CharField(max_length=255)),
                ("agent_id", models.CharField(blank=True, default="", max_length=255)),
                (
                    "type",
                    models.CharField(
                        choices=[
                            ("preference", "preference"),
                            ("fact", "fact"),
                            ("episodic", "episodic"),
                            ("semantic", "semantic"),
                            ("procedural", "procedural"),
                            ("profile", "profile"),
                            ("policy", "policy"),
                            ("interest", "interest"),
                            ("event", "event"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "scope",
                    models.CharField(
                        choices=[
                            ("private", "private"),
                            ("shared", "shared"),
                            ("public", "public"),
                        ],
                        default="private",
                        max_length=8,
                    ),
                ),
                ("content", models.TextField(help_text="The raw text, normalised.")),
                ("summary", models.TextField(blank=True, default="")),
                ("structured", models.JSONField(blank=True, default=dict)),
                (
                    "metadata",
                    models.JSONField(
                        blank=True,
                        db_default={},
                        default=dict,
                        help_text="Free key/values of the caller (size-capped); filterable by containment.",
                    ),
                ),
                (
                    "content_hash",
                    models.CharField(
                        help_text="SHA-256 of the case-folded normalised content.", max_length=64
                    ),
                ),
                (
                    "embedding",
                    pgvector.django.vector.VectorField(
                        dimensions=settings.ENGRAM_EMBEDDING_DIMENSIONS
                    ),
                ),
                ("embedding_model", models.CharField(max_length=200)),
                (
                    "search_vector",
                    models.GeneratedField(
                        db_persist=True,
                        expression=django.contrib.postgres.search.CombinedSearchVector(
                            django.contrib.postgres.search.CombinedSearchVector(
                                django.contrib.postgres.search.SearchVector(
                                    "content", config="english", weight="A"
                                ),
                                "||",
                                django.contrib.postgres.search.SearchVector(
                                    "summary", config="english", weight="B"
                                ),
                                django.contrib.postgres.search.SearchConfig("english"),
                            ),
                            "||",
                            django.contrib.postgres.search.CombinedSearchVector(
                                django.contrib.postgres.search.SearchVector(
                                    "content", config="simple", weight="C"
                                ),
                                "||",
                                django.contrib.postgres.search.SearchVector(
                                    "summary", config="simple", weight="D"
                                ),
                                django.contrib.postgres.search.SearchConfig("simple"),
                            ),
                            django.contrib.postgres.search.SearchConfig("english"),
                        ),
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                    ),
                ),
                ("importance", models.FloatField(default=0.5)),
                ("confidence", models.FloatField(default=1.0)),
                (
                    "tags",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=64),
                        blank=True,
                        default=list,
                        size=None,
                    ),
                ),
                (
                    "source",
                    models.CharField(
                        choices=[
                            ("explicit_user_input", "explicit user input"),
                            ("implicit_inference", "implicit inference"),
                            ("system_generated", "system generated"),
                            ("external_data", "external data"),
                            ("corrected_memory", "corrected memory"),
                            ("heuristic_extraction", "extracted from a turn by rules"),
                            ("llm_extraction", "extracted from a turn by an LLM"),
                            ("conversation_turn", "a recorded turn, verbatim"),
                            ("session_episode", "a digest of a session that ended"),
                        ],
                        default="explicit_user_input",
                        max_length=32,
                    ),
                ),
                ("session_id", models.UUIDField(blank=True, null=True)),
                ("version", models.IntegerField(default=1)),
                ("thread_key", models.CharField(blank=True, default="", max_length=255)),
                ("thread_order", models.BigIntegerField(blank=True, null=True)),
                ("occurred_at", models.DateTimeField(blank=True, null=True)),
                (
                    "thread_context",
                    models.TextField(
                        blank=True,
                        default="",
                        help_text="The thread window the lexical side indexes: the two previous memories, this one and the next. Maintained by the add service as neighbours arrive.",
                    ),
                ),
                (
                    "lexical_vector",
                    models.GeneratedField(
                        db_persist=True,
                        expression=django.contrib.postgres.search.CombinedSearchVector(
                            django.contrib.postgres.search.SearchVector(
                                django.db.models.functions.text.Concat(
                                    models.F("content"),
                                    models.Value(" "),
                                    models.F("summary"),
                                    output_field=models.TextField(),
                                ),
                                config="english",
                                weight="A",
                            ),
                            "||",
                            django.contrib.postgres.search.SearchVector(
                                models.Case(
                                    models.When(
                                        models.Q(("thread_context", ""), _negated=True),
                                        then=models.F("thread_context"),
                                    ),
                                    default=django.db.models.functions.text.Concat(
                                        models.F("content"),
                                        models.Value(" "),
                                        models.F("summary"),
                                        output_field=models.TextField(),
                                    ),
                                    output_field=models.TextField(),
                                ),
                                config="english",
                                weight="B",
                            ),
                            django.contrib.postgres.search.SearchConfig("english"),
                        ),
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                    ),
                ),
                (
                    "valid_from",
                    models.DateTimeField(
                        blank=True,
                        help_text="When what it states began to hold; null: open.",
                        null=True,
                    ),
                ),
                (
                    "valid_to",
                    models.DateTimeField(
                        blank=True,
                        help_text="When what it states stopped holding (exclusive); null: still holds.",
                        null=True,
                    ),
                ),
                (
                    "subject",
                    models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="The attribute the memory states a value of ('home', 'employer', 'favourite colour'): given, or read from the content by rules. Blank: none.",
                        max_length=100,
                    ),
                ),
                ("created_at", models.DateTimeField()),
                ("updated_at", models.DateTimeField()),
                ("last_accessed_at", models.DateTimeField()),
                ("access_count", models.IntegerField(default=0)),
                ("decay_score", models.FloatField(default=1.0)),
                (
                    "pinned",
                    models.BooleanField(
                        default=False, help_text="Pinned memories never decay away."
                    ),
                ),
                (
                    "allowed_users",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=255),
                        blank=True,
                        default=list,
                        size=None,
                    ),
                ),
                (
                    "allowed_roles",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=64),
                        blank=True,
                        default=list,
                        size=None,
                    ),
                ),
                (
                    "superseded_by",
                    models.ForeignKey(
                        blank=True,
                        db_index=False,
                        help_text="The newer memory that states another value of the same subject.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="memory_app.memory",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name": "memory",
                "verbose_name_plural": "memories",
                "db_table": "memory",
                "ordering": ["-created_at"],
            },
        ),
        migrations.CreateModel(
            name="MemoryLexiconStat",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("user_id", models.CharField(max_length=255)),
                ("documents", models.BigIntegerField(default=0)),
                ("lexemes", models.BigIntegerField(default=0)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "memory_lexicon_stat",
            },
        ),
        migrations.CreateModel(
            name="MemoryRelation",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "type",
                    models.CharField(
                        choices=[
                            ("related_to", "related to"),
                            ("supersedes", "supersedes"),
                            ("derived_from", "derived from"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "target_version",
                    models.IntegerField(
                        blank=True,
                        help_text="Set on the supersedes edges the service writes: the earlier version of the target that this memory's newer version replaced; null for an edge between two memories.",
                        null=True,
                    ),
                ),
                (
                    "reason",
                    models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="Why a version edge exists: 'merged', 'updated' or 'reverted'; blank for an edge made by a caller.",
                        max_length=16,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "source",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="relations",
                        to="memory_app.memory",
                    ),
                ),
                (
                    "target",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="memory_app.memory",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "memory_relation",
            },
        ),
        migrations.CreateModel(
            name="MemoryTermStat",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("user_id", models.CharField(max_length=255)),
                ("lexeme", models.TextField()),
                ("df", models.IntegerField(default=0)),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "db_table": "memory_term_stat",
            },
        ),
        migrations.CreateModel(
            name="MemoryVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.IntegerField()),
                ("content", models.TextField()),
                ("summary", models.TextField(blank=True, default="")),
                ("structured", models.JSONField(blank=True, default=dict)),
                ("content_hash", models.CharField(max_length=64)),
                (
                    "tags",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=64),
                        blank=True,
                        default=list,
                        size=None,
                    ),
                ),
                ("importance", models.FloatField()),
                ("confidence", models.FloatField()),
                (
                    "scope",
                    models.CharField(
                        choices=[
                            ("private", "private"),
                            ("shared", "shared"),
                            ("public", "public"),
                        ],
                        max_length=8,
                    ),
                ),
                (
                    "source",
                    models.CharField(
                        choices=[
                            ("explicit_user_input", "explicit user input"),
                            ("implicit_inference", "implicit inference"),
                            ("system_generated", "system generated"),
                            ("external_data", "external data"),
                            ("corrected_memory", "corrected memory"),
                            ("heuristic_extraction", "extracted from a turn by rules"),
                            ("llm_extraction", "extracted from a turn by an LLM"),
                            ("conversation_turn", "a recorded turn, verbatim"),
                            ("session_episode", "a digest of a session that ended"),
                        ],
                        max_length=32,
                    ),
                ),
                ("valid_from", models.DateTimeField(help_text="When this version became current.")),
                (
                    "replaced_at",
                    models.DateTimeField(help_text="When the next version replaced it."),
                ),
                (
                    "replaced_by",
                    models.CharField(
                        help_text="What made the next version: 'merged' or 'updated'.",
                        max_length=16,
                    ),
                ),
                (
                    "memory",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="versions",
                        to="memory_app.memory",
                    ),
                ),
            ],
            options={
                "db_table": "memory_version",
                "ordering": ["memory", "version"],
            },
        ),
        migrations.CreateModel(
            name="ContextSummary",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("first_turn", models.IntegerField(help_text="Number of the first turn covered.")),
                ("last_turn", models.IntegerField(help_text="Number of the last turn covered.")),
                (
                    "turn_count",
                    models.IntegerField(help_text="Turns summarised (rolled-back ones excluded)."),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("span", "span"), ("condensed", "condensed")],
                        default="span",
                        max_length=16,
                    ),
                ),
                ("summary", models.TextField()),
                (
                    "milestones",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="Items/mpns, selections, constraints, ids, decisions, commitments, open questions, each with the turn it came from.",
                    ),
                ),
                (
                    "method",
                    models.CharField(
                        choices=[("extractive", "extractive"), ("llm", "llm")], max_length=16
                    ),
                ),
                ("tokens", models.IntegerField(help_text="o200k_base tokens of `summary`.")),
                (
                    "source_tokens",
                    models.IntegerField(
                        default=0, help_text="Tokens of the text it replaces (turns or summaries)."
                    ),
                ),
                (
                    "last_turn_at",
                    models.DateTimeField(help_text="When the last covered turn was recorded."),
                ),
                ("llm_model", models.CharField(blank=True, default="", max_length=200)),
                ("llm_input_tokens", models.IntegerField(default=0)),
                ("llm_output_tokens", models.IntegerField(default=0)),
                (
                    "llm_cost_usd",
                    models.DecimalField(
                        blank=True,
                        decimal_places=10,
                        help_text="Null when unpriced.",
                        max_digits=20,
                        null=True,
                    ),
                ),
                ("llm_duration_ms", models.IntegerField(default=0)),
                (
                    "llm_error",
                    models.TextField(
                        blank=True,
                        default="",
                        help_text="Why the LLM was not used although configured.",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="context_summaries",
                        to="sessions_app.chatsession",
                    ),
                ),
                (
                    "superseded_by",
                    models.ForeignKey(
                        blank=True,
                        help_text="The condensed summary that replaced this one in the context.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="merged",
                        to="memory_app.contextsummary",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name": "context summary",
                "verbose_name_plural": "context summaries",
                "db_table": "context_summary",
                "ordering": ["session", "first_turn", "last_turn"],
                "indexes": [
                    models.Index(fields=["session", "superseded_by"], name="summary_session_active")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("session", "first_turn", "last_turn"), name="summary_span_unique"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("first_turn__lte", models.F("last_turn"))),
                        name="summary_span_ordered",
                    ),
                ],
            },
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                fields=["tenant", "user_id", "-created_at"],
                include=("id", "scope", "embedding"),
                name="memory_tenant_user_vectors",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["tenant", "-created_at"], name="memory_tenant_created"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["decay_score"], name="memory_decay"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["tenant", "session_id"], name="memory_tenant_session"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], name="memory_search_vector"
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(fields=["tags"], name="memory_tags"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["metadata"], name="memory_metadata", opclasses=["jsonb_path_ops"]
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["tenant", "user_id", "lexical_vector"], name="memory_lexical_scope"
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                memory_app.models.OwnerLexemes(
                    models.F("tenant"), models.F("user_id"), models.F("lexical_vector")
                ),
                fastupdate=False,
                name="memory_lexical_owner",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("scope", "public")),
                fastupdate=False,
                fields=["tenant", "lexical_vector"],
                name="memory_lexical_public",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("scope", "shared")),
                fastupdate=False,
                fields=["tenant", "allowed_users", "allowed_roles"],
                name="memory_shared_grants",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(
                    models.Q(("subject", ""), _negated=True), ("superseded_by__isnull", True)
                ),
                fields=["tenant", "user_id", "subject"],
                name="memory_current_subject",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("superseded_by__isnull", False)),
                fields=["superseded_by"],
                name="memory_superseded_by",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("thread_key", ""), _negated=True),
                fields=["tenant", "user_id", "thread_key", "thread_order"],
                name="memory_thread_order",
            ),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.UniqueConstraint(
                fields=("tenant", "user_id", "agent_id", "type", "content_hash"),
                name="memory_content_unique",
            ),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(("importance__gte", 0), ("importance__lte", 1)),
                name="memory_importance_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(("confidence__gte", 0), ("confidence__lte", 1)),
                name="memory_confidence_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("valid_from__isnull", True),
                    ("valid_to__isnull", True),
                    ("valid_to__gt", models.F("valid_from")),
                    _connector="OR",
                ),
                name="memory_validity_order",
            ),
        ),
        migrations.AddConstraint(
            model_name="memorylexiconstat",
            constraint=models.UniqueConstraint(
                fields=("tenant", "user_id"), name="memory_lexicon_stat_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="memoryrelation",
            constraint=models.UniqueConstraint(
                condition=models.Q(("target_version__isnull", True)),
                fields=("source", "target", "type"),
                name="memory_relation_unique",
            ),
        ),
        migrations.AddConstraint(
            model_name="memoryrelation",
            constraint=models.UniqueConstraint(
                condition=models.Q(("target_version__isnull", False)),
                fields=("source", "target", "type", "target_version"),
                name="memory_relation_version_unique",
            ),
        ),
        migrations.AddIndex(
            model_name="memorytermstat",
            index=models.Index(
                fields=["tenant", "lexeme"], include=("df",), name="memory_term_stat_lexeme_df"
            ),
        ),
        migrations.AddConstraint(
            model_name="memorytermstat",
            constraint=models.UniqueConstraint(
                fields=("tenant", "user_id", "lexeme"), name="memory_term_stat_unique"
            ),
        ),
        migrations.AddConstraint(
            model_name="memoryversion",
            constraint=models.UniqueConstraint(
                fields=("memory", "version"), name="memory_version_unique"
            ),
        ),
    ]
