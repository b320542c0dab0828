"""The tenant's BM25 sums (`memory_tenant_term_stat`, `memory_tenant_lexicon_stat`) and,
on each per-user row, the part of it already added to them (`folded_*`), with an index of
the rows whose part is not (`*_unfolded`). It replaces the index that summed every
user's row of a lexeme at each search. The sums start empty and every row unfolded:
the fold (`memory_app.lexicon.fold`, from the beat) moves them in batches, and until it
has, a search reads the rows as before."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0005_public_lexical_index_keyed_by_tenant"),
        ("sessions_app", "0003_budget_spend_shards"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryTenantLexiconStat",
            fields=[
                (
                    "tenant",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="sessions_app.tenant",
                    ),
                ),
                ("documents", models.BigIntegerField(default=0)),
                ("lexemes", models.BigIntegerField(default=0)),
            ],
            options={
                "db_table": "memory_tenant_lexicon_stat",
            },
        ),
        migrations.CreateModel(
            name="MemoryTenantTermStat",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("lexeme", models.TextField()),
                ("df", models.BigIntegerField(default=0)),
            ],
            options={
                "db_table": "memory_tenant_term_stat",
            },
        ),
        migrations.RemoveIndex(
            model_name="memorytermstat",
            name="memory_term_stat_lexeme_df",
        ),
        migrations.AddField(
            model_name="memorylexiconstat",
            name="folded_documents",
            field=models.BigIntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name="memorylexiconstat",
            name="folded_lexemes",
            field=models.BigIntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name="memorytermstat",
            name="folded_df",
            field=models.IntegerField(db_default=0),
        ),
        migrations.AddIndex(
            model_name="memorylexiconstat",
            index=models.Index(
                condition=models.Q(
                    models.Q(("documents", models.F("folded_documents")), _negated=True),
                    models.Q(("lexemes", models.F("folded_lexemes")), _negated=True),
                    _connector="OR",
                ),
                fields=["tenant"],
                include=("documents", "lexemes", "folded_documents", "folded_lexemes"),
                name="memory_lexicon_stat_unfolded",
            ),
        ),
        migrations.AddIndex(
            model_name="memorytermstat",
            index=models.Index(
                condition=models.Q(("df", models.F("folded_df")), _negated=True),
                fields=["tenant", "lexeme"],
                include=("df", "folded_df"),
                name="memory_term_stat_unfolded",
            ),
        ),
        migrations.AddField(
            model_name="memorytenanttermstat",
            name="tenant",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="sessions_app.tenant",
            ),
        ),
        migrations.AddConstraint(
            model_name="memorytenanttermstat",
            constraint=models.UniqueConstraint(
                fields=("tenant", "lexeme"), name="memory_tenant_term_stat_unique"
            ),
        ),
    ]
