"""Context candidates from the session's state: its free-form state, the item in focus,
the last results and the cart, each one line of the "state" section.

Asked in the past (`said_by`, `candidates.said`), the lines show the version in force
then (`sessions_app.selectors.state_history`). What has no version then is not shown as
it is today but listed as `undated`, which the context reports as left out with reason
`no_history`: the workspace lines (focus, results, cart) when no turn said by then left
a snapshot of them, and the details (name, summary) of items fetched after then, which
are kept only as last fetched; those items are named by their MPN alone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_app.selectors.context.candidate import Candidate
from memory_app.selectors.context.lines import line
from sessions_app.selectors.state_history import session_version_at
from sessions_app.selectors.workspace import components_by_mpn, selection_list

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, SessionComponent

RESULTS_SHOWN = 10  # the last results listed in their line
ITEM_DETAILS = "item_details"  # the kind of the undated details of later-fetched items


@dataclass(frozen=True)
class _Shown:
    """What the lines show: the free-form state, focus, last query and results, and the
    cart as (mpn, quantity, note) in cart order."""

    state: dict[str, Any]
    focus_mpn: str | None
    last_query: str | None
    last_results: list[str]
    cart: list[tuple[str, int, str]]

    def mpns(self) -> list[str]:
        return [self.focus_mpn or "", *self.last_results]


@dataclass
class StateCandidates:
    """The state lines offered, and those `undated`: today's, which no version dates
    back to the moment asked (left out, reason `no_history`)."""

    offered: list[Candidate] = field(default_factory=list)
    undated: list[Candidate] = field(default_factory=list)


def state_candidates(session: ChatSession, said_by: datetime | None = None) -> StateCandidates:
    """State (signal 0.8), focus (1.0), last results (0.6) and cart (1.0), each offered
    only when the session has it, all as recent as the session's last activity; asked in
    the past (`said_by`), as they stood then."""
    if said_by is not None:
        return _state_then(session, said_by)
    shown = _current(session)
    components = components_by_mpn(session=session, mpns=shown.mpns())
    return StateCandidates(offered=_lines(shown, components, session.last_active_at))


def _current(session: ChatSession) -> _Shown:
    return _Shown(
        state=session.state or {},
        focus_mpn=session.focus_mpn,
        last_query=session.last_query,
        last_results=list(session.last_results or []),
        cart=[(row.mpn, row.quantity, row.note) for row in selection_list(session=session)],
    )


def _state_then(session: ChatSession, moment: datetime) -> StateCandidates:
    version = session_version_at(session=session, moment=moment)
    at = version.since or moment
    if version.workspace is None:
        today = _current(session)
        components = components_by_mpn(session=session, mpns=today.mpns())
        then = _Shown(version.state, None, None, [], [])
        undated = [c for c in _lines(today, components, session.last_active_at) if c.key != "state"]
        return StateCandidates(offered=_lines(then, {}, at), undated=undated)
    workspace = version.workspace
    then = _Shown(
        state=version.state,
        focus_mpn=workspace.get("focus_mpn"),
        last_query=workspace.get("last_query"),
        last_results=list(workspace.get("last_results") or []),
        cart=[
            (row["mpn"], row.get("quantity", 1), row.get("note", ""))
            for row in workspace.get("selections") or []
        ],
    )
    components = components_by_mpn(session=session, mpns=then.mpns())
    known = {mpn: c for mpn, c in components.items() if c.fetched_at <= moment}
    later = [c for mpn, c in components.items() if mpn not in known]
    out = StateCandidates(offered=_lines(then, known, at))
    if later:
        text = "; ".join(f"{c.mpn}: {c.name} — {c.summary}" for c in later)
        out.undated.append(
            Candidate(ITEM_DETAILS, ITEM_DETAILS, "state", line(text), "system", None, 0.0)
        )
    return out


def _lines(
    shown: _Shown, components: dict[str, SessionComponent], at: datetime | None
) -> list[Candidate]:
    lines = [
        ("state", 0.8, _state_line(shown)),
        ("focus", 1.0, _focus_line(shown, components)),
        ("results", 0.6, _results_line(shown, components)),
        ("cart", 1.0, _cart_line(shown)),
    ]
    return [
        Candidate(kind, kind, "state", line(text), "system", at, signal, (i,))
        for i, (kind, signal, text) in enumerate(lines)
        if text is not None
    ]


def _state_line(shown: _Shown) -> str | None:
    if not shown.state:
        return None
    state = json.dumps(shown.state, sort_keys=True, separators=(",", ":"), default=str)
    return f"state: {state}"


def _described(mpn: str, components: dict[str, SessionComponent]) -> str:
    component = components.get(mpn)
    return f"{mpn} ({component.name})" if component and component.name else mpn


def _focus_line(shown: _Shown, components: dict[str, SessionComponent]) -> str | None:
    if not shown.focus_mpn:
        return None
    component = components.get(shown.focus_mpn)
    detail = f" — {component.summary}" if component and component.summary else ""
    return f"focus: {_described(shown.focus_mpn, components)}{detail}"


def _results_line(shown: _Shown, components: dict[str, SessionComponent]) -> str | None:
    if not (shown.last_results or shown.last_query):
        return None
    results = "; ".join(
        f"{i}. {_described(mpn, components)}"
        for i, mpn in enumerate(shown.last_results[:RESULTS_SHOWN], 1)
    )
    query = f'for "{shown.last_query}"' if shown.last_query else ""
    return f"last results {query}: {results or 'none'}"


def _cart_line(shown: _Shown) -> str | None:
    if not shown.cart:
        return None
    items = "; ".join(
        f"{position}. {mpn} x{quantity}" + (f" ({note})" if note else "")
        for position, (mpn, quantity, note) in enumerate(shown.cart, 1)
    )
    return f"cart: {items}"
