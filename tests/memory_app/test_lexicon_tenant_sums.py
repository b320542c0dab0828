"""The tenant's BM25 sums that a tenant-wide search reads: its folded sums plus the
per-user rows' unfolded rest equal what the tenant's memories hold, before, during and
after a fold, after edits, deletions and an erasure; a fold never waits for a writer's
row; a search ranks alike whatever the fold has done."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.db import connection, transaction

from memory_app.lexicon.fold import (
    LEXICON_DELETE_SQL,
    LEXICON_FOLD_SQL,
    TERM_DELETE_SQL,
    TERM_FOLD_SQL,
    _fold_batch,
    lexicon_fold,
)
from memory_app.models import Memory
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import memory_search
from memory_app.selectors.search.lexical import terms_sql
from memory_app.services.memories import MemoryDraft, memory_add_many, memory_delete, memory_update
from sessions_app.models import Tenant
from sessions_app.services.api_keys import tenant_get_or_create
from sessions_app.services.erasure import user_erase
from tests.sql_snapshots import assert_matches_snapshot

pytestmark = pytest.mark.django_db

LINES = {
    "ana": ["I walk the dog along the river every morning.", "The river flooded the garden."],
    "ben": ["Our dog hates the rain.", "I bought a kayak for the river trips.", "Rain again."],
    "cy": ["Kayak lessons start in May.", "The garden needs rain."],
}
WORDS = "dog river rain kayak garden morning lessons bought flooded"


def _add(tenant: Tenant, lines: dict[str, list[str]]) -> list[Memory]:
    drafts = [
        MemoryDraft(user_id=user, type="episodic", content=text, scope="public")
        for user, texts in lines.items()
        for text in texts
    ]
    return [result.memory for result in memory_add_many(tenant=tenant, drafts=drafts)]


def _read(tenant: Tenant) -> tuple[dict[str, int], int, int]:
    """What the tenant-wide terms statement reads for WORDS: df per lexeme, documents,
    total length."""
    with connection.cursor() as cursor:
        cursor.execute(terms_sql(user=False, own=False), {"text": WORDS, "tenant": tenant.pk})
        rows = cursor.fetchall()
    return {row[0]: int(row[1]) for row in rows}, int(rows[0][2]), int(rows[0][3])


def _truth(tenant: Tenant) -> tuple[dict[str, int], int, int]:
    """The same counted from the tenant's memory rows."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT q.lexeme, count(m.id) FROM"
            " unnest(tsvector_to_array(to_tsvector('english', %s))) AS q(lexeme)"
            " LEFT JOIN memory m ON m.tenant_id = %s"
            " AND q.lexeme = ANY (tsvector_to_array(m.lexical_vector)) GROUP BY q.lexeme",
            [WORDS, tenant.pk],
        )
        df = {lexeme: int(count) for lexeme, count in cursor.fetchall()}
        cursor.execute(
            "SELECT count(*), coalesce(sum(length(lexical_vector)), 0) FROM memory"
            " WHERE tenant_id = %s",
            [tenant.pk],
        )
        documents, length = cursor.fetchone()
    return df, int(documents), int(length)


def _unfolded(tenant: Tenant) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM memory_term_stat"
            "        WHERE tenant_id = %(t)s AND df <> folded_df)"
            "     + (SELECT count(*) FROM memory_lexicon_stat WHERE tenant_id = %(t)s"
            "        AND (documents <> folded_documents OR lexemes <> folded_lexemes))",
            {"t": tenant.pk},
        )
        return int(cursor.fetchone()[0])


def _summed(tenant: Tenant) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM memory_tenant_term_stat WHERE tenant_id = %s AND df <> 0",
            [tenant.pk],
        )
        return int(cursor.fetchone()[0])


def test_the_tenant_figures_hold_before_during_and_after_folds(tenant: Tenant) -> None:
    memories = _add(tenant, LINES)
    assert _unfolded(tenant) > 0 and _summed(tenant) == 0
    assert _read(tenant) == _truth(tenant)  # nothing folded: the rows alone

    _fold_batch(TERM_FOLD_SQL, 3)  # a fold cut short: some rows in the sums, the rest not
    assert _summed(tenant) > 0 and _unfolded(tenant) > 0
    assert _read(tenant) == _truth(tenant)
    other = tenant_get_or_create(name="globex")
    _add(other, {"zed": ["The dog and the river and the rain."]})

    report = lexicon_fold()
    assert report.term_rows > 0 and report.lexicon_rows > 0
    assert _unfolded(tenant) == 0 and _unfolded(other) == 0
    assert _read(tenant) == _truth(tenant)  # the sums alone
    assert _read(other) == _truth(other)

    memory_update(memory=memories[0], changes={"content": "I walk the dog in the rain."})
    memory_delete(memory=Memory.objects.get(pk=memories[3].pk))  # ben's kayak
    _add(tenant, {"dee": ["A kayak, a dog and a garden."]})
    assert _unfolded(tenant) > 0
    assert _read(tenant) == _truth(tenant)  # sums and unfolded rest together
    lexicon_fold(batch_size=2)
    assert _unfolded(tenant) == 0
    assert _read(tenant) == _truth(tenant)
    assert _read(other) == _truth(other)


def test_an_erased_user_leaves_the_tenant_sums(tenant: Tenant) -> None:
    _add(tenant, LINES)
    lexicon_fold()
    user_erase(tenant=tenant, user_id="ben")
    assert not Memory.objects.filter(tenant=tenant, user_id="ben").exists()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM memory_term_stat WHERE user_id = 'ben')"
            " + (SELECT count(*) FROM memory_lexicon_stat WHERE user_id = 'ben')"
        )
        assert cursor.fetchone()[0] == 0
    assert _read(tenant) == _truth(tenant)
    lexicon_fold()
    assert _read(tenant) == _truth(tenant)


def test_a_tenant_wide_search_ranks_alike_before_and_after_a_fold(tenant: Tenant) -> None:
    _add(tenant, LINES)
    actor = Actor(user_id="ana")

    def ranked() -> list[tuple[str, float]]:
        outcome = memory_search(tenant=tenant, actor=actor, query="kayak trips in the rain")
        return [(str(hit.memory.pk), round(hit.score, 9)) for hit in outcome.hits]

    before = ranked()
    assert before
    lexicon_fold()
    assert _unfolded(tenant) == 0
    assert ranked() == before


@pytest.mark.django_db(transaction=True)
def test_a_fold_skips_a_row_a_writer_holds_and_takes_it_next_time(tenant: Tenant) -> None:
    _add(tenant, LINES)
    holding, release = threading.Event(), threading.Event()

    def writer() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT id FROM memory_term_stat WHERE tenant_id = %s AND user_id = 'ben'"
                    " AND lexeme = 'kayak' FOR UPDATE",
                    [tenant.pk],
                )
                holding.set()
                release.wait(60)
        finally:
            holding.set()
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(60)
        lexicon_fold()  # would hang here if it waited for the writer's row
        assert _unfolded(tenant) == 1
        assert _read(tenant) == _truth(tenant)
    finally:
        release.set()
        thread.join(60)
    lexicon_fold()
    assert _unfolded(tenant) == 0
    assert _read(tenant) == _truth(tenant)


@pytest.mark.django_db(transaction=True)
def test_writers_and_folds_at_once_end_exact_and_never_deadlock(tenant: Tenant) -> None:
    # Writers of four users (two memories per transaction, words shared across users)
    # while two folds loop: no error (a deadlock would raise in one of them), and the
    # figures equal a recount once everyone is done.
    words = WORDS.split()
    errors: list[BaseException] = []
    writing = threading.Event()

    def write(user: str) -> None:
        try:
            for round_ in range(4):
                picked = [words[(round_ + i) % len(words)] for i in range(4)]
                _add(tenant, {user: [" ".join(picked), " ".join(reversed(picked)) + " now"]})
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    def fold() -> None:
        try:
            while writing.is_set():
                lexicon_fold(batch_size=3)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    writing.set()
    folds = [threading.Thread(target=fold) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(f"user-{n}",)) for n in range(4)]
    for thread in folds + writers:
        thread.start()
    for thread in writers:
        thread.join(120)
    writing.clear()
    for thread in folds:
        thread.join(120)
    assert errors == []
    assert _read(tenant) == _truth(tenant)
    lexicon_fold()
    assert _unfolded(tenant) == 0
    assert _read(tenant) == _truth(tenant)


@pytest.mark.parametrize(
    ("name", "statement"),
    [
        ("term_fold", TERM_FOLD_SQL),
        ("lexicon_fold", LEXICON_FOLD_SQL),
        ("term_delete", TERM_DELETE_SQL),
        ("lexicon_delete", LEXICON_DELETE_SQL),
    ],
)
def test_fold_statements_match_their_snapshots(name: str, statement: object) -> None:
    assert_matches_snapshot(Path(__file__).parent / "snapshots" / "lexicon", name, statement)  # type: ignore[arg-type]
