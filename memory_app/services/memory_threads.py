"""Memories in threads (a conversation's turns, a backfill of a thread): the thread a
draft belongs to, its place in it, and the lexical window (`thread_context`) of each row,
kept right when a memory is added, merged, edited or deleted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_app.models import Memory
from memory_app.selectors.thread_window import THREAD_AFTER, THREAD_BEFORE
from memory_app.services.thread_writes import window_text

if TYPE_CHECKING:
    from memory_app.services.memory_drafts import MemoryDraft
    from sessions_app.models import Tenant


def thread_key_of(draft: MemoryDraft) -> str:
    """The thread a draft belongs to: its explicit key, else the session it came from when
    it gives its place in it; blank for a free-standing memory."""
    if draft.thread_key:
        return draft.thread_key
    if draft.session_id is not None and draft.thread_order is not None:
        return f"session:{draft.session_id}"
    return ""


def thread_order_next(
    tenant: Tenant, user_id: str, thread_key: str, order: int | None
) -> int | None:
    """The given order, or (for a thread without one) after the thread's last memory:
    the order of the adds."""
    if not thread_key or order is not None:
        return order
    last = (
        Memory.objects.filter(tenant=tenant, user_id=user_id, thread_key=thread_key)
        .order_by("-thread_order")
        .values_list("thread_order", flat=True)
        .first()
    )
    return 0 if last is None else last + 1


@dataclass(frozen=True)
class ThreadNeighbours:
    """A memory with the memories around it in its thread, in thread order: as many
    before and after it as can share a window with it (`thread_neighbours`)."""

    rows: list[Memory]
    here: int  # the memory's index in `rows`


def thread_neighbours(memory: Memory) -> ThreadNeighbours | None:
    """`memory` (saved or not yet) among its thread's neighbours; None outside a thread."""
    if not memory.thread_key or memory.thread_order is None:
        return None
    thread = Memory.objects.filter(
        tenant_id=memory.tenant_id, user_id=memory.user_id, thread_key=memory.thread_key
    ).only("id", "content", "thread_order", "thread_context")
    reach = THREAD_BEFORE + THREAD_AFTER
    before = list(
        thread.filter(thread_order__lt=memory.thread_order).order_by("-thread_order")[:reach]
    )
    after = list(
        thread.filter(thread_order__gt=memory.thread_order).order_by("thread_order")[:reach]
    )
    return ThreadNeighbours([*reversed(before), memory, *after], len(before))


def thread_windows(neighbours: ThreadNeighbours) -> list[tuple[Memory, str]]:
    """The window text of every row whose window holds the memory, in thread order: the
    THREAD_AFTER rows before it, itself, and the THREAD_BEFORE after it."""
    rows, here = neighbours.rows, neighbours.here
    contents = [row.content for row in rows]
    return [
        (rows[index], window_text(contents, index))
        for index in range(max(0, here - THREAD_AFTER), min(len(rows), here + THREAD_BEFORE + 1))
    ]


def refresh_thread_window(memory: Memory, neighbours: ThreadNeighbours | None = None) -> int:
    """Rewrite `thread_context` (what the lexical side indexes) of `memory` and of the
    neighbours whose window it falls in: the THREAD_AFTER memories before it and the
    THREAD_BEFORE after it. Turns that are answered or explained by the next line ("Did
    you go?" / "Yes, last Friday") are found by the words of either. The BM25 statistics
    follow through the trigger on `memory`. A row whose window is already right is not
    written. `neighbours`: `thread_neighbours(memory)`, when the caller has read them.
    Returns how many rows changed."""
    neighbours = neighbours or thread_neighbours(memory)
    if neighbours is None:
        return 0
    changed = 0
    for row, text in thread_windows(neighbours):
        if row.thread_context != text:
            changed += Memory.objects.filter(pk=row.pk).update(thread_context=text)
            row.thread_context = text
    return changed
