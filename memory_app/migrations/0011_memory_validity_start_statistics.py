"""Statistics on when a memory's content began (memory_app.selectors.validity:
coalesce(valid_from, occurred_at, created_at)), the expression a time-only search
filters on. Without them the planner guesses the share of rows in a time range and, on a
tenant-wide search, trades the vector index for a full scan; with them it keeps the index
scan. ANALYZE fills them at once (it samples the table; autovacuum keeps them current)."""

from django.db import migrations

CREATE = """
CREATE STATISTICS IF NOT EXISTS memory_validity_start_stats
    ON (coalesce(valid_from, occurred_at, created_at)) FROM memory;
ANALYZE memory;
"""

DROP = "DROP STATISTICS IF EXISTS memory_validity_start_stats;"


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0010_memory_content_unique_among_current_memories"),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]
