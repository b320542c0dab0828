"""Indexes for the vector step's visibility branches (`visibility_branches_sql`): a
tenant-wide search looks for the nearest public memories, the actor's own and those shared
with the actor one branch at a time instead of under one OR filter.

- `memory_embedding_public`: an HNSW graph of the public memories only (partial, same
  shape as `memory_embedding_hnsw`). Under the OR filter, a search walked the graph of all
  memories, of which ~5% were visible to the actor in B2's tenant of half a million;
  recall@10 stayed at 0.84-0.92 whatever ef_search. In the public graph, the tenant filter
  is the only one left.
- `memory_shared_grants`: GIN (btree_gin for the tenant) over the grants of shared
  memories, so the memories shared with the actor are found exactly.
- `memory_tenant_user_vectors` replaces `memory_tenant_user` (same keys) and carries the
  id, scope and embedding of each memory: the exact scan of one user's memories (a
  search with `user_id`, and the actor's own branch of a tenant-wide one) becomes an
  index-only scan. On B2's million memories a user's 500 rows cost ~2,500 buffer reads
  (a heap page, a TOAST page and the TOAST index for each, scattered over the table)
  and ~170 this way. The index is large (~2 kB a memory: 2 GB at 1M, about the size of
  the embeddings' TOAST) and that is its price.

Built CONCURRENTLY, so writes go on during the build on a large table.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models
from django.db.models import Q

PUBLIC_HNSW = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS memory_embedding_public ON memory USING hnsw "
    "((embedding::halfvec(384)) halfvec_cosine_ops) WITH (m = 32, ef_construction = 128) "
    "WHERE scope = 'public'"
)


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory_app", "0253_issue11_lexical_scope_index")]

    operations = [
        migrations.RunSQL(
            sql=PUBLIC_HNSW,
            reverse_sql="DROP INDEX CONCURRENTLY IF EXISTS memory_embedding_public",
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=GinIndex(
                fields=["tenant", "allowed_users", "allowed_roles"],
                condition=Q(scope="shared"),
                name="memory_shared_grants",
            ),
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                fields=["tenant", "user_id", "-created_at"],
                include=["id", "scope", "embedding"],
                name="memory_tenant_user_vectors",
            ),
        ),
        RemoveIndexConcurrently(model_name="memory", name="memory_tenant_user"),
    ]
