"""Session rotation (seed 002, "long session summarisation").

A long session grows the cost of resuming it. Once its tokens pass a threshold, the next
turn is recorded in a successor session instead: same user and agent, linked by
`previous_session`, carrying the external session id, state, metadata, focus, results,
fetched items and cart;
the old session is archived (its turns stay for audit). The successor's context reaches
back through the link to the predecessor's summaries, milestones and open turns (see
`memory_app.selectors.context`), so what was said before is still found.

The threshold is the session's `rotate_after_tokens`, else the agent's entry in
ENGRAM_ROTATE_AFTER_TOKENS_BY_AGENT, else ENGRAM_ROTATE_AFTER_TOKENS; 0 or none is off.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import TypeVar

from django.conf import settings

from sessions_app.hooks import announce_sessions_ended
from sessions_app.models import ChatSession, SessionComponent, SessionStatus
from sessions_app.services.snapshots import session_workspace_restore, session_workspace_snapshot

N = TypeVar("N", int, Decimal)


def rotation_threshold(session: ChatSession) -> int | None:
    """Tokens after which the session rotates, or None when it never does."""
    if session.rotate_after_tokens is not None:
        threshold = session.rotate_after_tokens
    else:
        by_agent: dict[str, int] = settings.ENGRAM_ROTATE_AFTER_TOKENS_BY_AGENT
        threshold = by_agent.get(session.agent_id.lower(), settings.ENGRAM_ROTATE_AFTER_TOKENS)
    return threshold or None


def rotation_due(session: ChatSession) -> bool:
    threshold = rotation_threshold(session)
    return threshold is not None and session.total_tokens >= threshold


def _remaining(budget: N | None, spent: N) -> N | None:
    """What is left of a budget, never below zero: the successor continues the same
    conversation, so it must not get a fresh allowance."""
    if budget is None:
        return None
    left = budget - spent
    return left if left > 0 else budget - budget


def session_rotate(*, session: ChatSession, now: datetime) -> ChatSession:
    """Open the successor of `session` (locked by the caller, inside its transaction) and
    archive `session`. Returns the successor. The predecessor is archived first: only one
    live session may hold the conversation's external id."""
    session.status = SessionStatus.ARCHIVED
    session.save(update_fields=["status", "updated_at"])
    successor = ChatSession.objects.create(
        tenant_id=session.tenant_id,
        user_id=session.user_id,
        agent_id=session.agent_id,
        # The same conversation under the caller's id: resume by identity
        # (`session_resume_or_create`) skips the archived predecessor and finds this one.
        external_session_id=session.external_session_id,
        state=session.state,
        metadata=session.metadata,
        provider=session.provider,
        model=session.model,
        previous_session=session,
        budget_tokens=_remaining(session.budget_tokens, session.total_tokens),
        budget_usd=_remaining(session.budget_usd, session.total_cost_usd),
        compact_max_turns=session.compact_max_turns,
        compact_max_tokens=session.compact_max_tokens,
        compact_keep_last_turns=session.compact_keep_last_turns,
        compact_context_share=session.compact_context_share,
        rotate_after_tokens=session.rotate_after_tokens,
        context_policy=session.context_policy,
        capture_prompts=session.capture_prompts,
        ttl_seconds=session.ttl_seconds,
        expires_at=now + timedelta(seconds=session.ttl_seconds),
        last_active_at=now,
    )
    SessionComponent.objects.bulk_create(
        [
            SessionComponent(
                tenant_id=successor.tenant_id,
                session=successor,
                mpn=item.mpn,
                component_type=item.component_type,
                name=item.name,
                summary=item.summary,
                full_data=item.full_data,
                fetched_at=item.fetched_at,
            )
            for item in SessionComponent.objects.filter(session=session)
        ]
    )
    session_workspace_restore(
        session=successor, snapshot=session_workspace_snapshot(session=session)
    )
    announce_sessions_ended(tenant_id=session.tenant_id, session_ids=[session.pk], reason="rotated")
    return successor
