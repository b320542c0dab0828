"""Reactions of the short-term window to what sessions_app announces."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memory_app.window.pending import compaction_pending_mark
from memory_app.window.selectors import compaction_due
from sessions_app.selectors.sessions import session_get_by_id

if TYPE_CHECKING:
    from sessions_app.models import ChatSession

logger = logging.getLogger(__name__)


def enqueue_compaction_when_due(
    sender: Any,
    *,
    session_id: Any,
    session: ChatSession | None = None,
    session_turns_follow: bool = False,
    **kwargs: Any,
) -> None:
    """On `turn_recorded` (after commit): enqueue compaction when the recorded turn made
    the open window cross a threshold, unless one is queued already (`pending`). Must
    not raise: the turn is already stored. `turn_record` passes the session it
    committed, which saves reading it again. In a batch, only the session's last turn is
    checked: the window only grows within it."""
    from memory_app.window.tasks import compact_session
    from sessions_app.services.outbox import task_publish

    if session_turns_follow:
        return
    try:
        if session is None:
            session = session_get_by_id(session_id=session_id)
        if compaction_due(session) is not None and compaction_pending_mark(session_id):
            task_publish(compact_session, str(session_id))
    except Exception:  # a broker or DB hiccup must not fail the agent's request
        logger.exception("compaction: could not check or enqueue session %s", session_id)
