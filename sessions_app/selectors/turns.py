from __future__ import annotations

import uuid

from django.db.models import Prefetch, QuerySet

from sessions_app.errors import NotFound
from sessions_app.models import ChatSession, ChatTurn, TurnStep


def turn_list(*, session: ChatSession) -> QuerySet[ChatTurn]:
    """The session's turns, oldest first, steps prefetched in order (two queries a page)."""
    return (
        ChatTurn.objects.filter(session=session)
        .order_by("turn_number")
        .prefetch_related(Prefetch("steps", queryset=TurnStep.objects.order_by("step_order")))
    )


def turn_get(*, session: ChatSession, turn_number: int) -> ChatTurn:
    try:
        return turn_list(session=session).get(turn_number=turn_number)
    except ChatTurn.DoesNotExist as exc:
        raise NotFound(f"Turn {turn_number} not found in this session.") from exc


def turn_by_id(*, turn_id: int) -> ChatTurn | None:
    """One turn by its id, or None (deleted since it was announced)."""
    return ChatTurn.objects.filter(pk=turn_id).first()


def turns_in_range(*, session_id: uuid.UUID, first: int, last: int) -> list[ChatTurn]:
    """The session's turns numbered first..last that were not rolled back, oldest first,
    compacted ones included (compaction flags turns, it does not delete them)."""
    return list(
        ChatTurn.objects.filter(
            session_id=session_id,
            turn_number__gte=first,
            turn_number__lte=last,
            rolled_back=False,
        )
        .order_by("turn_number")
        .only("id", "session_id", "turn_number", "user_message", "assistant_response", "created_at")
    )


def turns_by_number(*, session_id: uuid.UUID, numbers: list[int]) -> dict[int, ChatTurn]:
    """The session's turns with these numbers that were not rolled back, by number."""
    return {
        turn.turn_number: turn
        for turn in ChatTurn.objects.filter(
            session_id=session_id, turn_number__in=numbers, rolled_back=False
        )
    }
