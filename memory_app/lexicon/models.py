"""The lexical statistics BM25 reads: a lexeme's document frequency among one user's
memories and each user's document count and total length, and the same summed over a
tenant's users.

Part of the `memory_app.lexicon` package; `memory_app/models.py` re-exports it so Django
registers it with the app. The per-user tables are kept by a trigger on `memory`
(`memory_lexicon_sync`, migration 0003) in the writing transaction, and erased with the
user's memories (`memory_app.services.erasure`).

The tenant's sums are not kept by the trigger: a row per (tenant, lexeme) written by
every writer of the tenant would queue all of them behind one another on the common
words. Each per-user row instead records the part of it already added to the tenant's
sum (`folded_*`); `memory_app.lexicon.fold` moves the rest in batches, and a search
reads the tenant's sum plus what is not folded yet, an exact figure at any moment
(docs/decisions/lexicon-tenant-sums-folded.md). The tenant is named by its app label,
not imported: only `memory_app.models` may import sessions_app's models (the import
contracts in pyproject.toml)."""

from __future__ import annotations

from django.db import models

__all__ = [
    "MemoryLexiconStat",
    "MemoryTenantLexiconStat",
    "MemoryTenantTermStat",
    "MemoryTermStat",
]


class MemoryTermStat(models.Model):
    """BM25 document frequency of one lexeme among one user's memories (their
    `lexical_vector`s). Maintained by a trigger on `memory` (`memory_lexicon_sync`) in the writing
    transaction, so every path that inserts, re-indexes or deletes memories keeps it
    exact. `folded_df`: the part of `df` already in the tenant's sum
    (`MemoryTenantTermStat`)."""

    tenant = models.ForeignKey("sessions_app.Tenant", on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=255)
    lexeme = models.TextField()
    df = models.IntegerField(default=0)
    folded_df = models.IntegerField(db_default=0)

    class Meta:
        db_table = "memory_term_stat"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "user_id", "lexeme"], name="memory_term_stat_unique"
            ),
        ]
        # A search across users adds the rows not yet folded into the tenant's sum: an
        # index of those rows alone, which the fold empties.
        indexes = [
            models.Index(
                fields=["tenant", "lexeme"],
                name="memory_term_stat_unfolded",
                include=["df", "folded_df"],
                condition=~models.Q(df=models.F("folded_df")),
            )
        ]

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.df}"


class MemoryLexiconStat(models.Model):
    """Per user: how many memories are indexed and their total length in lexemes, for
    BM25's N and average document length. Maintained by the same trigger; `folded_*`:
    the parts already in the tenant's sums (`MemoryTenantLexiconStat`)."""

    tenant = models.ForeignKey("sessions_app.Tenant", on_delete=models.CASCADE, related_name="+")
    user_id = models.CharField(max_length=255)
    documents = models.BigIntegerField(default=0)
    lexemes = models.BigIntegerField(default=0)
    folded_documents = models.BigIntegerField(db_default=0)
    folded_lexemes = models.BigIntegerField(db_default=0)

    class Meta:
        db_table = "memory_lexicon_stat"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "user_id"], name="memory_lexicon_stat_unique"
            ),
        ]
        indexes = [
            models.Index(
                fields=["tenant"],
                name="memory_lexicon_stat_unfolded",
                include=["documents", "lexemes", "folded_documents", "folded_lexemes"],
                condition=~models.Q(documents=models.F("folded_documents"))
                | ~models.Q(lexemes=models.F("folded_lexemes")),
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.documents} documents"


class MemoryTenantTermStat(models.Model):
    """A lexeme's document frequency summed over the tenant's users, as far as the fold
    has moved it (`memory_app.lexicon.fold`): the exact figure is this plus, over the
    lexeme's per-user rows, `df - folded_df`."""

    tenant = models.ForeignKey("sessions_app.Tenant", on_delete=models.CASCADE, related_name="+")
    lexeme = models.TextField()
    df = models.BigIntegerField(default=0)

    class Meta:
        db_table = "memory_tenant_term_stat"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "lexeme"], name="memory_tenant_term_stat_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.df}"


class MemoryTenantLexiconStat(models.Model):
    """The tenant's documents and total length summed over its users, as far as the fold
    has moved them."""

    tenant = models.OneToOneField(
        "sessions_app.Tenant", on_delete=models.CASCADE, related_name="+", primary_key=True
    )
    documents = models.BigIntegerField(default=0)
    lexemes = models.BigIntegerField(default=0)

    class Meta:
        db_table = "memory_tenant_lexicon_stat"

    def __str__(self) -> str:
        return f"{self.documents} documents"
