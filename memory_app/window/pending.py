"""At most one queued compaction per session.

Without a worker keeping up (a backlog, an outage, a benchmark without one), every turn
of a session past its threshold used to publish another `compact_session`: a broker
message per turn (the costliest part of recording one), and a queue of duplicates that
each lock and re-read the same window. The hook now marks the session in the shared
Valkey (`SET NX` with a lease) and publishes only when the mark is new; the task clears
the mark when it starts, so a turn that makes the window due again after that publishes
again. While the mark is set, the `turn_recorded` hook (which reads it in the round trip
that marks the turn's memory, `memory_app.receivers.on_turn_recorded`) does not even read
the window. A lost message (worker crash, outbox insert failed) holds the session back for at
most ENGRAM_COMPACTION_PENDING_SECONDS. When Valkey itself fails, the hook publishes as
before: a duplicate is harmless, a missed compaction is not. Through memory_app's
process-wide client (`memory_app.valkey`, short timeouts): the cache framework builds a
client per call, which cost a third of the publish this saves.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from memory_app.valkey import valkey

logger = logging.getLogger(__name__)


def compaction_pending_key(session_id: Any) -> str:
    """The Valkey key of the session's mark (the `turn_recorded` hook reads it in the
    same round trip as the turn's memory mark)."""
    return f"engram:compaction-pending:{session_id}"


def compaction_pending_mark(session_id: Any) -> bool:
    """True when no compaction of the session is queued (the caller publishes one)."""
    try:
        return bool(
            valkey().set(
                compaction_pending_key(session_id),
                1,
                nx=True,
                ex=settings.ENGRAM_COMPACTION_PENDING_SECONDS,
            )
        )
    except Exception:  # Valkey is down: publish, as without the mark
        logger.warning("compaction: pending mark unavailable for session %s", session_id)
        return True


def compaction_pending_clear(session_id: Any) -> None:
    """The queued compaction has started: a later due turn may queue the next one."""
    try:
        valkey().delete(compaction_pending_key(session_id))
    except Exception:  # the mark ends with its lease
        logger.warning("compaction: could not clear the pending mark of %s", session_id)
