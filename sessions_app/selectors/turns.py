"""Reads of the turn log: turns and their steps, for the API and for the other apps
(the short-term window, extraction, context assembly, spend reports), which read the
log through these rather than through the models."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Max, Min, Prefetch, QuerySet

from sessions_app.errors import NotFound
from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnStep


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


def turn_get_by_id(*, turn_id: int) -> ChatTurn | None:
    """A turn with its session and tenant loaded, or None when it is gone (a task may run
    after its session was deleted)."""
    return ChatTurn.objects.select_related("session", "tenant").filter(pk=turn_id).first()


def turn_ids_live(*, turn_ids: Sequence[int]) -> set[int]:
    """Which of these turns still exist and were not rolled back."""
    return set(
        ChatTurn.objects.filter(pk__in=list(turn_ids), rolled_back=False).values_list(
            "pk", flat=True
        )
    )


def turns_live(*, session_id: Any) -> QuerySet[ChatTurn]:
    """The session's turns that were not rolled back, in no particular order."""
    return ChatTurn.objects.filter(session_id=session_id, rolled_back=False)


def turns_open(*, session_id: Any) -> QuerySet[ChatTurn]:
    """The session's open window: turns neither compacted (summarised) nor rolled back."""
    return turns_live(session_id=session_id).filter(compacted=False)


# Fixed SQL: the `turn_recorded` hook asks after every turn, and compiling the same
# queryset each time cost six times its execution.
_OPEN_TEXTS_SQL = """
SELECT user_message, assistant_response FROM chat_turn
 WHERE session_id = %s AND NOT rolled_back AND NOT compacted
 ORDER BY turn_number DESC LIMIT %s
"""


def turns_open_texts(*, session_id: Any, limit: int) -> list[tuple[str, str]]:
    """The user message and answer of the newest `limit` turns of the open window
    (`turns_open`), newest first."""
    with connection.cursor() as cursor:
        cursor.execute(_OPEN_TEXTS_SQL, [session_id, limit])
        return [(user, assistant) for user, assistant in cursor.fetchall()]


def turn_times(*, session_id: Any, compacted: bool) -> dict[int, datetime]:
    """When each (compacted or open) turn of the session was recorded, by turn number."""
    return dict(
        ChatTurn.objects.filter(session_id=session_id, compacted=compacted).values_list(
            "turn_number", "created_at"
        )
    )


def turns_last_occurred(*, session_id: Any, first: int, last: int) -> datetime | None:
    """When the latest of the session's live turns `first..last` happened
    (`occurred_at`); None when all were rolled back."""
    return ChatTurn.objects.filter(
        session_id=session_id, turn_number__range=(first, last), rolled_back=False
    ).aggregate(end=Max("occurred_at"))["end"]


def turn_first_after(*, session_id: Any, moment: datetime) -> int | None:
    """The number of the session's first live turn that happened (`occurred_at`) after
    `moment`, or None when every live turn had happened by then."""
    return (
        turns_live(session_id=session_id)
        .filter(occurred_at__gt=moment)
        .aggregate(first=Min("turn_number"))["first"]
    )


def turn_workspace_before(*, session_id: Any, turn_number: int) -> dict[str, Any] | None:
    """The workspace snapshot (`context_after`) left by the newest turn before
    `turn_number`, or None when there is none."""
    return (
        ChatTurn.objects.filter(session_id=session_id, turn_number__lt=turn_number)
        .order_by("-turn_number")
        .values_list("context_after", flat=True)
        .first()
    )


def steps_failed_recent(
    *, session_id: Any, limit: int, said_by: datetime | None = None
) -> list[TurnStep]:
    """The session's latest failed steps of live turns, newest first, turn loaded; with
    `said_by`, only those of turns that had happened (`occurred_at`) by then."""
    steps = TurnStep.objects.filter(session_id=session_id, success=False, turn__rolled_back=False)
    if said_by is not None:
        steps = steps.filter(turn__occurred_at__lte=said_by)
    return list(steps.select_related("turn").order_by("-created_at", "-id")[:limit])


def step_list(*, tenant: Tenant, start: datetime, end: datetime) -> QuerySet[TurnStep]:
    """The tenant's steps recorded in [start, end), for spend reports."""
    return TurnStep.objects.filter(tenant=tenant, created_at__gte=start, created_at__lt=end)


def steps_after(
    *, after_id: int, start: datetime, end: datetime, tenant_id: int | None = None
) -> QuerySet[TurnStep]:
    """Steps with an id above `after_id` recorded in [start, end): what a rollup has not
    counted yet."""
    steps = TurnStep.objects.filter(id__gt=after_id, created_at__gte=start, created_at__lt=end)
    return steps.filter(tenant_id=tenant_id) if tenant_id else steps


def step_newest_id() -> int:
    """The id of the newest step (0 when there is none): how far the log has grown."""
    return int(TurnStep.objects.aggregate(step=Max("id"))["step"] or 0)


def steps_of_sessions(*, session_ids: Sequence[Any]) -> QuerySet[TurnStep]:
    """The steps of these sessions (index `step_session_created`): per-user breakdowns
    that the rollups do not key by user read only that user's sessions."""
    return TurnStep.objects.filter(session_id__in=list(session_ids))


def steps_with_tool_output(
    *, session_id: Any, limit: int, said_by: datetime | None = None
) -> list[TurnStep]:
    """The session's newest steps that carry a `tool_output`, live turns only; with
    `said_by`, only those of turns that had happened (`occurred_at`) by then."""
    steps = TurnStep.objects.filter(session_id=session_id, turn__rolled_back=False)
    if said_by is not None:
        steps = steps.filter(turn__occurred_at__lte=said_by)
    return list(
        steps.exclude(tool_output="").select_related("turn").order_by("-created_at", "-id")[:limit]
    )


def turns_by_number(*, session_id: uuid.UUID, numbers: list[int]) -> dict[int, ChatTurn]:
    """The session's turns with these numbers that were not rolled back (compacted ones
    included: compaction flags turns, it does not delete them), by number."""
    return {
        turn.turn_number: turn
        for turn in ChatTurn.objects.filter(
            session_id=session_id, turn_number__in=numbers, rolled_back=False
        )
    }


def turn_ids_by_number(*, session_id: Any, first: int, last: int) -> dict[int, int]:
    """Turn id by number for the session's live turns numbered first..last: a cheap
    look at a range (ids only) before reading the turns that need work."""
    return dict(
        ChatTurn.objects.filter(
            session_id=session_id,
            turn_number__gte=first,
            turn_number__lte=last,
            rolled_back=False,
        ).values_list("turn_number", "pk")
    )


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


# Fixed SQL, one statement for any number of sessions: the memory writer asks it for every
# batch of turns it drains, across all the sessions that recorded one.
_LIVE_IN_RANGES_SQL = """
SELECT t.session_id, t.turn_number, t.id FROM chat_turn t
  JOIN unnest(%s::uuid[], %s::int[], %s::int[]) AS r(session_id, first, last)
    ON t.session_id = r.session_id AND t.turn_number BETWEEN r.first AND r.last
 WHERE NOT t.rolled_back
"""


def turn_ids_in_ranges(
    *, ranges: dict[uuid.UUID, tuple[int, int]]
) -> dict[tuple[uuid.UUID, int], int]:
    """Turn id by (session, number) for the live turns of several sessions, each in its
    range of numbers (first..last): `turn_ids_by_number` for many sessions at once."""
    if not ranges:
        return {}
    sessions = list(ranges)
    with connection.cursor() as cursor:
        cursor.execute(
            _LIVE_IN_RANGES_SQL,
            [sessions, [ranges[s][0] for s in sessions], [ranges[s][1] for s in sessions]],
        )
        return {(session, number): pk for session, number, pk in cursor.fetchall()}


# Fixed SQL, one statement for any number of turns: a context asks it once for the turns
# its recall found, to tell the user's words from the reply's in each turn's memory.
_USER_MESSAGE_LENGTHS_SQL = """
SELECT t.session_id, t.turn_number,
       CASE WHEN t.user_message ~ '^[[:space:]]*$' THEN 0 ELSE char_length(t.user_message) END
  FROM chat_turn t
  JOIN unnest(%s::uuid[], %s::int[]) AS k(session_id, turn_number)
    ON t.session_id = k.session_id AND t.turn_number = k.turn_number
 WHERE NOT t.rolled_back
"""


def user_message_lengths(
    *, turns: Sequence[tuple[uuid.UUID, int]]
) -> dict[tuple[uuid.UUID, int], int]:
    """By (session, turn number), the characters of each live turn's user message, 0 for
    one without text: where the user's words end in a text that starts with them."""
    if not turns:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            _USER_MESSAGE_LENGTHS_SQL,
            [[session for session, _ in turns], [number for _, number in turns]],
        )
        return {(session, number): length for session, number, length in cursor.fetchall()}


def turns_for_memory(*, turn_ids: Sequence[int]) -> list[ChatTurn]:
    """These turns with what a memory of each needs (texts, time, the session's owner),
    in no particular order."""
    return list(
        ChatTurn.objects.filter(pk__in=list(turn_ids))
        .select_related("session")
        .only(
            "id",
            "session_id",
            "turn_number",
            "user_message",
            "assistant_response",
            "occurred_at",
            "session__tenant_id",
            "session__user_id",
            "session__agent_id",
        )
    )
