"""memory_app's receivers of sessions_app's hooks (connected in `apps.py`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memory_app.window.pending import compaction_pending_key
from memory_app.window.receivers import enqueue_compaction_when_due

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, ChatTurn


logger = logging.getLogger(__name__)


def on_turn_recorded(
    sender: Any,
    *,
    turn_id: int,
    turn: ChatTurn | None = None,
    session_id: Any = None,
    session: ChatSession | None = None,
    session_turns_follow: bool = False,
    **kwargs: Any,
) -> None:
    """memory_app's reactions to a recorded turn: its memory (`remember_turn_marked`) and
    the session's compaction (`enqueue_compaction_when_due`). The Valkey round trip that
    marks the turn also reads whether the session's compaction is queued already; when it
    is, the compaction check is skipped: it would only find the mark set and publish
    nothing, after a query of the window and a round trip of its own. In a batch, only
    at the session's last turn (which covers those before it). Never raising."""
    if session_turns_follow:
        return
    if not remember_turn_marked(turn_id=turn_id, turn=turn, session_id=session_id):
        enqueue_compaction_when_due(sender, session_id=session_id, session=session)


def remember_turn_marked(*, turn_id: int, turn: ChatTurn | None, session_id: Any) -> bool:
    """Mark the session's new turns as waiting to become the user's memories (and to
    be read by extraction after that): one Valkey round trip; a drain task is published
    only when none is due (`memory_app.services.turn_queue`). When Valkey does not take
    the mark, the session's task is published instead. Answers whether the same round
    trip found the session's compaction queued. Never raising: a broker outage or stall
    keeps the task in the outbox, never delays the response."""
    from memory_app.services.turn_queue import turns_mark
    from memory_app.tasks import remember_session_turns, remember_turn
    from sessions_app.services.outbox import task_publish

    try:
        if turn is None or session_id is None:  # a sender that names only the turn
            task_publish(remember_turn, turn_id)
            return False
        marked = turns_mark(
            marks=[(session_id, turn.turn_number)], exists=compaction_pending_key(session_id)
        )
        if not marked.taken:
            task_publish(remember_session_turns, str(session_id), turn.turn_number)
        return marked.key_exists
    except Exception:  # the turn is stored; the next turn's task remembers it too
        logger.exception("could not enqueue remembering turn %s", turn_id)
        return False


def on_turns_withdrawn(
    sender: Any, *, tenant_id: int, session_ids: Any, turn_numbers: Any = None, **kwargs: Any
) -> None:
    """Inside the transaction that rolls turns back or deletes sessions: their memories
    go with them. Raising rolls that transaction back."""
    from memory_app.services.conversation import conversation_forget

    conversation_forget(tenant_id=tenant_id, session_ids=session_ids, turn_numbers=turn_numbers)


def on_sessions_ended(sender: Any, *, session_ids: Any, **kwargs: Any) -> None:
    """Each session that stopped taking turns gets its episode; enqueued, never raising."""
    from memory_app.tasks import write_session_episode
    from sessions_app.services.outbox import task_publish

    for session_id in session_ids:
        try:
            task_publish(write_session_episode, str(session_id))
        except Exception:  # the session is stored; its episode can be written later
            logger.exception("could not enqueue the episode of session %s", session_id)


def on_span_compacted(sender: Any, *, summary_id: int, **kwargs: Any) -> None:
    """A compacted span becomes an episodic memory; enqueued, never raising."""
    from memory_app.tasks import extract_memories_from_span
    from sessions_app.services.outbox import task_publish

    try:
        task_publish(extract_memories_from_span, summary_id)
    except Exception:  # the summary is stored; its memory can be made again later
        logger.exception("could not enqueue memory extraction for summary %s", summary_id)


def on_demo_loaded(sender: Any, *, tenant: Any, **kwargs: Any) -> None:
    from memory_app.services.demo import demo_memories_load

    demo_memories_load(tenant=tenant)


def on_user_erased(
    sender: Any, *, tenant_id: int, user_id: str, session_ids: Any = (), **kwargs: Any
) -> dict[str, int]:
    """Inside sessions_app's erasure transaction: the user's memories go with their
    sessions; the counts join the erasure's answer. Raising rolls the erasure back."""
    from memory_app.services.erasure import memories_erase_user

    return memories_erase_user(tenant_id=tenant_id, user_id=user_id, session_ids=session_ids)
