"""Writing many memories of threads at once: a conversation's turns, a backfill of a
thread through `memory_add_many`.

A memory at a place in a thread is an event, so only an exact duplicate collapses (never
a near one): that makes a batch decidable with a few set-based statements instead of a
lock, a dedupe, a neighbour read, an insert and a window rewrite per row. Each new row
gets its lexical window (`window_text`: the THREAD_BEFORE memories before it, itself, and
the THREAD_AFTER after it) computed in Python from the batch and the stored rows around
it; the stored rows whose window now holds a new one are rewritten; then one INSERT.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from memory_app.models import Memory

THREAD_BEFORE = 2  # previous memories in a lexical window
THREAD_AFTER = 1  # following memories in a lexical window


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
    threads: dict[tuple[int, str, str], list[Memory]] = defaultdict(list)
    for row in rows:
        threads[(row.tenant_id, row.user_id, row.thread_key)].append(row)
    for key, members in threads.items():
        _set_windows(key, sorted(members, key=lambda row: row.thread_order or 0))
    Memory.objects.bulk_create(list(rows))


def _set_windows(key: tuple[int, str, str], rows: list[Memory]) -> None:
    tenant_id, user_id, thread_key = key
    reach = THREAD_BEFORE + THREAD_AFTER
    low, high = rows[0].thread_order or 0, rows[-1].thread_order or 0
    thread = Memory.objects.filter(
        tenant_id=tenant_id, user_id=user_id, thread_key=thread_key
    ).only("id", "content", "thread_order", "thread_context")
    before = list(thread.filter(thread_order__lt=low).order_by("-thread_order")[:reach])
    after = list(thread.filter(thread_order__gt=high).order_by("thread_order")[:reach])
    between = list(thread.filter(thread_order__gte=low, thread_order__lte=high))
    new = {id(row) for row in rows}
    ordered = sorted([*before, *between, *rows, *after], key=lambda row: row.thread_order or 0)
    contents = [row.content for row in ordered]
    positions = [index for index, row in enumerate(ordered) if id(row) in new]
    for index, row in enumerate(ordered):
        window = window_text(contents, index)
        if id(row) in new:
            row.thread_context = window
            continue
        # A stored row's window changes only if it holds a new row; the rows read around
        # the new ones reach far enough to give such a row its whole window.
        holds_new = any(index - THREAD_BEFORE <= p <= index + THREAD_AFTER for p in positions)
        if holds_new and row.thread_context != window:
            Memory.objects.filter(pk=row.pk).update(thread_context=window)
