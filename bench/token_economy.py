"""Token economy of the short-term window: what an agent sends with Engram's context
versus sending the full history, over synthetic sessions (bench/synthetic_sessions.py).

    .venv/bin/python bench/token_economy.py

Runs against throwaway embedded PostgreSQL + Valkey (the test settings start them) and
a fresh test database; turns are recorded through `turn_record`, compaction runs from
the `turn_recorded` hook exactly as in production (Celery eager), extractive summaries
(no LLM). Tokens are o200k_base counts of chat messages as sent (framing included).
Prints a Markdown table and writes it into the "Token economy" section of
bench/RESULTS.md (created if missing, other sections kept).
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from bench.synthetic_sessions import (  # noqa: E402
    TURN_12_QUESTION,
    TURN_12_VALUE,
    SyntheticTurn,
    synthetic_session,
    value_present,
)
from memory_app.selectors.context import context_assemble  # noqa: E402
from memory_app.window.milestones import milestone_lines  # noqa: E402
from memory_app.window.models import ContextSummary  # noqa: E402
from memory_app.window.tokens import count_tokens, messages_tokens  # noqa: E402
from sessions_app.models import ChatSession, ChatTurn, Tenant  # noqa: E402
from sessions_app.services.api_keys import tenant_get_or_create  # noqa: E402
from sessions_app.services.sessions import session_create  # noqa: E402
from sessions_app.services.turn_recording import turn_record  # noqa: E402

SESSIONS = [(20, 1), (50, 2), (100, 3), (200, 6)]  # (turns, seed)
BUDGETS = (1000, 4000)
RESULTS = ROOT / "bench" / "RESULTS.md"
HEADING = "## Token economy"


def _turn_messages(user_message: str, assistant_response: str) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": user_message},
        {"role": "assistant", "content": assistant_response},
    ]


def _record_script(
    tenant: Tenant, session: ChatSession, script: list[SyntheticTurn]
) -> tuple[list[dict[str, str]], int, dict[int, int]]:
    """Record every turn of `script`; (the full history, the tokens sent over the session
    with the full history, and with Engram's context at each budget)."""
    history: list[dict[str, str]] = []
    cumulative_full = 0
    cumulative_context = dict.fromkeys(BUDGETS, 0)
    for turn in script:
        # What the agent sends for this turn: everything so far, or Engram's context.
        cumulative_full += messages_tokens(history)
        for budget in BUDGETS:
            context = context_assemble(tenant=tenant, session_id=session.pk, budget=budget)
            cumulative_context[budget] += context.total_tokens
        turn_record(
            tenant=tenant,
            session_id=session.pk,
            steps=[],
            user_message=turn.user_message,
            assistant_response=turn.assistant_response,
        )
        history += _turn_messages(turn.user_message, turn.assistant_response)
    return history, cumulative_full, cumulative_context


def _open_turn_tokens(session: ChatSession) -> int:
    """Tokens of the turns neither compacted nor rolled back, as chat messages."""
    open_turns = ChatTurn.objects.filter(session=session, compacted=False, rolled_back=False)
    return messages_tokens(
        [m for t in open_turns for m in _turn_messages(t.user_message, t.assistant_response)]
    )


def run_session(turns: int, seed: int) -> dict[str, Any]:
    tenant = tenant_get_or_create(name="bench")
    session = session_create(tenant=tenant, user_id="bench", agent_id="shop")
    script = synthetic_session(turns, seed=seed)
    history, cumulative_full, cumulative_context = _record_script(tenant, session, script)
    full = messages_tokens(history)
    active = list(ContextSummary.objects.filter(session=session, superseded_by__isnull=True))
    open_tokens = _open_turn_tokens(session)
    milestone_tokens = sum(
        count_tokens(line) for s in active for _, _, line in milestone_lines(s.milestones)
    )
    query = TURN_12_QUESTION if turns >= 12 else "What did I ask for?"
    contexts = {
        budget: context_assemble(tenant=tenant, session_id=session.pk, query=query, budget=budget)
        for budget in BUDGETS
    }
    text_1000 = "\n".join(m["content"] for m in contexts[1000].messages)
    return {
        "turns": turns,
        "full": full,
        "summaries": len(active),
        "summary_tokens": sum(s.tokens for s in active),
        "milestone_tokens": milestone_tokens,
        "open_tokens": open_tokens,
        "ctx": {b: c.total_tokens for b, c in contexts.items()},
        "fact12": value_present(TURN_12_VALUE, text_1000) and "Rotterdam" in text_1000,
        "cum_full": cumulative_full,
        "cum_ctx": cumulative_context,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| turns | full history | summaries (tokens) | milestone lines | open turns "
        "| context @1000 | context @4000 | turn-12 fact @1000 | cumulative full history "
        "| cumulative context @1000 | cumulative context @4000 |",
        "|---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|",
    ]
    for r in rows:
        full, cum = r["cum_full"], r["cum_ctx"]
        lines.append(
            f"| {r['turns']} | {r['full']:,} | {r['summaries']} ({r['summary_tokens']:,}) "
            f"| {r['milestone_tokens']:,} | {r['open_tokens']:,} | {r['ctx'][1000]:,} "
            f"| {r['ctx'][4000]:,} | {'yes' if r['fact12'] else 'no'} | {full:,} "
            f"| {cum[1000]:,} ({cum[1000] / full:.0%}) | {cum[4000]:,} ({cum[4000] / full:.0%}) |"
        )
    return "\n".join(lines)


def write_results(body: str) -> None:
    section = (
        f"{HEADING}\n\n"
        "`bench/token_economy.py` — synthetic shopping sessions (every turn plants an MPN or a "
        "number; fixed seeds), recorded through `turn_record` with compaction from the "
        "`turn_recorded` hook (max_turns 10, keep_last_turns 6, extractive summaries). "
        "Tokens: o200k_base, chat messages as sent (3 tokens per message + role, 3 for the "
        "reply). *Full history*: every turn so far as user/assistant messages. *Context*: "
        "`GET /sessions/{id}/context` at that budget, queried about the turn-12 fact. "
        "*Cumulative*: summed over every turn of the session, i.e. what an agent sends in "
        "total if it calls the LLM once per turn with the full history, versus with "
        "Engram's context (no query). Milestone lines are stored beside the summaries and "
        "offered to the context one line at a time; they are why 90%+ of planted values "
        "survive compaction (tests/memory_app/test_window_compaction.py).\n\n"
        f"{body}\n\n"
        f"Measured {time.strftime('%Y-%m-%d')}, "
        f"ENGRAM_COMPACT_MAX_TURNS={settings.ENGRAM_COMPACT_MAX_TURNS}.\n"
    )
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(HEADING)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    RESULTS.write_text(text)


def main() -> None:
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        rows = [run_session(turns, seed) for turns, seed in SESSIONS]
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    body = table(rows)
    print(body)
    write_results(body)
    print(f"\nwritten to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
