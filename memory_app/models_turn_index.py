"""The session turns as context search sees them: one row per turn, owned by memory_app.

A turn lives in sessions_app (`chat_turn`); this is memory_app's index of it, filled after
the turn is committed (the `turn_recorded` hook enqueues `memory_app.index_turn`) and
rebuilt idempotently from the turn. Like `memory`, the dense side embeds the turn's own
text and the lexical side indexes its window (the previous turn, itself and the next),
so that "When did you go?" finds the turn that answered it. Compaction flags turns, it
does not delete them, so compacted turns stay searchable here.

The link to the turn has no database constraint (`db_constraint=False`): sessions_app
may delete or partition its tables without asking memory_app; the ORM's cascade still
removes the row with its turn, and a search joins back to the turn through sessions_app
selectors, so an orphan row is never shown.
"""

from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import VectorField

from sessions_app.models import ChatTurn, Tenant

TURN_EMBEDDING_DIMENSIONS = 384


class TurnIndexEntry(models.Model):
    turn = models.OneToOneField(
        ChatTurn,
        on_delete=models.CASCADE,
        db_constraint=False,
        primary_key=True,
        related_name="+",
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session_id = models.UUIDField()
    turn_number = models.IntegerField()
    text = models.TextField(help_text="The turn's user message and reply, as embedded.")
    embedding = VectorField(dimensions=TURN_EMBEDDING_DIMENSIONS)
    embedding_model = models.CharField(max_length=200)
    thread_context = models.TextField(
        blank=True, default="", help_text="The previous turn, this one and the next."
    )
    lexical_vector = models.GeneratedField(
        expression=SearchVector("thread_context", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    indexed_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_turn_index"
        indexes = [
            models.Index(fields=["session_id", "turn_number"], name="memory_turn_index_session"),
            GinIndex(fields=["lexical_vector"], name="memory_turn_index_lexical"),
        ]

    def __str__(self) -> str:
        return f"turn {self.turn_number} of {self.session_id}"
