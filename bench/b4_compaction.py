"""B4: compacting a 1,000-turn session at once: wall time and peak memory.

The subject is `session_compact(force=True)` over a session whose 1,000 turns were never
compacted (the worst backlog: a session recorded with compaction off). The baseline, in
the same run, is the least any compaction must do: read the same turns from PostgreSQL
and count their tokens. Time is reported as a ratio to that baseline and per turn; peak
memory is measured in a second, identical run under tracemalloc (which slows Python
down, so it is never timed), plus the process's peak RSS.
"""

from __future__ import annotations

import resource
import time
import tracemalloc
from typing import Any

from bench.harness import BenchContext, BenchResult, step

ID = "B4"
TITLE = "Compaction: a 1,000-turn session compacted at once"
TURNS = {"short": 1000, "full": 1000}


def _record_session(turns: int, label: str) -> Any:
    """A session with compaction thresholds out of reach, so every turn stays open."""
    from bench.synthetic_sessions import synthetic_session
    from sessions_app.models import ChatSession
    from sessions_app.services.api_keys import tenant_get_or_create
    from sessions_app.services.sessions import session_create
    from sessions_app.services.turn_recording import turn_record
    from sessions_app.services.turn_totals import StepInput
    from sessions_app.usage import TokenCounts

    tenant = tenant_get_or_create(name="bench-b4")
    session = session_create(tenant=tenant, user_id=f"b4-{label}", agent_id="bench")
    ChatSession.objects.filter(pk=session.pk).update(
        compact_max_turns=10**6, compact_max_tokens=10**9
    )
    step_input = StepInput(
        step_type="response",
        model="gpt-4o-mini",
        counts=TokenCounts(input_tokens=800, output_tokens=150),
    )
    for turn in synthetic_session(turns=turns, seed=8):
        turn_record(
            tenant=tenant,
            session_id=session.pk,
            user_message=turn.user_message,
            assistant_response=turn.assistant_response,
            steps=[step_input],
        )
    return session


def _baseline_seconds(session: Any) -> tuple[float, int]:
    from memory_app.window.tokens import count_tokens
    from sessions_app.models import ChatTurn

    started = time.perf_counter()
    tokens = 0
    for user, answer in ChatTurn.objects.filter(session=session).values_list(
        "user_message", "assistant_response"
    ):
        tokens += count_tokens(user) + count_tokens(answer)
    return time.perf_counter() - started, tokens


def _markdown(data: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"A session of {data['turns']} synthetic turns ({data['source_tokens']:,} tokens "
            "of text), never compacted, then `session_compact(force=True)`: extractive "
            f"summaries ({', '.join(data['methods']) or '-'}), milestones, condensing.",
            "",
            "| measure | value |",
            "|---|---:|",
            f"| turns compacted | {data['turns_compacted']:,} in {data['spans']} spans "
            f"({data['condensed']} condensed summaries) |",
            f"| compaction wall time | {data['compaction_seconds']:.2f} s "
            f"({data['ms_per_turn']:.1f} ms/turn) |",
            f"| baseline: read + tokenize the same turns | {data['baseline_seconds']:.3f} s |",
            f"| ratio to baseline | {data['ratio_to_baseline']:.1f}x |",
            f"| peak Python memory (tracemalloc, second run) | {data['python_peak_mib']:.1f} MiB |",
            f"| process peak RSS (after both runs) | {data['process_peak_rss_mib']:.0f} MiB |",
        ]
    )


def run(ctx: BenchContext) -> BenchResult:
    from memory_app.services.compaction import session_compact

    turns = TURNS[ctx.size]
    with step(ctx.log, f"B4: recording two sessions of {turns} turns"):
        timed, traced = _record_session(turns, "timed"), _record_session(turns, "traced")
    with step(ctx.log, "B4: baseline (read + tokenize every turn)"):
        baseline = min(_baseline_seconds(timed)[0] for _ in range(3))
        _, source_tokens = _baseline_seconds(timed)
    with step(ctx.log, "B4: compaction, timed"):
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        result = session_compact(session_id=timed.pk, force=True)
        elapsed = time.perf_counter() - started
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with step(ctx.log, "B4: compaction under tracemalloc"):
        tracemalloc.start()
        session_compact(session_id=traced.pk, force=True)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    data = {
        "turns": turns,
        "source_tokens": source_tokens,
        "turns_compacted": result.turns_compacted,
        "spans": len(result.spans),
        "condensed": len(result.condensed_ids),
        "methods": sorted(set(result.methods)),
        "compaction_seconds": elapsed,
        "baseline_seconds": baseline,
        "ratio_to_baseline": elapsed / baseline if baseline else None,
        "ms_per_turn": 1000 * elapsed / max(1, result.turns_compacted),
        "python_peak_mib": peak / 2**20,
        "process_peak_rss_mib": rss_after / 1024,
        "rss_growth_mib": (rss_after - rss_before) / 1024,
    }
    return BenchResult(id=ID, title=TITLE, markdown=_markdown(data), data=data)
