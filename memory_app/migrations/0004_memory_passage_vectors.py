"""The vectors of memories' passages (memory_app.passage_vectors), at the embedding's
dimensions like `memory.embedding`."""

import django.db.models.deletion
import pgvector.django.vector
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0003_search_triggers_and_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryPassage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "ordinal",
                    models.PositiveSmallIntegerField(help_text="The passage's place in the text."),
                ),
                (
                    "embedding",
                    pgvector.django.vector.VectorField(
                        dimensions=settings.ENGRAM_EMBEDDING_DIMENSIONS
                    ),
                ),
                (
                    "memory",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="passages",
                        to="memory_app.memory",
                    ),
                ),
            ],
            options={
                "db_table": "memory_passage",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("memory", "ordinal"), name="memory_passage_unique"
                    )
                ],
            },
        ),
    ]
