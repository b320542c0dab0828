"""The lexical step's branch of public memories gets its own index: a partial GIN over
(tenant_id, lexical_vector) of the public memories only.

A tenant-wide search (`acting_user_id`, no `user_id`) reads the rows holding a query
term one visibility branch at a time (`memory_app.selectors.search.lexical_hits_sql`):
the actor's own through `memory_lexical_scope` (the user is a key there), those shared
with the actor through `memory_shared_grants`, and the public ones here. Without it the
public branch would read every row of the tenant holding the term through
`memory_lexical_scope` and keep the public ~10%, as the single OR filter did before.

Built CONCURRENTLY, so writes go on during the build on a large table.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations
from django.db.models import Q


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory_app", "0254_issue11_visibility_branch_indexes")]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=GinIndex(
                fields=["tenant", "lexical_vector"],
                condition=Q(scope="public"),
                name="memory_lexical_public",
            ),
        ),
    ]
