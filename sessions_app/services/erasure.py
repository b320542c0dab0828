"""Erasing a user: everything the tenant holds about them, in every app, at once.

sessions_app owns this use case because it owns the sessions: it deletes the user's
sessions (turns, components and selections cascade with them), the
idempotency records of requests on those sessions, and the spend budgets keyed by the
user's id (scope `user` and `user_agent`, with their spend rows: a budget naming a
person is data about them), then sends `user_erased` inside the same
transaction, so every other app deletes what it holds about the user (memories, spend
rollups…) atomically with ours, or the whole erasure rolls back.

The user's steps stay, as anonymous spend: the calls were made and paid for, so every
spend report keeps counting them, whatever it groups by. They lose all that ties them to
the user or holds what was said: user id (`ERASED_USER_ID`), session, turn, error,
the provider's usage object, prompt, completion and tool output. Model, agent, step type,
counts, cost, success and time stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q

from sessions_app.hooks import ERASED_USER_ID, user_erased
from sessions_app.models import (
    ChatSession,
    ChatTurn,
    IdempotencyRecord,
    SessionComponent,
    SessionSelection,
    SpendBudget,
    Tenant,
    TurnStep,
)


@dataclass(frozen=True)
class UserErasure:
    """What an erasure did, per kind of row: `deleted` rows are gone (ours and those the
    `user_erased` receivers answer with); `anonymised` rows stay without what tied them
    to the user (the steps, kept as spend)."""

    deleted: dict[str, int]
    anonymised: dict[str, int]


@transaction.atomic
def user_erase(*, tenant: Tenant, user_id: str) -> UserErasure:
    """Delete all the tenant's data about `user_id` and anonymise their steps; answers
    the row counts of each."""
    sessions = ChatSession.objects.filter(tenant=tenant, user_id=user_id)
    session_ids = list(sessions.values_list("pk", flat=True))
    counts: dict[str, int] = {
        "sessions": len(session_ids),
        "turns": ChatTurn.objects.filter(session_id__in=session_ids).count(),
        "components": SessionComponent.objects.filter(session_id__in=session_ids).count(),
        "selections": SessionSelection.objects.filter(session_id__in=session_ids).count(),
    }
    idempotency = IdempotencyRecord.objects.filter(tenant=tenant, session_id__in=session_ids)
    counts["idempotency_records"] = idempotency.delete()[0]
    steps = _steps_anonymise(tenant=tenant, user_id=user_id, session_ids=session_ids)
    sessions.delete()
    _, by_model = SpendBudget.objects.filter(tenant=tenant, user_id=user_id).delete()
    counts["budgets"] = by_model.get(SpendBudget._meta.label, 0)
    responses: list[tuple[Any, Any]] = user_erased.send(
        sender=Tenant, tenant_id=tenant.pk, user_id=user_id, session_ids=session_ids
    )
    for _receiver, answer in responses:
        if isinstance(answer, dict):
            counts.update(answer)
    return UserErasure(deleted=counts, anonymised={"steps": steps})


def _steps_anonymise(*, tenant: Tenant, user_id: str, session_ids: list[Any]) -> int:
    """The user's steps (by session, and any carrying the user's id elsewhere) keep their
    spend and lose the rest; unlinked from the session, they survive its deletion.
    Answers how many."""
    return TurnStep.objects.filter(
        Q(session_id__in=session_ids) | Q(tenant=tenant, user_id=user_id)
    ).update(
        user_id=ERASED_USER_ID,
        session=None,
        turn=None,
        error=None,
        usage_raw=None,
        prompt=None,
        completion="",
        tool_output="",
    )
