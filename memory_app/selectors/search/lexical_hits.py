"""The lexical step's candidates: the rows that hold one of the query's candidate terms,
read one visibility branch at a time through that branch's own index, so only rows the
actor may see are read.

The public rows come from a partial GIN of public memories, `memory_lexical_public`;
one owner's rows (the user the caller named, or the actor's own branch of a tenant-wide
search) from that owner's lexical index, `memory_lexical_owner`. Both key a lexeme by
its owner, `<tenant>/<length of the user id>/<user id>/<lexeme>`, the public rows by
the empty owner (`<tenant>/0//<lexeme>`), so a word's postings are the branch's rows
only. The rows shared with the actor come from the grants. Each branch reads at most
ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from psycopg import sql

from memory_app.selectors.search.filters import SearchWhere, merged_branches
from memory_app.selectors.search.lexical import LexicalQuery

# The lexical index of one user's memories: the row's lexemes, each keyed by its owner.
# `owner_lexeme_keys` writes the keys a query looks up.
OWNER_LEXEMES_SQL = sql.SQL("memory_owner_lexemes(o.tenant_id, o.user_id, o.lexical_vector)")

# The ids of one owner's rows holding a candidate term, by their keys alone, as an
# ARRAY(subquery): an InitPlan, run once and planned on its own; the rows are then
# fetched by id (the outer query names neither tenant nor user: `SearchWhere.owned`).
# With the key lookup among the outer query's filters, the (tenant, user) btree offers
# PostgreSQL a plan that reads the owner's rows and computes the index's function on each
# (~25 us a row), which it takes for rows written since the last ANALYZE; as a plain
# joined subquery, the same estimate runs it inside a nested loop, once for each of the
# user's rows. Here the index is the only way in but reading the table, which the
# function's declared cost rules out.
_OWNER_HITS = sql.SQL(
    "SELECT o.id FROM memory o WHERE {} && %(owner_keys)s::text[] LIMIT %(cap)s"
).format(OWNER_LEXEMES_SQL)

# The tenant's public rows holding a candidate term, by the same function's keys with the
# empty owner (`memory_lexical_public`, partial on public rows): the term's postings are
# this tenant's public rows. The keys name the tenant, so the statement does not: with a
# tenant test among the filters, PostgreSQL ANDed the term's postings with a bitmap of
# every row of the tenant from a btree, whatever the term.
PUBLIC_LEXEMES_SQL = sql.SQL("memory_owner_lexemes(m.tenant_id, '', m.lexical_vector)")
_PUBLIC_BRANCH = sql.SQL(
    "SELECT m.id, m.lexical_vector, m.created_at FROM memory m"
    " WHERE {keys} && %(public_keys)s::text[] AND {public} LIMIT %(cap)s"
)

_OWNER_BRANCH = sql.SQL(
    "SELECT m.id, m.lexical_vector, m.created_at"
    " FROM unnest(ARRAY({hits})) AS owned (id)"
    " JOIN memory m ON m.id = owned.id WHERE {owned}"
    " LIMIT %(cap)s"
)
_TSQUERY_BRANCH = sql.SQL(
    "SELECT m.id, m.lexical_vector, m.created_at FROM memory m"
    " WHERE {scope} AND {branch}"
    " AND m.lexical_vector @@ %(tsquery)s::tsquery LIMIT %(cap)s"
)


def owner_lexeme_keys(tenant_id: int, user_id: str, lexemes: Sequence[str]) -> list[str]:
    """The keys of `memory_owner_lexemes` under which `user_id`'s rows holding `lexemes`
    are indexed: `<tenant>/<length of the id>/<id>/<lexeme>`, the length in characters,
    as PostgreSQL's length() counts them in a UTF-8 database."""
    prefix = f"{tenant_id}/{len(user_id)}/{user_id}/"
    return [prefix + lexeme for lexeme in lexemes]


def public_lexeme_keys(tenant_id: int, lexemes: Sequence[str]) -> list[str]:
    """The keys of `memory_lexical_public` under which the tenant's public rows holding
    `lexemes` are indexed: an owner's keys with the empty owner."""
    return owner_lexeme_keys(tenant_id, "", lexemes)


def lexical_hits_sql(where: SearchWhere, lexical: LexicalQuery | None = None) -> sql.Composable:
    """The rows under `where` that hold one of the query's candidate terms (id, lexical
    vector, created_at), one SELECT per visibility branch (parameters:
    `lexical_hits_params`).

    A branch of one owner's memories (`SearchWhere.branch_owner`) looks its terms up by
    `%(owner_keys)s` in `memory_lexical_owner`, where a word's postings are that user's
    rows only, then fetches those rows by id and tests them against `SearchWhere.owned`;
    the branch of public memories reads its rows by `%(public_keys)s` in
    `memory_lexical_public` and tests them against `SearchWhere.public_owned`; the
    others match `%(tsquery)s`. Given `lexical`, a branch without candidate terms is
    left out."""
    selects: list[sql.Composable] = []
    for branch in where.branches:
        own = branch == where.own_branch
        if lexical is not None and not lexical.branch_candidates(own=own):
            continue
        if where.branch_owner(branch) is not None:
            selects.append(_OWNER_BRANCH.format(hits=_OWNER_HITS, owned=where.owned))
        elif branch == where.public_branch:
            selects.append(
                _PUBLIC_BRANCH.format(keys=PUBLIC_LEXEMES_SQL, public=where.public_owned)
            )
        else:
            selects.append(_TSQUERY_BRANCH.format(scope=where.scope, branch=branch))
    return merged_branches(selects)


def lexical_hits_params(where: SearchWhere, lexical: LexicalQuery) -> dict[str, Any]:
    """The parameters of `lexical_hits_sql(where, lexical)`: the candidate terms as a
    tsquery for the branches of many owners, as the owner's index keys for the branch of
    one (`SearchWhere.branch_owner`), and the bound of rows a branch reads."""
    keys: list[str] = []
    if where.owner is not None:
        own = where.own_branch is not None  # the actor's branch of a tenant-wide search
        keys = owner_lexeme_keys(where.tenant_id, where.owner, lexical.branch_candidates(own=own))
    public_keys: list[str] = []
    if where.public_branch is not None:
        public_keys = public_lexeme_keys(where.tenant_id, lexical.branch_candidates(own=False))
    return {
        "tsquery": lexical.tsquery,
        "owner_keys": keys,
        "public_keys": public_keys,
        "cap": int(settings.ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS),
    }
