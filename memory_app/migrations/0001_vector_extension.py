from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    """pgvector for embeddings; pg_trgm for fuzzy name matching."""

    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [VectorExtension(), TrigramExtension()]
