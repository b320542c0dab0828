"""The memory HNSW graph with 32 links per node (64 on its base layer) instead of 16.

With 16 links, a group of more than ~32 memories close to each other (one topic said many
ways, a user's repeated preference) keeps every base-layer link inside the group, so the
graph falls apart into islands and a search that lands in the wrong one cannot leave it:
on 200k vectors in groups of 50 (cosine 0.80-0.94 to their centre) recall@10 against an
exact scan was 0.51-0.59 at ef_search 200; with m = 32 and ef_construction = 128 it is
0.95-0.99 (a higher ef_construction alone: 0.58-0.67); bench/RESULTS.md, "HNSW shape
notes". On B2's million memories (groups of 50) the tenant-wide recall@10 went from 0.197
to 0.915.

Built CONCURRENTLY under a new name and swapped in, so writes continue during the build
on a large table. The build costs more: 1,260 s for B2's million memories on 2 cores
with maintenance_work_mem 1 GB (about 270 s with m = 16), and the index is larger.
"""

from django.db import migrations

OLD = "WITH (m = 16, ef_construction = 64)"
NEW = "WITH (m = 32, ef_construction = 128)"


def _swap(params: str) -> list[str]:
    return [
        "DROP INDEX CONCURRENTLY IF EXISTS memory_embedding_hnsw_next",
        "CREATE INDEX CONCURRENTLY memory_embedding_hnsw_next ON memory USING hnsw "
        f"((embedding::halfvec(384)) halfvec_cosine_ops) {params}",
        "DROP INDEX CONCURRENTLY IF EXISTS memory_embedding_hnsw",
        "ALTER INDEX memory_embedding_hnsw_next RENAME TO memory_embedding_hnsw",
    ]


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory_app", "0251_issue11_term_stat_covering")]

    operations = [migrations.RunSQL(sql=_swap(NEW), reverse_sql=_swap(OLD))]
