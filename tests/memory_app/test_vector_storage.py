"""Embeddings stay in the row: a search recomputes distances from the heap (the vector
step's re-ranking, a user's exact sort, the fusion's cosines), and an embedding in TOAST
costs each of those an index lookup and another page (migration memory_app 0252)."""

from __future__ import annotations

from django.db import connection

from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant


def _toast_rows(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = %s", [table]
        )
        toast = cursor.fetchone()[0]
        cursor.execute(f"SELECT count(*) FROM {toast}")  # noqa: S608 - a catalog name
        return int(cursor.fetchone()[0])


def test_a_memory_of_a_few_hundred_characters_keeps_its_embedding_in_the_row(
    tenant: Tenant,
) -> None:
    sentence = "Ben said the weather in Kyoto was lovely and the temples were quiet. "
    drafts = [
        MemoryDraft(user_id="ben", type="episodic", content=f"{n}: {sentence * 6}")
        for n in range(20)
    ]
    memory_add_many(tenant=tenant, drafts=drafts)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT min(pg_column_size(m.*)) FROM memory m WHERE tenant_id = %s", [tenant.pk]
        )
        row_bytes = int(cursor.fetchone()[0])
    assert row_bytes > 2032  # past PostgreSQL's default point for moving values out
    assert _toast_rows("memory") == 0


def test_the_turn_index_keeps_its_embedding_in_the_row_too(db: None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.reloptions, a.attstorage FROM pg_class c
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'embedding'
            WHERE c.relname = 'memory_turn_index'
            """
        )
        options, storage = cursor.fetchone()
    assert "toast_tuple_target=4080" in options and storage == "m"
