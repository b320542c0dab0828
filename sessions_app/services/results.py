"""Storing what a search returned: the items in order, the query, its history."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from sessions_app.errors import InvalidInput
from sessions_app.models import ChatSession, SessionComponent, SessionSelection
from sessions_app.services.lifecycle import session_lock_for_write

QUERY_HISTORY_LENGTH = 20


@dataclass(frozen=True)
class ResultItem:
    mpn: str
    name: str = ""
    component_type: str = ""
    summary: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)


@transaction.atomic
def session_results_store(
    *,
    session: ChatSession,
    query: str,
    filters: Mapping[str, Any] | None,
    items: Sequence[ResultItem],
) -> ChatSession:
    """Make `items` the session's last results, positions 1..n in the given order.

    Items are upserted into the fetched items (an item seen again is refreshed, not
    duplicated); items not in this result set keep their data but lose their position,
    so "the first one" always means the first of what the user saw last. The query joins
    `query_history` (last 20) so that "make it cheaper" can refine it. Then the oldest
    fetched items beyond `ENGRAM_MAX_FETCHED_ITEMS` are evicted, except what the cart,
    the focus or these results hold.
    """
    mpns = _distinct_mpns(items)
    session = session_lock_for_write(session=session)
    now = timezone.now()
    _components_upsert(session=session, items=items, now=now)
    history = list(session.query_history or [])
    history.append(
        {
            "query": query,
            "filters": dict(filters or {}),
            "result_count": len(items),
            "at": now.isoformat(),
        }
    )
    session.last_query = query
    session.last_filters = dict(filters or {})
    session.last_results = mpns
    session.query_history = history[-QUERY_HISTORY_LENGTH:]
    session.save(
        update_fields=["last_query", "last_filters", "last_results", "query_history", "updated_at"]
    )
    _evict_old_components(session=session)
    return session


def _distinct_mpns(items: Sequence[ResultItem]) -> list[str]:
    """The items' MPNs in order; InvalidInput naming the first one given twice."""
    mpns = [item.mpn for item in items]
    seen: set[str] = set()
    for index, mpn in enumerate(mpns):
        if mpn in seen:
            raise InvalidInput(
                f"MPN {mpn!r} appears twice in the results.",
                fields={f"items.{index}.mpn": ["Duplicate MPN in this result set."]},
            )
        seen.add(mpn)
    return mpns


def _components_upsert(*, session: ChatSession, items: Sequence[ResultItem], now: datetime) -> None:
    """The items become the fetched items at positions 1..n (one seen before is refreshed);
    the others keep their data but lose their position."""
    SessionComponent.objects.filter(session=session, position__isnull=False).update(position=None)
    SessionComponent.objects.bulk_create(
        [
            SessionComponent(
                tenant_id=session.tenant_id,
                session=session,
                mpn=item.mpn,
                name=item.name,
                component_type=item.component_type,
                summary=item.summary,
                full_data=dict(item.data),
                position=position,
                fetched_at=now,
            )
            for position, item in enumerate(items, start=1)
        ],
        update_conflicts=True,
        unique_fields=["session", "mpn"],
        update_fields=["name", "component_type", "summary", "full_data", "position", "fetched_at"],
    )


def _evict_old_components(*, session: ChatSession) -> int:
    """Keep the newest N fetched items; never evict the cart, the focus or the results."""
    keep = max(int(settings.ENGRAM_MAX_FETCHED_ITEMS), 0)
    protected = set(SessionSelection.objects.filter(session=session).values_list("mpn", flat=True))
    protected.update(session.last_results or [])
    if session.focus_mpn:
        protected.add(session.focus_mpn)
    beyond = (
        SessionComponent.objects.filter(session=session)
        # Newest batch first; within a batch, the order it was shown in (insertion order
        # once positions are gone).
        .order_by("-fetched_at", F("position").asc(nulls_last=True), "id")
        .values_list("id", "mpn")[keep:]
    )
    doomed = [pk for pk, mpn in beyond if mpn not in protected]
    if doomed:
        SessionComponent.objects.filter(pk__in=doomed).delete()
    return len(doomed)
