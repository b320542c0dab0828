"""Prometheus metrics of the short-term window, labelled by context policy, so that
seed 004's A/B comparison can be read off `/metrics`: "instrument compaction overhead to
confirm savings aren't eaten by summarization calls". Served by `sessions_app.metrics`
(the default registry, or the multiprocess folder under gunicorn).

The label is the session's `context_policy` (a name from the settings or the tenant's
own, at most 64 characters): a bounded set per deployment, one series per policy.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import Counter, Histogram

from memory_app.window.models import ContextSummary

COMPACTION_SECONDS = Histogram(
    "engram_compaction_seconds",
    "Time a compaction run took (summaries, milestones, condensing), by the session's "
    "context policy and the run's status.",
    ["policy", "status"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
COMPACTION_TOKENS = Counter(
    "engram_compaction_tokens",
    "Tokens compaction handled, by policy and kind: `source` (turn text replaced), "
    "`summary` (text that replaces it), `llm_input`/`llm_output` (the summarizer's own "
    "LLM calls, 0 when extractive). Savings = source - summary; overhead = llm_*.",
    ["policy", "kind"],
)
CONTEXT_TOKENS = Histogram(
    "engram_context_tokens",
    "Tokens of each context served (`GET …/context`), by the policy it was assembled under.",
    ["policy"],
    buckets=(250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 200000),
)


def compaction_observe(
    *, policy: str, status: str, seconds: float, summary_ids: Sequence[int]
) -> None:
    """Record one compaction run; one query for the summaries it wrote."""
    COMPACTION_SECONDS.labels(policy=policy, status=status).observe(seconds)
    if not summary_ids:
        return
    totals = {"source": 0, "summary": 0, "llm_input": 0, "llm_output": 0}
    for source, summary, llm_in, llm_out in ContextSummary.objects.filter(
        pk__in=summary_ids
    ).values_list("source_tokens", "tokens", "llm_input_tokens", "llm_output_tokens"):
        totals["source"] += source
        totals["summary"] += summary
        totals["llm_input"] += llm_in
        totals["llm_output"] += llm_out
    for kind, tokens in totals.items():
        COMPACTION_TOKENS.labels(policy=policy, kind=kind).inc(tokens)


def context_observe(*, policy: str, total_tokens: int) -> None:
    CONTEXT_TOKENS.labels(policy=policy).observe(total_tokens)
