"""Writing a memory's passage vectors: replaced whole whenever its text is written."""

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
    MemoryPassage.objects.bulk_create(
        [
            MemoryPassage(memory_id=pk, ordinal=ordinal, embedding=vector)
            for pk, vectors in written
            for ordinal, vector in enumerate(vectors)
        ]
    )
