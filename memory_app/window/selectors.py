"""Reads of the short-term window: its thresholds, whether a session is due for
compaction, and the summaries currently in force.

One decision, `compaction_due`, answers for the `turn_recorded` hook (after every turn)
and for the compaction service alike, so the two can never disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from memory_app.window.models import ContextSummary
from memory_app.window.tokens import count_tokens
from sessions_app.hooks import model_context_window
from sessions_app.selectors.sessions import session_model
from sessions_app.selectors.turns import turns_open_texts

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, ChatTurn


@dataclass(frozen=True)
class Thresholds:
    max_turns: int
    max_tokens: int
    keep_last_turns: int


def window_thresholds(session: ChatSession) -> Thresholds:
    """The session's own thresholds where set, else the settings'. The token threshold is
    the lower of the absolute one and a share of the model's context window (seed 002:
    "80 % of model context"), so a small local model compacts before it overflows."""

    def pick(own: int | None, default: int) -> int:
        return default if own is None else own

    max_tokens = pick(session.compact_max_tokens, settings.ENGRAM_COMPACT_MAX_TOKENS)
    relative = context_window_threshold(session)
    if relative is not None:
        max_tokens = min(max_tokens, relative)
    return Thresholds(
        max_turns=pick(session.compact_max_turns, settings.ENGRAM_COMPACT_MAX_TURNS),
        max_tokens=max_tokens,
        keep_last_turns=max(
            0, pick(session.compact_keep_last_turns, settings.ENGRAM_COMPACT_KEEP_LAST_TURNS)
        ),
    )


def context_window_threshold(session: ChatSession) -> int | None:
    """Tokens at the session's share (or the settings') of its model's context window;
    None when the share is 0 or the model's window is unknown."""
    share = session.compact_context_share
    if share is None:
        share = settings.ENGRAM_COMPACT_CONTEXT_SHARE
    if not share:
        return None
    window = model_context_window(session_model(session))
    return None if window is None else int(window * share)


def turn_text_tokens(turn: ChatTurn) -> int:
    """What a turn costs verbatim in a context: its two messages' text."""
    return count_tokens(turn.user_message) + count_tokens(turn.assistant_response)


def compaction_due(session: ChatSession, thresholds: Thresholds | None = None) -> str | None:
    """Why the session's open window (turns neither compacted nor rolled back) must be
    compacted: "max_turns" or "max_tokens"; None when it need not, or when every open
    turn is among the last `keep_last_turns` (nothing compactable).

    Tokens are those of the turns' text (what the window would hold), not the LLM usage
    billed for the turn, which counts the agent's whole prompts many times over.

    Read at a bounded cost, since the `turn_recorded` hook asks after every turn: at most
    max(max_turns, keep_last_turns) + 1 open turns (one more than that already means
    "max_turns"), and their text is tokenized only when its UTF-8 size exceeds
    max_tokens: a token is at least one byte, so fewer bytes than the threshold cannot be
    more tokens than it."""
    thresholds = thresholds or window_thresholds(session)
    limit = max(thresholds.max_turns, thresholds.keep_last_turns) + 1
    texts = turns_open_texts(session_id=session.pk, limit=limit)
    if len(texts) == limit:
        return "max_turns"  # more open turns than both max_turns and keep_last_turns
    if len(texts) <= thresholds.keep_last_turns:
        return None  # nothing compactable
    if len(texts) > thresholds.max_turns:
        return "max_turns"
    if sum(len(u.encode()) + len(a.encode()) for u, a in texts) <= thresholds.max_tokens:
        return None
    tokens = sum(count_tokens(u) + count_tokens(a) for u, a in texts)
    return "max_tokens" if tokens > thresholds.max_tokens else None


def active_summaries(session: ChatSession) -> list[ContextSummary]:
    """The summaries in force, oldest span first (condensed ones replace what they merged)."""
    return list(
        ContextSummary.objects.filter(session=session, superseded_by__isnull=True).order_by(
            "first_turn"
        )
    )
