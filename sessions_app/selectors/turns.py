from __future__ import annotations

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
