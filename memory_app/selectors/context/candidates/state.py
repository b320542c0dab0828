"""Context candidates from the session's state: its free-form state, the item in focus,
the last results and the cart, each one line of the "state" section."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from memory_app.selectors.context.candidate import Candidate
from memory_app.selectors.context.lines import line
from sessions_app.selectors.workspace import components_by_mpn, selection_list

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, SessionComponent

RESULTS_SHOWN = 10  # the last results listed in their line


def state_candidates(session: ChatSession) -> list[Candidate]:
    """State (signal 0.8), focus (1.0), last results (0.6) and cart (1.0), each offered
    only when the session has it, all as recent as the session's last activity."""
    components = components_by_mpn(
        session=session, mpns=[session.focus_mpn or "", *(session.last_results or [])]
    )
    lines = [
        ("state", 0.8, _state_line(session)),
        ("focus", 1.0, _focus_line(session, components)),
        ("results", 0.6, _results_line(session, components)),
        ("cart", 1.0, _cart_line(session)),
    ]
    return [
        Candidate(kind, kind, "state", line(text), "system", session.last_active_at, signal, (i,))
        for i, (kind, signal, text) in enumerate(lines)
        if text is not None
    ]


def _state_line(session: ChatSession) -> str | None:
    if not session.state:
        return None
    state = json.dumps(session.state, sort_keys=True, separators=(",", ":"), default=str)
    return f"state: {state}"


def _described(mpn: str, components: dict[str, SessionComponent]) -> str:
    component = components.get(mpn)
    return f"{mpn} ({component.name})" if component and component.name else mpn


def _focus_line(session: ChatSession, components: dict[str, SessionComponent]) -> str | None:
    if not session.focus_mpn:
        return None
    component = components.get(session.focus_mpn)
    detail = f" — {component.summary}" if component and component.summary else ""
    return f"focus: {_described(session.focus_mpn, components)}{detail}"


def _results_line(session: ChatSession, components: dict[str, SessionComponent]) -> str | None:
    if not (session.last_results or session.last_query):
        return None
    results = "; ".join(
        f"{i}. {_described(mpn, components)}"
        for i, mpn in enumerate(session.last_results[:RESULTS_SHOWN], 1)
    )
    query = f'for "{session.last_query}"' if session.last_query else ""
    return f"last results {query}: {results or 'none'}"


def _cart_line(session: ChatSession) -> str | None:
    cart = selection_list(session=session)
    if not cart:
        return None
    items = "; ".join(
        f"{row.position}. {row.mpn} x{row.quantity}" + (f" ({row.note})" if row.note else "")
        for row in cart
    )
    return f"cart: {items}"
