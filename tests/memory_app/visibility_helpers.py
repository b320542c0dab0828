"""What the visibility branch tests share: memories of every visibility, the actors
that look at them, and SQL reads of the rows under a predicate."""

from __future__ import annotations

import uuid

from django.db import connection
from psycopg import sql

from memory_app.selectors.memories import Actor
from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant

# (owner, scope, allowed users, allowed roles, content): every way a memory can be visible
# or not to the actors below; the contents are distinct enough not to be merged.
MEMORIES = [
    ("alice", "private", (), (), "Alice keeps her passport in the blue drawer."),
    ("alice", "shared", (), (), "Alice's sourdough starter is fed every Sunday morning."),
    ("alice", "shared", ("carol",), (), "Alice lent Carol her road bike for the summer."),
    ("alice", "shared", (), ("support",), "Alice's laptop warranty runs until next March."),
    ("alice", "public", (), (), "The office closes early on the last Friday of the month."),
    ("bob", "private", (), (), "Bob is allergic to peanuts and shellfish."),
    ("bob", "shared", ("alice",), (), "Bob wants Alice to review the quarterly budget."),
    ("bob", "shared", ("alice", "carol"), ("support",), "Bob's flight to Oslo leaves at 7am."),
    ("bob", "shared", (), ("sales",), "Bob closed the Lisbon deal for forty licences."),
    ("bob", "public", (), (), "Parking passes are renewed in the first week of January."),
    ("carol", "private", (), (), "Carol practises the cello before breakfast."),
    ("carol", "shared", ("bob",), ("support", "sales"), "Carol's printer jams on duplex."),
]
ACTORS = [
    Actor(),
    Actor(user_id="alice"),
    Actor(user_id="carol"),
    Actor(user_id="dave"),
    Actor(roles=("support",)),
    Actor(user_id="alice", roles=("support",)),
    Actor(user_id="bob", roles=("sales", "finance")),
    Actor(operator=True),
]


def add_memories_of_every_visibility(tenant: Tenant) -> dict[uuid.UUID, str]:
    """Every row of MEMORIES, added; content by id."""
    drafts = [
        MemoryDraft(
            user_id=owner,
            type="fact",
            content=content,
            scope=scope,
            allowed_users=users,
            allowed_roles=roles,
        )
        for owner, scope, users, roles, content in MEMORIES
    ]
    results = memory_add_many(tenant=tenant, drafts=drafts)
    assert [result.action for result in results] == ["created"] * len(MEMORIES)
    return {result.memory.pk: result.memory.content for result in results}


def rows_under(
    tenant: Tenant, predicate: sql.Composable, params: dict[str, object]
) -> set[uuid.UUID]:
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SQL("SELECT m.id FROM memory m WHERE m.tenant_id = %(tenant)s AND {}").format(
                predicate
            ),
            {**params, "tenant": tenant.pk},
        )
        return {row[0] for row in cursor.fetchall()}


def of_owner(predicate: sql.Composable) -> sql.Composable:
    """`predicate` on the rows of the user `%(owner)s`."""
    return sql.SQL("m.user_id = %(owner)s AND {}").format(predicate)
