"""Statements prepared on the database connection by the message that runs them.

A statement whose planning costs as much as its run (a search's candidate pool, a budget
reservation under its locks) is sent as two statements of one message:

    DO $prepare$BEGIN IF NOT EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'n')
    THEN EXECUTE $statement$PREPARE n AS …$statement$; END IF; END$prepare$;
    EXECUTE n(%(a)s, %(b)s, …)

The `DO` block prepares the statement on a connection that lacks it (a new one, or one
whose statements a pooler dropped with DISCARD ALL / DEALLOCATE ALL), so no state kept
in Python can disagree with the server's; `EXECUTE` then runs it with PostgreSQL's plan
cache: its own choice between a custom and a generic plan, or the one the message names
(`SET LOCAL plan_cache_mode` first: several statements of one message are one implicit
transaction, so the setting ends with it, or with the caller's transaction). It works
with Django's client-side binding (DATABASES' server_side_binding is off): the
message's `%(name)s` parameters are its arguments, each sent once however often the
statement reads it.

The name is the digest of the statement's text, so a changed statement is a new one and
each text is prepared once per connection: a caller must keep the number of texts it
sends bounded (a statement whose text holds a value, not a placeholder, would prepare a
new one for every value).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from psycopg import sql

# PostgreSQL's `plan_cache_mode`: a plan made for each run's values, or one made once.
PlanCacheMode = Literal["force_custom_plan", "force_generic_plan"]

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_BODY_TAG = "$statement$"


@dataclass(frozen=True)
class PreparedStatement:
    """A statement as a prepared statement of the connection: its `name`, the `PREPARE`
    of it (its `%(name)s` parameters numbered $1, $2, … in the order of `parameters`)."""

    name: str
    prepare: str
    parameters: tuple[str, ...]

    def message(self, *, plan: PlanCacheMode | None = None) -> sql.Composed:
        """`prepare_if_missing()` then `execute()`, after `plan` as the plan cache's
        mode when given: the last result is the statement's."""
        message = self.prepare_if_missing() + sql.SQL(" ") + self.execute()
        if plan is None:
            return message
        return sql.SQL("SET LOCAL plan_cache_mode = {}; ").format(sql.SQL(plan)) + message

    def prepare_if_missing(self) -> sql.Composed:
        """The `DO` block that prepares it where the connection lacks it."""
        return sql.SQL(
            "DO $prepare$BEGIN IF NOT EXISTS"
            " (SELECT FROM pg_prepared_statements WHERE name = {name})"
            " THEN EXECUTE {tag}{prepare}{tag}; END IF; END$prepare$;"
        ).format(
            name=sql.Literal(self.name),
            tag=sql.SQL(_BODY_TAG),
            prepare=sql.SQL(self.prepare),
        )

    def execute(self) -> sql.Composed:
        """Its `EXECUTE`, the message's parameters as the arguments."""
        return sql.SQL("EXECUTE {statement}({arguments})").format(
            statement=sql.Identifier(self.name),
            arguments=sql.SQL(", ").join([sql.Placeholder(name) for name in self.parameters]),
        )


def prepared_statement(
    statement: sql.Composable, *, prefix: str, types: Sequence[tuple[str, str]] = ()
) -> PreparedStatement:
    """`statement` as a prepared statement named `prefix` + its text's digest.

    `types`: (parameter, SQL type) pairs that come first, in that order, with their
    types declared (a parameter that may be NULL and that no cast types); the other
    parameters follow in the order the text first reads them, their types inferred by
    PostgreSQL from where the statement reads them."""
    return _prepared_text(statement.as_string(None), prefix, tuple(types))


@lru_cache(maxsize=512)
def _prepared_text(text: str, prefix: str, types: tuple[tuple[str, str], ...]) -> PreparedStatement:
    if _BODY_TAG in text:
        raise ValueError(f"a statement to prepare may not contain {_BODY_TAG}")
    declared = [name for name, _ in types]
    parameters = tuple(dict.fromkeys([*declared, *_PLACEHOLDER.findall(text)]))
    numbers = {name: number for number, name in enumerate(parameters, start=1)}
    body = _PLACEHOLDER.sub(lambda match: f"${numbers[match.group(1)]}", text)
    name = prefix + hashlib.sha1(body.encode()).hexdigest()[:12]  # noqa: S324 - a name, not a secret
    signature = f"({', '.join(kind for _, kind in types)})" if types else ""
    return PreparedStatement(name, f"PREPARE {name}{signature} AS {body}", parameters)
