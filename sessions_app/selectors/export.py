"""Everything the tenant holds about one user, as one JSON-ready document: the
counterpart of erasure (`DELETE /users/{id}`), for access requests and portability.

sessions_app exports what it owns (sessions with their turns and steps, fetched items,
carts); the other apps add theirs through `sessions_app.hooks.register_user_exporter`,
so this module imports no other local app. A read: nothing is written, not even access
statistics.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.utils import timezone

from sessions_app.hooks import user_export_sections
from sessions_app.models import (
    ChatSession,
    ChatTurn,
    SessionComponent,
    SessionSelection,
    Tenant,
    TurnStep,
)

EXPORT_FORMAT = "engram.user-export.v1"
SESSION_EXCLUDED = {"tenant"}  # the tenant is the caller itself


def _rows_by_session(model: Any, session_ids: list[Any], order: list[str]) -> dict[Any, list]:
    grouped: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in model.objects.filter(session_id__in=session_ids).order_by(*order).values():
        row.pop("tenant_id", None)
        grouped[row["session_id"]].append(row)
    return grouped


def user_export(*, tenant: Tenant, user_id: str) -> dict[str, Any]:
    """The user's sessions (with turns, steps, fetched items and cart) and every other
    app's sections. Steps are nested in their turns, turns in their sessions."""
    sessions: list[dict[str, Any]] = [
        dict(row)
        for row in ChatSession.objects.filter(tenant=tenant, user_id=user_id)
        .order_by("created_at")
        .values()
    ]
    session_ids = [row["id"] for row in sessions]
    steps_by_turn: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in (
        TurnStep.objects.filter(session_id__in=session_ids)
        .order_by("turn_id", "step_order")
        .values()
    ):
        step: dict[str, Any] = dict(row)
        for name in ("tenant_id", "session_id", "user_id"):
            step.pop(name, None)
        steps_by_turn[step["turn_id"]].append(step)
    turns = _rows_by_session(ChatTurn, session_ids, ["session_id", "turn_number"])
    components = _rows_by_session(SessionComponent, session_ids, ["session_id", "mpn"])
    selections = _rows_by_session(SessionSelection, session_ids, ["session_id", "position"])
    for session in sessions:
        session.pop("tenant_id", None)
        session_turns = turns.get(session["id"], [])
        for turn in session_turns:
            turn["steps"] = steps_by_turn.get(turn["id"], [])
        session["turns"] = session_turns
        session["components"] = components.get(session["id"], [])
        session["selections"] = selections.get(session["id"], [])
    return {
        "format": EXPORT_FORMAT,
        "user_id": user_id,
        "exported_at": timezone.now(),
        "sessions": sessions,
        **user_export_sections(tenant.pk, user_id),
    }
