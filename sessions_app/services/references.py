"""Resolving references ("the first one", "it", "the Dell") and moving the focus.

The rules themselves live in the pure `sessions_app.resolution`; this module feeds it a
stored session and turns its answer into items, errors and focus changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from sessions_app.errors import ApplicationError, Conflict, ErrorCode, NotFound
from sessions_app.models import ChatSession, SessionComponent
from sessions_app.resolution import Resolution, resolve_reference
from sessions_app.selectors.workspace import component_get, component_list, resolver_items
from sessions_app.services.lifecycle import session_lock_for_write


@dataclass(frozen=True)
class ResolvedReference:
    component: SessionComponent
    rule: str
    expression: str
    message: str
    focus_set: bool


def _candidates(session: ChatSession, mpns: tuple[str, ...]) -> list[dict[str, Any]]:
    by_mpn = {c.mpn: c for c in component_list(session=session).filter(mpn__in=mpns)}
    return [
        {"mpn": mpn, "name": by_mpn[mpn].name, "position": by_mpn[mpn].position}
        for mpn in mpns
        if mpn in by_mpn
    ]


def _raise_for(session: ChatSession, ref: str, resolution: Resolution) -> None:
    extra = {
        "rule": resolution.rule,
        "expression": resolution.expression,
        "candidates": _candidates(session, resolution.mpns),
    }
    error: ApplicationError
    if resolution.status == "ambiguous":
        error = Conflict(
            f"{ref!r} could mean several items: {resolution.message}",
            code=ErrorCode.AMBIGUOUS,
            fields={"ref": ["Ambiguous reference."]},
            extra=extra,
        )
    else:
        error = NotFound(
            f"{ref!r} does not match an item: {resolution.message}",
            code=ErrorCode.UNRESOLVED,
            fields={"ref": ["Unresolved reference."]},
            extra=extra,
        )
    raise error


def reference_resolve(*, session: ChatSession, ref: str) -> ResolvedReference:
    """Read-only resolution: the item `ref` means, or 409 `ambiguous` / 404 `unresolved`
    with candidates the agent can offer the user."""
    resolution = resolve_reference(
        ref,
        items=resolver_items(session=session),
        last_results=session.last_results or [],
        focus_mpn=session.focus_mpn,
    )
    if resolution.status != "resolved" or resolution.mpn is None:
        _raise_for(session, ref, resolution)
    component = component_get(session=session, mpn=str(resolution.mpn))
    return ResolvedReference(
        component=component,
        rule=resolution.rule,
        expression=resolution.expression,
        message=resolution.message,
        focus_set=False,
    )


@transaction.atomic
def session_reference_resolve(
    *, session: ChatSession, ref: str, set_focus: bool = True
) -> ResolvedReference:
    """Resolve `ref`; unless told otherwise the item becomes the focus, because the user
    is now talking about it ("tell me about the first one" … "add it")."""
    if set_focus:
        session = session_lock_for_write(session=session)
    resolved = reference_resolve(session=session, ref=ref)
    if not set_focus:
        return resolved
    _focus_write(session, resolved.component.mpn)
    return ResolvedReference(
        component=resolved.component,
        rule=resolved.rule,
        expression=resolved.expression,
        message=resolved.message,
        focus_set=True,
    )


@transaction.atomic
def session_focus_set(
    *, session: ChatSession, mpn: str | None = None, ref: str | None = None
) -> ResolvedReference:
    """Point the focus at a fetched item, named by MPN or by a reference."""
    session = session_lock_for_write(session=session)
    if ref is not None:
        resolved = reference_resolve(session=session, ref=ref)
    else:
        component = component_get(session=session, mpn=str(mpn))
        resolved = ResolvedReference(component, "mpn", str(mpn), "Set by MPN.", False)
    _focus_write(session, resolved.component.mpn)
    return ResolvedReference(
        resolved.component, resolved.rule, resolved.expression, resolved.message, True
    )


def _focus_write(session: ChatSession, mpn: str) -> None:
    if session.focus_mpn != mpn:
        session.focus_mpn = mpn
        session.save(update_fields=["focus_mpn", "updated_at"])
