from __future__ import annotations

from typing import Any

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


def turn_metadata_values(*, session: ChatSession, match: dict[str, Any], key: str) -> list[Any]:
    """The items of list `metadata[key]` across the session's turns whose metadata
    contains `match`: how an importer finds what it already stored (e.g. the span ids
    of an OTLP trace) without a table of its own."""
    values: list[Any] = []
    rows = ChatTurn.objects.filter(session=session, metadata__contains=match).values_list(
        "metadata", flat=True
    )
    for metadata in rows:
        found = (metadata or {}).get(key)
        if isinstance(found, list):
            values.extend(found)
    return values
