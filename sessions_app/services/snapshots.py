"""What a turn can change besides `state`: focus, last results and query, the cart.

An agent changes results, focus and cart *while* it handles a turn and records the turn
at its end, so `turn_record` stores the snapshot as `ChatTurn.context_after`: the workspace
as turn n left it. Rolling back turn n restores the `context_after` of the last live
turn before it, or `EMPTY_WORKSPACE` when n is the first. Fetched items themselves are
kept (they are a cache of what the agent saw); only their positions in "the last
results" are restored.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sessions_app.models import ChatSession, SessionComponent, SessionSelection

EMPTY_WORKSPACE: dict[str, Any] = {
    "focus_mpn": None,
    "last_query": None,
    "last_filters": None,
    "query_history": [],
    "last_results": [],
    "selections": [],
}


def session_workspace_snapshot(
    *, session: ChatSession, cart: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The workspace as the session has it now; `cart` as read with the session's lock
    (`sessions_lock_for_turns`) when the caller has it, else it is read here."""
    if cart is None:
        cart = [
            {"mpn": mpn, "quantity": quantity, "note": note}
            for mpn, quantity, note in SessionSelection.objects.filter(session=session)
            .order_by("position")
            .values_list("mpn", "quantity", "note")
        ]
    return {
        "focus_mpn": session.focus_mpn,
        "last_query": session.last_query,
        "last_filters": session.last_filters,
        "query_history": list(session.query_history or []),
        "last_results": list(session.last_results or []),
        "selections": cart,
    }


@transaction.atomic
def session_workspace_restore(*, session: ChatSession, snapshot: dict[str, Any]) -> None:
    """Put focus, results, query and cart back as `snapshot` has them. The caller saves
    nothing else: this writes the session fields it restores."""
    session.focus_mpn = snapshot.get("focus_mpn")
    session.last_query = snapshot.get("last_query")
    session.last_filters = snapshot.get("last_filters")
    session.query_history = snapshot.get("query_history", [])
    session.last_results = snapshot.get("last_results", [])
    session.save(
        update_fields=[
            "focus_mpn",
            "last_query",
            "last_filters",
            "query_history",
            "last_results",
            "updated_at",
        ]
    )
    SessionComponent.objects.filter(session=session).update(position=None)
    for position, mpn in enumerate(session.last_results, start=1):
        SessionComponent.objects.filter(session=session, mpn=mpn).update(position=position)
    SessionSelection.objects.filter(session=session).delete()
    SessionSelection.objects.bulk_create(
        [
            SessionSelection(
                tenant_id=session.tenant_id,
                session=session,
                mpn=row["mpn"],
                position=position,
                quantity=row.get("quantity", 1),
                note=row.get("note", ""),
            )
            for position, row in enumerate(snapshot.get("selections", []), start=1)
        ]
    )
