"""A search's hard filters: what the caller asked for (tenant, user, agent, types, tags,
`MemoryFilters`) and what the actor may see (memory_app.selectors.visibility), as the
`psycopg.sql` predicates both steps put in their WHERE (`SearchWhere`).

A filter is applied in both rankings' WHERE, not to the fused list, so a filtered search
still returns `limit` hits if they exist. Values are always query parameters; the SQL
text is composed from the search's shape alone (`WhereShape`: which filters are set,
which of the actor's fields), once per shape and process: composing it costs about a
third of a millisecond, many times the lookup.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from psycopg import sql

from memory_app.selectors.currency import VALID_AT_SQL
from memory_app.selectors.memories import Actor
from memory_app.selectors.validity import validity_start_sql
from memory_app.selectors.visibility import own_branch, visibility_branches, visibility_params

if TYPE_CHECKING:
    from sessions_app.models import Tenant

# (field of MemoryFilters, its predicate; the parameter is `f_<field>`)
_FILTER_CLAUSES: tuple[tuple[str, sql.Composable], ...] = (
    ("session_id", sql.SQL("m.session_id = %(f_session_id)s")),
    ("sources", sql.SQL("m.source = ANY(%(f_sources)s::varchar[])")),
    ("exclude_sources", sql.SQL("m.source <> ALL(%(f_exclude_sources)s::varchar[])")),
    ("exclude_session_id", sql.SQL("m.session_id IS DISTINCT FROM %(f_exclude_session_id)s")),
    ("created_from", sql.SQL("m.created_at >= %(f_created_from)s")),
    ("created_to", sql.SQL("m.created_at < %(f_created_to)s")),
    ("occurred_from", sql.SQL("m.occurred_at >= %(f_occurred_from)s")),
    ("occurred_to", sql.SQL("m.occurred_at < %(f_occurred_to)s")),
    ("occurred_by", sql.SQL("(m.occurred_at IS NULL OR m.occurred_at <= %(f_occurred_by)s)")),
    ("known_by", sql.SQL("(m.created_at <= %(f_known_by)s OR m.occurred_at <= %(f_known_by)s)")),
    ("dated_from", sql.SQL("{} >= %(f_dated_from)s").format(validity_start_sql("m"))),
    ("dated_to", sql.SQL("{} < %(f_dated_to)s").format(validity_start_sql("m"))),
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
    # When it happened (occurred_at), inclusive and exclusive; a memory without
    # occurred_at passes neither.
    occurred_from: datetime | None = None
    occurred_to: datetime | None = None
    # Had happened by then: occurred_at at or before it, or not given.
    occurred_by: datetime | None = None
    # Known by then: noted (created_at) by then, or noted later but dated (occurred_at)
    # by then, as history imported after the fact is.
    known_by: datetime | None = None
    # When what it tells began (memory_app.selectors.validity: valid_from, else
    # occurred_at, else created_at), inclusive and exclusive: the time a query's time
    # phrase reads (search_time.within_reach).
    dated_from: datetime | None = None
    dated_to: datetime | None = None
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

    def params(self) -> dict[str, Any]:
        """The parameters of the filters set, named as their predicates name them
        (`_CALLER_CLAUSES`), in the predicates' order."""
        out: dict[str, Any] = {}
        for name, _ in _FILTER_CLAUSES:
            value = getattr(self, name)
            if value is not None:
                out[f"f_{name}"] = list(value) if isinstance(value, tuple) else value
        if self.metadata:
            out["f_metadata"] = json.dumps(self.metadata)
        if self.valid_at is not None:
            out["f_valid_at"] = self.valid_at
        return out


# Every predicate a caller's filter may add, by the name of its parameter, in the order
# they are ANDed.
_CALLER_CLAUSES: dict[str, sql.Composable] = {
    "agent_id": sql.SQL("m.agent_id = %(agent_id)s"),
    "types": sql.SQL("m.type = ANY(%(types)s::varchar[])"),
    "tags": sql.SQL("m.tags && %(tags)s::varchar[]"),
    **{f"f_{name}": clause for name, clause in _FILTER_CLAUSES},
    "f_metadata": sql.SQL("m.metadata @> %(f_metadata)s::jsonb"),
    "f_valid_at": VALID_AT_SQL,
}


@dataclass(frozen=True)
class WhereShape:
    """What the text of a search's filters depends on: which of the caller's filters are
    set (their parameters' names, `_CALLER_CLAUSES`), whether it names a user and that
    user is the actor, and which of the actor's fields are set. Never a value."""

    caller: tuple[str, ...]
    user: bool
    user_is_actor: bool
    actor_user: bool
    actor_roles: bool
    operator: bool

    def actor(self) -> Actor:
        """An actor of this shape: the visibility rule's text depends on which of its
        fields are set, its values are parameters (`visibility_params`)."""
        return Actor(
            user_id="actor" if self.actor_user else None,
            roles=("role",) if self.actor_roles else (),
            operator=self.operator,
        )


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
    # The shape the text was composed from (`search_where`): the statements built on it
    # are composed once per shape (memory_app.selectors.search.pool). None for filters
    # written by hand, whose statements are composed every time.
    shape: WhereShape | None = None

    def branch_owner(self, branch: sql.Composable) -> str | None:
        """Whose memories `branch` holds when they are all one user's, else None."""
        if self.own_branch is None:  # the caller named a user: one branch, theirs
            return self.owner
        return self.owner if branch == self.own_branch else None

    @property
    def sql(self) -> sql.Composable:  # last: in the class body, the name is the property's
        """Both parts as one predicate."""
        return sql.SQL("{} AND {}").format(self.scope, self.visible)


def _caller_params(
    agent_id: str | None,
    types: Sequence[str] | None,
    tags: Sequence[str] | None,
    filters: MemoryFilters | None,
) -> dict[str, Any]:
    """The parameters of the caller's filters beyond tenant and user, named as their
    predicates name them (`_CALLER_CLAUSES`), in the predicates' order."""
    params: dict[str, Any] = {}
    if agent_id:
        params["agent_id"] = agent_id
    if types:
        params["types"] = list(types)
    if tags:
        params["tags"] = list(tags)
    if filters is not None:
        params |= filters.params()
    return params


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
    """The filters of a search by `actor` and their parameters: the text of its shape
    (`where_of_shape`), with this search's tenant and owner."""
    caller = _caller_params(agent_id, types, tags, filters)
    shape = WhereShape(
        caller=tuple(caller),
        user=bool(user_id),
        user_is_actor=bool(user_id) and user_id == actor.user_id,
        actor_user=bool(actor.user_id),
        actor_roles=bool(actor.roles),
        operator=actor.operator,
    )
    where = where_of_shape(shape)
    params: dict[str, Any] = visibility_params(actor) | {"tenant": tenant.pk} | caller
    if user_id:
        params["user_id"] = user_id
        owner: str | None = user_id
    else:
        owner = actor.user_id if where.own_branch is not None else None
    where = dataclasses.replace(where, tenant_id=tenant.pk, owner=owner)
    return where, params | {"owner": owner}


@lru_cache(maxsize=256)
def where_of_shape(shape: WhereShape) -> SearchWhere:
    """The filters' text for searches of `shape`; its `tenant_id` and `owner` are the
    search's own (`search_where`)."""
    owner_clauses: list[sql.Composable] = [sql.SQL("m.tenant_id = %(tenant)s")]
    if shape.user:
        owner_clauses.append(sql.SQL("m.user_id = %(user_id)s"))
    clauses = [_CALLER_CLAUSES[name] for name in shape.caller]
    scope = _and(owner_clauses + clauses)
    actor = shape.actor()
    branches = visibility_branches(actor)
    visible: sql.Composable = sql.SQL("({})").format(
        sql.SQL(" OR ").join(b.sql() for b in branches)
    )
    if shape.user:
        if shape.user_is_actor:
            # Every memory of the actor's own is visible to the actor, whatever its
            # scope: no filter, so that the vector step can read its rows from an index
            # alone.
            visible = sql.SQL("TRUE")
        return SearchWhere(
            scope, visible, (visible,), 0, owned=_and([*clauses, visible]), shape=shape
        )
    own = own_branch(actor)
    owned = own.without_owner().sql() if own is not None else sql.SQL("TRUE")
    public = next((b.sql() for b in branches if b.public), None)
    return SearchWhere(
        scope=scope,
        visible=visible,
        branches=tuple(b.sql() for b in branches),
        tenant_id=0,
        own_branch=own.sql() if own is not None else None,
        owned=_and([*clauses, owned]),
        public_branch=public,
        public_owned=_and([*clauses, public]) if public is not None else sql.SQL("TRUE"),
        shape=shape,
    )


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
