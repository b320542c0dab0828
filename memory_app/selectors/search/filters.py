"""A search's hard filters: what the caller asked for (tenant, user, agent, types, tags,
`MemoryFilters`) and what the actor may see (memory_app.selectors.visibility), as the
`psycopg.sql` predicates both steps put in their WHERE (`SearchWhere`).

A filter is applied in both rankings' WHERE, not to the fused list, so a filtered search
still returns `limit` hits if they exist. Values are always query parameters; the SQL
text depends only on which filters are set.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg import sql

from memory_app.selectors.currency import valid_at_clause
from memory_app.selectors.visibility import own_branch, visibility_branches, visibility_params

if TYPE_CHECKING:
    from memory_app.selectors.memories import Actor
    from sessions_app.models import Tenant

# (field of MemoryFilters, its predicate; the parameter is `f_<field>`)
_FILTER_CLAUSES: tuple[tuple[str, sql.SQL], ...] = (
    ("session_id", sql.SQL("m.session_id = %(f_session_id)s")),
    ("sources", sql.SQL("m.source = ANY(%(f_sources)s::varchar[])")),
    ("exclude_sources", sql.SQL("m.source <> ALL(%(f_exclude_sources)s::varchar[])")),
    ("exclude_session_id", sql.SQL("m.session_id IS DISTINCT FROM %(f_exclude_session_id)s")),
    ("created_from", sql.SQL("m.created_at >= %(f_created_from)s")),
    ("created_to", sql.SQL("m.created_at < %(f_created_to)s")),
    ("pinned", sql.SQL("m.pinned = %(f_pinned)s")),
    ("scope", sql.SQL("m.scope = %(f_scope)s")),
    ("decay_below", sql.SQL("m.decay_score < %(f_decay_below)s")),
    ("min_importance", sql.SQL("m.importance >= %(f_min_importance)s")),
    ("min_confidence", sql.SQL("m.confidence >= %(f_min_confidence)s")),
)


@dataclass(frozen=True)
class MemoryFilters:
    """Hard filters beyond user, agent, types and tags; None means no filter."""

    session_id: uuid.UUID | None = None
    created_from: datetime | None = None  # inclusive
    created_to: datetime | None = None  # exclusive
    pinned: bool | None = None
    scope: str | None = None
    decay_below: float | None = None  # operators look for what is fading
    min_importance: float | None = None
    min_confidence: float | None = None
    metadata: dict[str, Any] | None = None  # the memory's metadata contains this object
    sources: tuple[str, ...] | None = None  # only memories from these sources
    exclude_sources: tuple[str, ...] | None = None
    exclude_session_id: uuid.UUID | None = None  # not those learnt in this session
    valid_at: datetime | None = None  # only those whose validity interval holds it

    def clauses(self, params: dict[str, Any]) -> list[sql.Composable]:
        """The predicates of the filters set, their parameters put in `params`."""
        out: list[sql.Composable] = []
        for name, clause in _FILTER_CLAUSES:
            value = getattr(self, name)
            if value is not None:
                out.append(clause)
                params[f"f_{name}"] = list(value) if isinstance(value, tuple) else value
        if self.metadata:
            out.append(sql.SQL("m.metadata @> %(f_metadata)s::jsonb"))
            params["f_metadata"] = json.dumps(self.metadata)
        if self.valid_at is not None:
            out.append(valid_at_clause(params, self.valid_at))
        return out


@dataclass(frozen=True)
class SearchWhere:
    """A search's hard filters in two parts: `scope`, what the caller asked for, and
    `visible`, what the actor may see, also cut into `branches` that each step searches
    on its own: in a tenant-wide search most of the tenant's rows are other users'
    private memories, and a step that filtered them out after reading them would read
    twenty rows for each it kept."""

    scope: sql.Composable
    visible: sql.Composable
    # `visible` as disjoint predicates that both steps search one at a time, then merge;
    # one branch, `visible` itself, when the caller named a user: then the (tenant, user)
    # indexes find a few hundred rows, and a partial index of public memories under a
    # one-user filter would not.
    branches: tuple[sql.Composable, ...]
    tenant_id: int
    # The branch of the actor's own memories in a tenant-wide search (one of `branches`):
    # its lexical candidates come from the actor's own document frequencies, not the
    # tenant's, which in a large tenant put most words past the bound.
    own_branch: sql.Composable | None = None
    # The one owner of a branch's rows, whose own lexical index (`memory_lexical_owner`)
    # its lexical step reads: the user the caller named (then there is one branch), or
    # in a tenant-wide search the actor, owner of `own_branch`. None: no such branch.
    # The parameter `owner` holds it.
    owner: str | None = None
    # What a row of `owner`'s read through that index must still pass: the caller's
    # filters and the branch, without the tenant and user tests the index's keys already
    # made. With them, for rows no ANALYZE has counted yet (a user's first turns), the
    # planner reads the user's rows from the (tenant, user) btree and hashes them instead
    # of fetching the dozen ids.
    owned: sql.Composable = field(default_factory=lambda: sql.SQL("TRUE"))
    # The branch of public memories in a tenant-wide search (one of `branches`), whose
    # lexical step reads the tenant's public rows by their index keys
    # (`memory_lexical_public`), and what such a row must still pass: the caller's
    # filters and the branch, without the tenant test the keys already made.
    public_branch: sql.Composable | None = None
    public_owned: sql.Composable = field(default_factory=lambda: sql.SQL("TRUE"))

    def branch_owner(self, branch: sql.Composable) -> str | None:
        """Whose memories `branch` holds when they are all one user's, else None."""
        if self.own_branch is None:  # the caller named a user: one branch, theirs
            return self.owner
        return self.owner if branch == self.own_branch else None

    @property
    def sql(self) -> sql.Composable:  # last: in the class body, the name is the property's
        """Both parts as one predicate."""
        return sql.SQL("{} AND {}").format(self.scope, self.visible)


def _caller_clauses(
    params: dict[str, Any],
    agent_id: str | None,
    types: Sequence[str] | None,
    tags: Sequence[str] | None,
    filters: MemoryFilters | None,
) -> list[sql.Composable]:
    """The caller's filters beyond tenant and user, their parameters put in `params`."""
    clauses: list[sql.Composable] = []
    if agent_id:
        clauses.append(sql.SQL("m.agent_id = %(agent_id)s"))
        params["agent_id"] = agent_id
    if types:
        clauses.append(sql.SQL("m.type = ANY(%(types)s::varchar[])"))
        params["types"] = list(types)
    if tags:
        clauses.append(sql.SQL("m.tags && %(tags)s::varchar[]"))
        params["tags"] = list(tags)
    if filters is not None:
        clauses += filters.clauses(params)
    return clauses


def _and(clauses: Sequence[sql.Composable]) -> sql.Composable:
    return sql.SQL(" AND ").join(clauses)


def search_where(
    *,
    tenant: Tenant,
    actor: Actor,
    user_id: str | None,
    agent_id: str | None,
    types: Sequence[str] | None,
    tags: Sequence[str] | None,
    filters: MemoryFilters | None = None,
) -> tuple[SearchWhere, dict[str, Any]]:
    """The filters of a search by `actor` and their parameters."""
    params: dict[str, Any] = visibility_params(actor) | {"tenant": tenant.pk}
    owner_clauses: list[sql.Composable] = [sql.SQL("m.tenant_id = %(tenant)s")]
    if user_id:
        owner_clauses.append(sql.SQL("m.user_id = %(user_id)s"))
        params["user_id"] = user_id
    clauses = _caller_clauses(params, agent_id, types, tags, filters)
    scope = _and(owner_clauses + clauses)
    branches = visibility_branches(actor)
    visible: sql.Composable = sql.SQL("({})").format(
        sql.SQL(" OR ").join(b.sql() for b in branches)
    )
    if user_id:
        if user_id == actor.user_id:
            # Every memory of the actor's own is visible to the actor, whatever its
            # scope: no filter, so that the vector step can read its rows from an index
            # alone.
            visible = sql.SQL("TRUE")
        where = SearchWhere(
            scope, visible, (visible,), tenant.pk, owner=user_id, owned=_and([*clauses, visible])
        )
        return where, params | {"owner": user_id}
    own = own_branch(actor)
    owned = own.without_owner().sql() if own is not None else sql.SQL("TRUE")
    public = next((b.sql() for b in branches if b.public), None)
    where = SearchWhere(
        scope=scope,
        visible=visible,
        branches=tuple(b.sql() for b in branches),
        tenant_id=tenant.pk,
        own_branch=own.sql() if own is not None else None,
        owner=actor.user_id if own is not None else None,
        owned=_and([*clauses, owned]),
        public_branch=public,
        public_owned=_and([*clauses, public]) if public is not None else sql.SQL("TRUE"),
    )
    return where, params | {"owner": where.owner}


def merged_branches(
    selects: Sequence[sql.Composable], *, order: sql.Composable | None = None
) -> sql.Composable:
    """One SELECT per branch as one: UNION ALL (branches are disjoint), then, with
    `order`, the best `k` of all."""
    if len(selects) == 1:
        return selects[0]
    union = sql.SQL(" UNION ALL ").join(sql.SQL("({})").format(select) for select in selects)
    if order is None:
        return union
    return sql.SQL("SELECT * FROM ({}) AS branches ORDER BY {} LIMIT %(k)s").format(union, order)
