"""The `memory_passage` table: the vectors of a memory's passages.

Part of the `memory_app.passage_vectors` package; `memory_app/models.py` re-exports it so
Django registers it with the app. A passage belongs to one memory and goes with it (the
foreign key cascades); it is rewritten whenever the memory's text is
(`memory_app.passage_vectors.writes`). Only the vector is kept: the text is the memory's,
and `passage_texts` cuts it again alike."""

from __future__ import annotations

from django.db import models
from pgvector.django import VectorField

from memory_app.models import EMBEDDING_DIMENSIONS, Memory

__all__ = ["MemoryPassage"]


class MemoryPassage(models.Model):
    # No index of its own: the unique (memory, ordinal) constraint's index serves.
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="passages", db_index=False
    )
    ordinal = models.PositiveSmallIntegerField(help_text="The passage's place in the text.")
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)

    class Meta:
        db_table = "memory_passage"
        constraints = [
            # Also the index a search reads a pool member's passages by.
            models.UniqueConstraint(fields=["memory", "ordinal"], name="memory_passage_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} #{self.ordinal}"
