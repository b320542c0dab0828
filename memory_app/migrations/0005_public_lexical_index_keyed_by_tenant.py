"""The lexical index of public memories keys each lexeme by its tenant, as the owner
index does by its owner (`memory_owner_lexemes` with the empty owner): a tenant-wide
search reads the term's postings among this tenant's public rows, not those of every
tenant ANDed with a bitmap of all the tenant's rows."""

import django.contrib.postgres.indexes
from django.db import migrations, models

import memory_app.models


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0004_memory_passage_vectors"),
        ("sessions_app", "0003_budget_spend_shards"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="memory",
            name="memory_lexical_public",
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                memory_app.models.OwnerLexemes(
                    models.F("tenant"), models.Value(""), models.F("lexical_vector")
                ),
                condition=models.Q(("scope", "public")),
                fastupdate=False,
                name="memory_lexical_public",
            ),
        ),
    ]
