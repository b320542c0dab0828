"""The lexical statistics BM25 reads: a lexeme's document frequency among one user's
memories and each user's document count and total length.

Part of the `memory_app.lexicon` package; `memory_app/models.py` re-exports it so Django
registers it with the app. Both tables are kept by a trigger on `memory`
(`memory_lexicon_sync`, migration 0003) in the writing transaction, and erased with the
user's memories (`memory_app.services.erasure`). The tenant is named by its app label,
not imported: only `memory_app.models` may import sessions_app's models (the import
contracts in pyproject.toml)."""

from __future__ import annotations

from django.db import models

__all__ = ["MemoryLexiconStat", "MemoryTermStat"]


class MemoryTermStat(models.Model):
    """BM25 document frequency of one lexeme among one user's memories (their
    `lexical_vector`s). Maintained by a trigger on `memory` (`memory_lexicon_sync`) in the writing
    transaction, so every path that inserts, re-indexes or deletes memories keeps it
    exact; searches across users sum the rows of the users they cover."""

    tenant = models.ForeignKey("sessions_app.Tenant", on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=255)
    lexeme = models.TextField()
    df = models.IntegerField(default=0)

    class Meta:
        db_table = "memory_term_stat"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "user_id", "lexeme"], name="memory_term_stat_unique"
            ),
        ]
        # A search across users sums df over every user's row of a lexeme: with df in
        # the index that is an index-only scan (docs/decisions/search-sizing-figures.md).
        indexes = [
            models.Index(
                fields=["tenant", "lexeme"], name="memory_term_stat_lexeme_df", include=["df"]
            )
        ]

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.df}"


class MemoryLexiconStat(models.Model):
    """Per user: how many memories are indexed and their total length in lexemes, for
    BM25's N and average document length. Maintained by the same trigger."""

    tenant = models.ForeignKey("sessions_app.Tenant", on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=255)
    documents = models.BigIntegerField(default=0)
    lexemes = models.BigIntegerField(default=0)

    class Meta:
        db_table = "memory_lexicon_stat"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "user_id"], name="memory_lexicon_stat_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.documents} documents"
