"""Writing many memories of threads at once: a conversation's turns, a backfill of a
thread through `memory_add_many`.

A memory at a place in a thread is an event, so only an exact duplicate collapses (never
a near one): that makes a batch decidable with a few set-based statements instead of a
lock, a dedupe, a neighbour read, an insert and a window rewrite per row. Each new row
gets its lexical window (`window_text`: the THREAD_BEFORE memories before it, itself, and
the THREAD_AFTER after it) computed in Python from the batch and the stored rows around
it; the stored rows whose window now holds a new one are rewritten. Three statements for
a batch however many threads it spans: one read of the stored rows around every thread's
new ones, one UPDATE of the windows that changed, one INSERT.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.db import connection

from memory_app.models import Memory
from memory_app.selectors.thread_window import THREAD_AFTER, THREAD_BEFORE

# For each thread (tenant, user, key) and the span of its new rows (low..high): the
# `reach` stored rows before the span, those inside it, the `reach` after it. The
# `thread_key <> ''` repeats the thread index's predicate so that the planner uses it.
_AROUND_SQL = """
SELECT k.n, m.id, m.content, m.thread_order, m.thread_context
  FROM unnest(%(tenants)s::bigint[], %(users)s::text[], %(keys)s::text[],
              %(lows)s::bigint[], %(highs)s::bigint[])
       WITH ORDINALITY AS k(tenant_id, user_id, thread_key, low, high, n)
 CROSS JOIN LATERAL (
   (SELECT id, content, thread_order, thread_context FROM memory
     WHERE tenant_id = k.tenant_id AND user_id = k.user_id AND thread_key = k.thread_key
       AND thread_key <> '' AND thread_order < k.low
     ORDER BY thread_order DESC LIMIT %(reach)s)
   UNION ALL
   (SELECT id, content, thread_order, thread_context FROM memory
     WHERE tenant_id = k.tenant_id AND user_id = k.user_id AND thread_key = k.thread_key
       AND thread_key <> '' AND thread_order > k.high
     ORDER BY thread_order LIMIT %(reach)s)
   UNION ALL
   SELECT id, content, thread_order, thread_context FROM memory
    WHERE tenant_id = k.tenant_id AND user_id = k.user_id AND thread_key = k.thread_key
      AND thread_key <> '' AND thread_order BETWEEN k.low AND k.high
 ) AS m
"""
_WINDOWS_UPDATE_SQL = """
UPDATE memory m SET thread_context = w.context
  FROM unnest(%s::uuid[], %s::text[]) AS w(id, context)
 WHERE m.id = w.id
"""


class _Stored:
    """A stored row of a thread, as much of it as a window needs."""

    __slots__ = ("content", "pk", "thread_context", "thread_order")

    def __init__(self, pk: Any, content: str, thread_order: int, thread_context: str) -> None:
        self.pk = pk
        self.content = content
        self.thread_order = thread_order
        self.thread_context = thread_context


# How much of a neighbour a window holds (characters): the end of a line before, the start
# of a line after. A short reply ("Yes, last Friday") is explained by the end of the line
# it answers; the rest of a long neighbour (a message about other things) only raised the
# row for queries about those. Chosen on the LoCoMo and LongMemEval dev sets together
# (bench.longmemeval_retrieval).
NEIGHBOUR_CHARS = 150


def neighbour_part(text: str, *, before: bool) -> str:
    """The part of a neighbour's text a window holds: its last NEIGHBOUR_CHARS characters
    for a line before, its first for a line after, cut at a space so no word is halved."""
    if len(text) <= NEIGHBOUR_CHARS:
        return text
    if before:
        part = text[-NEIGHBOUR_CHARS:]
        return part.split(" ", 1)[1] if " " in part else part
    part = text[:NEIGHBOUR_CHARS]
    return part.rsplit(" ", 1)[0] if " " in part else part


def window_text(contents: Sequence[str], index: int) -> str:
    """The lexical window of the row at `index` of a thread's contents (in thread
    order): the THREAD_BEFORE rows before it (their ends), itself, and the THREAD_AFTER
    after it (their starts); see NEIGHBOUR_CHARS."""
    before = [
        neighbour_part(text, before=True)
        for text in contents[max(0, index - THREAD_BEFORE) : index]
    ]
    after = [
        neighbour_part(text, before=False)
        for text in contents[index + 1 : index + THREAD_AFTER + 1]
    ]
    return "\n".join([*before, contents[index], *after])


def thread_rows_insert(rows: Sequence[Memory]) -> None:
    """Insert new memories of threads (unsaved, `thread_key` and `thread_order` set),
    with their windows, rewriting the stored neighbours whose window reaches them. The
    caller holds whatever lock keeps two writers of a thread apart."""
    if not rows:
        return
    threads: dict[tuple[int, str, str], list[Memory]] = defaultdict(list)
    for row in rows:
        threads[(row.tenant_id, row.user_id, row.thread_key)].append(row)
    keys = list(threads)
    for members in threads.values():
        members.sort(key=lambda row: row.thread_order or 0)
    stored = _stored_around(keys, threads)
    rewrites: dict[Any, str] = {}
    for index, key in enumerate(keys):
        rewrites.update(_set_windows(threads[key], stored.get(index + 1, [])))
    if rewrites:
        with connection.cursor() as cursor:
            cursor.execute(_WINDOWS_UPDATE_SQL, [list(rewrites), list(rewrites.values())])
    Memory.objects.bulk_create(list(rows))


def _stored_around(
    keys: list[tuple[int, str, str]], threads: dict[tuple[int, str, str], list[Memory]]
) -> dict[int, list[_Stored]]:
    """The stored rows around each thread's new ones, by the thread's place in `keys`
    (from 1)."""
    params: dict[str, Any] = {
        "tenants": [key[0] for key in keys],
        "users": [key[1] for key in keys],
        "keys": [key[2] for key in keys],
        "lows": [threads[key][0].thread_order or 0 for key in keys],
        "highs": [threads[key][-1].thread_order or 0 for key in keys],
        "reach": THREAD_BEFORE + THREAD_AFTER,
    }
    found: dict[int, list[_Stored]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(_AROUND_SQL, params)
        for n, pk, content, order, context in cursor.fetchall():
            found[n].append(_Stored(pk, content, order, context))
    return found


def _set_windows(rows: list[Memory], stored: list[_Stored]) -> dict[Any, str]:
    """Give the new `rows` of one thread their windows; the stored rows whose window
    changed, with the new window."""
    new = {id(row) for row in rows}
    ordered: list[Any] = sorted([*stored, *rows], key=lambda row: row.thread_order or 0)
    contents = [row.content for row in ordered]
    positions = [index for index, row in enumerate(ordered) if id(row) in new]
    rewrites: dict[Any, str] = {}
    for index, row in enumerate(ordered):
        window = window_text(contents, index)
        if id(row) in new:
            row.thread_context = window
            continue
        # A stored row's window changes only if it holds a new row; the rows read around
        # the new ones reach far enough to give such a row its whole window.
        holds_new = any(index - THREAD_BEFORE <= p <= index + THREAD_AFTER for p in positions)
        if holds_new and row.thread_context != window:
            rewrites[row.pk] = window
    return rewrites
