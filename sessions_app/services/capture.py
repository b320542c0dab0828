"""Optional capture of each step's prompt and completion (seed 000's turn log, for
fine-tuning exports). Off by default: prompts hold whatever the user said, so keeping
them is a decision per tenant (`Tenant.capture_prompts`) or per session
(`ChatSession.capture_prompts`, which wins when set), or for the whole deployment
(ENGRAM_CAPTURE_PROMPTS). What is kept is capped at ENGRAM_CAPTURE_MAX_CHARS per step:
the newest messages are kept (they matter most for the answer), then the completion is
cut. Captured text lives on the step, so erasing the user erases it."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from sessions_app.models import ChatSession, Tenant


def capture_enabled(*, session: ChatSession, tenant: Tenant) -> bool:
    if session.capture_prompts is not None:
        return bool(session.capture_prompts)
    return bool(tenant.capture_prompts or settings.ENGRAM_CAPTURE_PROMPTS)


def capture_capped(
    prompt: list[dict[str, Any]] | None, completion: str
) -> tuple[list[dict[str, Any]] | None, str]:
    """`prompt` and `completion` within ENGRAM_CAPTURE_MAX_CHARS (JSON characters of the
    messages plus the completion's): oldest messages dropped first, then the completion
    truncated."""
    limit = int(settings.ENGRAM_CAPTURE_MAX_CHARS)
    completion = completion[:limit]
    room = limit - len(completion)
    if prompt is None:
        return None, completion
    kept: list[dict[str, Any]] = []
    used = 0
    for message in reversed(prompt):
        size = len(json.dumps(message, ensure_ascii=False))
        if used + size > room:
            break
        kept.append(message)
        used += size
    kept.reverse()
    return kept, completion
