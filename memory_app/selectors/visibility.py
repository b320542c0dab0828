"""Who may read a memory: the visibility rule, written once.

private → its user; shared → its user, the users and roles it lists; public → everyone in
the tenant; an operator (a staff member auditing in the cockpit) → every memory.

The rule is data (`visibility_branches`): disjoint branches, each an AND of column tests,
whose OR is the rule. Both readings are derived from it: `visibility_q`, the ORM filter
of `memory_list` and `memory_get`, and the `psycopg.sql` predicates of the raw search
(`visibility_sql`, `visibility_branches_sql`). The branches are cut so that an index can
serve each on its own: the public memories (partial HNSW and GIN indexes), the actor's own
non-public ones (the (tenant, user) indexes), and the shared ones another user granted to
the actor (a partial GIN on the grants). Under their OR, which ~5% of a large tenant's
rows pass, an HNSW scan walks a graph of mostly invisible neighbours; searched one branch
at a time, each is either exact or a graph search under a filter most rows pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from django.db.models import Q
from psycopg import sql

from memory_app.models import MemoryScope

if TYPE_CHECKING:
    from memory_app.selectors.memories import Actor

Operator = Literal["=", "<>", "IS DISTINCT FROM", "@>", "&&"]


@dataclass(frozen=True)
class ActorValue:
    """A value of the acting user's, sent as the query parameter `name`."""

    name: Literal["acting_user", "acting_roles"]
    value: Any


@dataclass(frozen=True)
class ColumnTest:
    """`column <operator> value`; `value` is a scope (a constant) or the actor's."""

    column: str
    operator: Operator
    value: str | ActorValue

    def q(self) -> Q:
        value = self.value.value if isinstance(self.value, ActorValue) else self.value
        if self.operator == "=":
            return Q(**{self.column: value})
        if self.operator in ("<>", "IS DISTINCT FROM"):  # the columns tested are NOT NULL
            return ~Q(**{self.column: value})
        if self.operator == "@>":  # the array column holds the value
            return Q(**{f"{self.column}__contains": [value]})
        return Q(**{f"{self.column}__overlap": list(value)})

    def sql(self, alias: str) -> sql.Composable:
        column = sql.Identifier(alias, self.column)
        if not isinstance(self.value, ActorValue):
            value: sql.Composable = sql.Literal(self.value)
        elif self.operator == "@>":
            value = sql.SQL("ARRAY[{}]::varchar[]").format(sql.Placeholder(self.value.name))
        elif self.operator == "&&":
            value = sql.SQL("{}::varchar[]").format(sql.Placeholder(self.value.name))
        else:
            value = sql.Placeholder(self.value.name)
        return sql.SQL("{} {} {}").format(column, sql.SQL(self.operator), value)


@dataclass(frozen=True)
class AnyOf:
    """An OR of column tests."""

    tests: tuple[ColumnTest, ...]

    def q(self) -> Q:
        out = Q()
        for test in self.tests:
            out |= test.q()
        return out

    def sql(self, alias: str) -> sql.Composable:
        return sql.SQL("({})").format(sql.SQL(" OR ").join(t.sql(alias) for t in self.tests))


@dataclass(frozen=True)
class Branch:
    """One branch of the rule: an AND of tests (TRUE when it has none). `own`: the
    branch of the actor's own memories, which the search reads by the actor's own term
    statistics and, for its lexical step, through the owner's index. `public`: the
    branch of public memories, whose lexical step reads the tenant's public index."""

    tests: tuple[ColumnTest | AnyOf, ...]
    own: bool = False
    public: bool = False  # the tenant's public memories, read through their own indexes

    def q(self) -> Q:
        out = Q()
        for test in self.tests:
            out &= test.q()
        return out

    def sql(self, alias: str = "m") -> sql.Composable:
        if not self.tests:
            return sql.SQL("TRUE")
        if len(self.tests) == 1:
            return self.tests[0].sql(alias)
        return sql.SQL("({})").format(sql.SQL(" AND ").join(t.sql(alias) for t in self.tests))

    def without_owner(self) -> Branch:
        """The branch for rows already known to be the owner's: its `user_id` test
        dropped (the owner's index keys name tenant and user)."""
        kept = tuple(t for t in self.tests if not _tests_owner(t))
        return Branch(kept, own=self.own, public=self.public)


def _tests_owner(test: ColumnTest | AnyOf) -> bool:
    return isinstance(test, ColumnTest) and test.column == "user_id"


def visibility_branches(actor: Actor) -> list[Branch]:
    """THE visibility rule, as disjoint branches whose OR is the rule: the public
    memories; the actor's own non-public ones; the shared ones of another user that list
    the actor or one of the actor's roles. An operator's one branch passes every row."""
    if actor.operator:
        return [Branch(())]
    public = MemoryScope.PUBLIC.value
    branches = [Branch((ColumnTest("scope", "=", public),), public=True)]
    user = ActorValue("acting_user", actor.user_id)
    if actor.user_id:
        own = (ColumnTest("user_id", "=", user), ColumnTest("scope", "<>", public))
        branches.append(Branch(own, own=True))
    grants = []
    if actor.user_id:
        grants.append(ColumnTest("allowed_users", "@>", user))
    if actor.roles:
        grants.append(ColumnTest("allowed_roles", "&&", ActorValue("acting_roles", actor.roles)))
    if grants:
        shared: list[ColumnTest | AnyOf] = [ColumnTest("scope", "=", MemoryScope.SHARED.value)]
        if actor.user_id:  # the actor's own shared memories are the own branch's
            shared.append(ColumnTest("user_id", "IS DISTINCT FROM", user))
        branches.append(Branch((*shared, AnyOf(tuple(grants)))))
    return branches


def visibility_q(actor: Actor) -> Q:
    """The rule as an ORM filter on Memory."""
    out = Q()
    for branch in visibility_branches(actor):
        out |= branch.q()
    return out


def visibility_params(actor: Actor) -> dict[str, Any]:
    """The parameters the rule's SQL names (`acting_user`, `acting_roles`)."""
    return {"acting_user": actor.user_id or None, "acting_roles": list(actor.roles)}


def visibility_sql(actor: Actor, alias: str = "m") -> tuple[sql.Composable, dict[str, Any]]:
    """The rule as one SQL predicate on row `alias` (the OR of its branches), and its
    parameters."""
    branches = visibility_branches_sql(actor, alias)
    return sql.SQL("({})").format(sql.SQL(" OR ").join(branches)), visibility_params(actor)


def visibility_branches_sql(actor: Actor, alias: str = "m") -> list[sql.Composable]:
    """The rule's branches as SQL predicates on row `alias` (`visibility_params`)."""
    return [branch.sql(alias) for branch in visibility_branches(actor)]


def own_branch(actor: Actor) -> Branch | None:
    """The branch of the actor's own memories, or None for an actor with no user (or an
    operator)."""
    return next((branch for branch in visibility_branches(actor) if branch.own), None)
