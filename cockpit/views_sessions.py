"""The session page: turn log, the context the API would assemble now, cart and focus,
summaries, and why the session was flagged."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse

from analytics_app.pages.charts import column_chart
from analytics_app.pages.layout import operator_render
from analytics_app.pages.views import staff_required
from cockpit.forms import ContextPreviewForm
from cockpit.sessions import budget_use
from memory_app.selectors.audit import memories_of_session, newest_summaries
from memory_app.selectors.context import context_assemble
from memory_app.services.context import MEMORY_KEY_PREFIX
from sessions_app.selectors.sessions import session_for_staff
from sessions_app.selectors.turns import turn_list
from sessions_app.selectors.workspace import component_list, selection_lines

TURNS_PER_PAGE = 30
COMPONENTS_SHOWN = 30


def _past_session_id(key: str) -> uuid.UUID | None:
    """The earlier session a recalled `past:<session>:<turn>` line came from."""
    if not key.startswith("past:"):
        return None
    try:
        return uuid.UUID(key.split(":")[1])
    except (IndexError, ValueError):
        return None


def _memory_id(key: str) -> uuid.UUID | None:
    if not key.startswith(MEMORY_KEY_PREFIX):
        return None
    try:
        return uuid.UUID(key.removeprefix(MEMORY_KEY_PREFIX))
    except ValueError:
        return None


@staff_required
def session_page(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    session = session_for_staff(session_id=session_id)
    if session is None:
        raise Http404("No such session.")
    # Turns by number (unique index on session, turn_number): the newest page by default.
    last = session.last_turn_number
    try:
        upto = min(max(int(request.GET.get("upto", last)), TURNS_PER_PAGE), last)
    except ValueError:
        upto = last
    turns = list(
        turn_list(session=session).filter(
            turn_number__gt=upto - TURNS_PER_PAGE, turn_number__lte=upto
        )
    )
    form = ContextPreviewForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    context_now = context_assemble(
        tenant=session.tenant,
        session_id=session.pk,
        query=data.get("query") or "",
        budget=data.get("budget") or settings.ENGRAM_CONTEXT_DEFAULT_BUDGET,
    )
    for row in [*context_now.included, *context_now.excluded]:
        row["memory_id"] = _memory_id(row["key"])
        row["past_session_id"] = _past_session_id(row["key"])
    cart = selection_lines(session=session)
    context = {
        "session": session,
        "budget": budget_use(session),
        "turns": turns,
        "turns_chart": column_chart(
            [(f"t{t.turn_number}", float(t.cost_usd or 0)) for t in turns],
            title="Cost per turn (USD)",
            unit="$",
        ),
        "earlier": upto - TURNS_PER_PAGE if upto > TURNS_PER_PAGE else None,
        "later": min(upto + TURNS_PER_PAGE, last) if upto < last else None,
        "form": form,
        "context_now": context_now,
        "cart": cart,
        "cart_total": sum((line.line_total or 0 for line in cart), 0),
        "components": list(component_list(session=session)[:COMPONENTS_SHOWN]),
        "summaries": newest_summaries(session_ids=[session.pk], limit=20),
        "memories": memories_of_session(
            tenant_id=session.tenant_id, session_id=session.pk, limit=30
        ),
        "runaway_detail": sorted((session.runaway_detail or {}).items()),
    }
    return operator_render(request, "cockpit/session.html", context)
