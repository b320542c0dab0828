"""Writing a memory's passage vectors: inserted with a new memory, replaced whole
whenever a stored memory's text is written again."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from memory_app.passage_vectors.models import MemoryPassage
from memory_app.passage_vectors.vectors import Vector


def passages_replace(written: Sequence[tuple[uuid.UUID, list[Vector]]]) -> None:
    """The passages of each (memory id, its passages' vectors) in `written`, in place
    of those it had: one DELETE and one INSERT for all. Inside the caller's transaction,
    so a memory is never seen with the passages of another text."""
    if not written:
        return
    MemoryPassage.objects.filter(memory_id__in=[pk for pk, _ in written]).delete()
    passages_insert(written)


def passages_insert(written: Sequence[tuple[uuid.UUID, list[Vector]]]) -> None:
    """The passages of new memories (nothing to replace): one INSERT for all."""
    MemoryPassage.objects.bulk_create(
        [
            MemoryPassage(memory_id=pk, ordinal=ordinal, embedding=vector)
            for pk, vectors in written
            for ordinal, vector in enumerate(vectors)
        ]
    )
