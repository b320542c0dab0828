from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from sessions_app.errors import Conflict, InvalidInput
from sessions_app.hooks import announce_sessions_ended, turns_withdrawn
from sessions_app.locks import advisory_xact_lock
from sessions_app.models import ChatSession, SessionStatus, Tenant, TurnKind
from sessions_app.selectors.context_policies import context_policy_exists, context_policy_names
from sessions_app.selectors.session_state import state_precondition_check
from sessions_app.selectors.session_status import LIVE_STATUSES
from sessions_app.selectors.sessions import session_ensure_writable, session_find_resumable
from sessions_app.services.lifecycle import session_touch
from sessions_app.services.session_locks import session_lock_for_turn
from sessions_app.services.turn_recording import turn_record

UNSET: Any = object()
LIVE_EXTERNAL_ID_CONSTRAINT = "session_live_external_id_unique"


@transaction.atomic
def session_create(
    *,
    tenant: Tenant,
    user_id: str,
    agent_id: str,
    state: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    ttl_seconds: int | None = None,
    budget_tokens: int | None = None,
    budget_usd: Decimal | None = None,
    external_session_id: str | None = None,
    provider: str = "",
    model: str = "",
    compact_context_share: float | None = None,
    rotate_after_tokens: int | None = None,
    context_policy: str = "default",
    capture_prompts: bool | None = None,
) -> ChatSession:
    """A new session; budgets default to the tenant's, the TTL to the provider's default
    (see `default_ttl_seconds`). With `external_session_id`, Conflict (409) while the
    user and agent have a live session of that id: resume it instead."""
    now = timezone.now()
    _check_policy(tenant_id=tenant.pk, name=context_policy)
    if external_session_id is not None:
        _claim_external_id(
            tenant=tenant, user_id=user_id, agent_id=agent_id,
            external_session_id=external_session_id, now=now,
        )  # fmt: skip
    provider = provider.strip().lower()
    ttl = ttl_seconds or default_ttl_seconds(provider)
    return _insert_session(
        tenant=tenant,
        user_id=user_id,
        agent_id=agent_id,
        state=state or {},
        metadata=metadata or {},
        ttl_seconds=ttl,
        expires_at=now + timedelta(seconds=ttl),
        last_active_at=now,
        budget_tokens=budget_tokens if budget_tokens is not None else tenant.default_budget_tokens,
        budget_usd=budget_usd if budget_usd is not None else tenant.default_budget_usd,
        external_session_id=external_session_id,
        provider=provider,
        model=model,
        compact_context_share=compact_context_share,
        rotate_after_tokens=rotate_after_tokens,
        context_policy=context_policy,
        capture_prompts=capture_prompts,
    )


def _external_id_taken(*, external_session_id: str, session_id: Any) -> Conflict:
    return Conflict(
        f"A live session with external_session_id {external_session_id!r} exists for this "
        f"user and agent ({session_id}): resume it with `resume: true`, or end it first.",
        fields={"external_session_id": ["A live session already has this id; use resume."]},
        extra={"session_id": str(session_id)},
    )


def _claim_external_id(
    *, tenant: Tenant, user_id: str, agent_id: str, external_session_id: str, now: Any
) -> None:
    """Under the identity's lock: a session of the id past its expiry that the sweep has
    not marked yet is marked expired now (it takes no writes either way), so only a
    session that could still be resumed blocks the id."""
    _identity_lock(
        tenant=tenant, user_id=user_id, agent_id=agent_id, external_session_id=external_session_id
    )
    same_id = ChatSession.objects.filter(
        tenant=tenant, user_id=user_id, agent_id=agent_id,
        external_session_id=external_session_id, status__in=LIVE_STATUSES,
    )  # fmt: skip
    lapsed = list(same_id.filter(expires_at__lte=now).values_list("pk", flat=True))
    if lapsed:
        ChatSession.objects.filter(pk__in=lapsed).update(
            status=SessionStatus.EXPIRED, updated_at=now
        )
        announce_sessions_ended(tenant_id=tenant.pk, session_ids=lapsed, reason="expired")
    live = same_id.filter(expires_at__gt=now).values_list("pk", flat=True).first()
    if live is not None:
        raise _external_id_taken(external_session_id=external_session_id, session_id=live)


def _insert_session(**fields: Any) -> ChatSession:
    """The INSERT, with the database's one-live-session-per-id index as the last word:
    a writer that bypassed the identity lock still gets a 409, never a 500."""
    try:
        with transaction.atomic():
            return ChatSession.objects.create(**fields)
    except IntegrityError as exc:
        if LIVE_EXTERNAL_ID_CONSTRAINT not in str(exc):
            raise
        live = ChatSession.objects.filter(
            tenant=fields["tenant"], user_id=fields["user_id"], agent_id=fields["agent_id"],
            external_session_id=fields["external_session_id"], status__in=LIVE_STATUSES,
        ).values_list("pk", flat=True).first()  # fmt: skip
        raise _external_id_taken(
            external_session_id=fields["external_session_id"], session_id=live
        ) from exc


def _check_policy(*, tenant_id: int, name: str) -> None:
    """A session may only name a context policy its tenant has (400 on the field)."""
    if not context_policy_exists(tenant_id=tenant_id, name=name):
        names = ", ".join(context_policy_names(tenant_id=tenant_id))
        raise InvalidInput(
            f"Unknown context policy {name!r}.",
            fields={"context_policy": [f"One of: {names}."]},
        )


def default_ttl_seconds(provider: str) -> int:
    """The TTL a session gets when none is asked for: its provider's entry in
    ENGRAM_SESSION_TTL_BY_PROVIDER (seed 002: a Claude CLI session lives 30 days, the
    provider's own retention; an Ollama history 7 days), else ENGRAM_SESSION_TTL_SECONDS."""
    table: dict[str, int] = settings.ENGRAM_SESSION_TTL_BY_PROVIDER
    return table.get(provider.lower(), settings.ENGRAM_SESSION_TTL_SECONDS)


@transaction.atomic
def session_update(
    *,
    session: ChatSession,
    state: dict[str, Any] = UNSET,
    metadata: dict[str, Any] = UNSET,
    ttl_seconds: int = UNSET,
    budget_tokens: int | None = UNSET,
    budget_usd: Decimal | None = UNSET,
    external_session_id: str | None = UNSET,
    model: str = UNSET,
    compact_context_share: float | None = UNSET,
    rotate_after_tokens: int | None = UNSET,
    context_policy: str = UNSET,
    capture_prompts: bool | None = UNSET,
    reasoning: str = "",
    changed_by: str = "",
    if_match: list[str] | None = None,
) -> ChatSession:
    """Changes only what is given. Like every write, it moves the expiry forward (a new
    TTL counts from now), and an expired session answers 410.

    `if_match` (entity tags or `*`, from the If-Match header): the update happens only
    if the session's state still has one of these tags (`state_etag`), checked with the
    session locked until commit, else PreconditionFailed (412) and nothing changes. A
    concurrent writer of the state (another PATCH, a turn) waits for this one, so two
    clients that read the same state cannot both replace it. None: no check.

    A new `state` is recorded as a turn of kind `state_change` (no steps, no spend) with
    `reasoning` and `changed_by`: the turn log then says who changed what and why, and
    rolling that turn back restores the state it replaced."""
    _update_checks(session=session, if_match=if_match, context_policy=context_policy)
    if external_session_id not in (UNSET, None, session.external_session_id):
        _claim_external_id(
            tenant=session.tenant, user_id=session.user_id, agent_id=session.agent_id,
            external_session_id=external_session_id, now=timezone.now(),
        )  # fmt: skip
    given = {
        "metadata": metadata,
        "budget_tokens": budget_tokens,
        "budget_usd": budget_usd,
        "external_session_id": external_session_id,
        "model": model,
        "compact_context_share": compact_context_share,
        "rotate_after_tokens": rotate_after_tokens,
        "context_policy": context_policy,
        "capture_prompts": capture_prompts,
        "ttl_seconds": ttl_seconds,
    }
    _save_given(session=session, given=given)
    if state is not UNSET:
        session = _state_change(
            session=session, state=state, reasoning=reasoning, changed_by=changed_by
        )
    return session


def _update_checks(
    *, session: ChatSession, if_match: list[str] | None, context_policy: str
) -> None:
    """What `session_update` checks before it changes anything: writable (410), the
    state's tag (412, when `if_match` is given), a changed policy that exists."""
    session_ensure_writable(session=session)
    if if_match is not None:
        _state_precondition(session=session, if_match=if_match)
    if context_policy is not UNSET and context_policy != session.context_policy:
        _check_policy(tenant_id=session.tenant_id, name=context_policy)


def _save_given(*, session: ChatSession, given: dict[str, Any]) -> None:
    """Set the fields given (those not UNSET), move the expiry forward, save them."""
    changed = [name for name, value in given.items() if value is not UNSET]
    for name in changed:
        setattr(session, name, given[name])
    changed += session_touch(session=session)
    session.save(update_fields=[*changed, "updated_at"])


def _state_precondition(*, session: ChatSession, if_match: list[str]) -> None:
    """Lock the session as a turn does and check its state's tag against `if_match`."""
    locked = session_lock_for_turn(tenant=session.tenant, session_id=session.pk).session
    state_precondition_check(state=locked.state, if_match=if_match)


def _state_change(
    *, session: ChatSession, state: dict[str, Any], reasoning: str, changed_by: str
) -> ChatSession:
    """A new state as a turn of kind `state_change` that names the keys it changed."""
    before = session.state or {}
    keys = sorted(
        key for key in set(before) | set(state) if before.get(key, UNSET) != state.get(key, UNSET)
    )
    return turn_record(
        tenant=session.tenant,
        session_id=session.pk,
        steps=[],
        state=state,
        reasoning=reasoning,
        metadata={"changed_keys": keys},
        kind=TurnKind.STATE_CHANGE,
        changed_by=changed_by,
    ).session


@transaction.atomic
def session_delete(*, session: ChatSession) -> None:
    """Deletes the session with its turns, steps and workspace; what other apps derived
    from its turns verbatim goes with it (`turns_withdrawn`)."""
    session_id = session.pk  # delete() clears it
    session.delete()
    turns_withdrawn.send(
        sender=ChatSession, tenant_id=session.tenant_id, session_ids=[session_id], turn_numbers=None
    )


@transaction.atomic
def session_archive(*, session: ChatSession) -> ChatSession:
    """Archived sessions keep their turns for audit but take no new work."""
    session.status = SessionStatus.ARCHIVED
    session.save(update_fields=["status", "updated_at"])
    announce_sessions_ended(
        tenant_id=session.tenant_id, session_ids=[session.pk], reason="archived"
    )
    return session


def _identity_lock(
    *, tenant: Tenant, user_id: str, agent_id: str, external_session_id: str
) -> None:
    """A transaction-scoped advisory lock on the session identity. Two callers resuming
    the same (tenant, user, agent, external id) at once queue here, so the second sees
    the first's committed session (resumed, or a 409 for a plain create) instead of
    failing on the live-session unique index, which stays the database's guarantee."""
    identity = json.dumps([str(tenant.pk), user_id, agent_id, external_session_id])
    advisory_xact_lock(f"engram-session-resume:{identity}")


@transaction.atomic
def session_resume_or_create(
    *,
    tenant: Tenant,
    user_id: str,
    agent_id: str,
    external_session_id: str,
    **create_kwargs: Any,
) -> tuple[ChatSession, bool]:
    """The tenant's unexpired session for (user_id, agent_id, external_session_id), its
    expiry moved forward as by any write, or a new one; returns (session, created). This
    is how an agent that only knows its own conversation id (a CLI session, an OTel
    `gen_ai.conversation.id`, an MCP client) reattaches without keeping our uuid."""
    _identity_lock(
        tenant=tenant, user_id=user_id, agent_id=agent_id, external_session_id=external_session_id
    )
    existing = session_find_resumable(
        tenant=tenant, user_id=user_id, agent_id=agent_id, external_session_id=external_session_id
    )
    if existing is not None:
        existing.save(update_fields=[*session_touch(session=existing), "updated_at"])
        return existing, False
    session = session_create(
        tenant=tenant,
        user_id=user_id,
        agent_id=agent_id,
        external_session_id=external_session_id,
        **create_kwargs,
    )
    return session, True
