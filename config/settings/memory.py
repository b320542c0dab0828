"""Settings of compaction, the context and long-term memory (search, extraction gates,
access statistics), each from the environment with a development default. base.py
imports them all, so every environment module sees them as it sees the rest."""

from __future__ import annotations

from config.settings.env import env_bool, env_float, env_int, env_json

# --- Compaction and context ------------------------------------------------------------
ENGRAM_COMPACT_MAX_TURNS = env_int("ENGRAM_COMPACT_MAX_TURNS", 10)
ENGRAM_COMPACT_MAX_TOKENS = env_int("ENGRAM_COMPACT_MAX_TOKENS", 8000)
ENGRAM_COMPACT_KEEP_LAST_TURNS = env_int("ENGRAM_COMPACT_KEEP_LAST_TURNS", 6)
# Also compact when the open window passes this share of the model's context window (from
# the price table); the lower of this and ENGRAM_COMPACT_MAX_TOKENS applies. 0 turns it off.
ENGRAM_COMPACT_CONTEXT_SHARE = env_float("ENGRAM_COMPACT_CONTEXT_SHARE", 0.8)
# A compaction queued for a session holds back further ones for it until it starts, or
# for at most this long (a lost message).
ENGRAM_COMPACTION_PENDING_SECONDS = env_int("ENGRAM_COMPACTION_PENDING_SECONDS", 300)
# Older summaries are condensed into one when there are more than this many active ones,
# or when their tokens together exceed the cap.
ENGRAM_COMPACT_MAX_SUMMARIES = env_int("ENGRAM_COMPACT_MAX_SUMMARIES", 6)
ENGRAM_COMPACT_SUMMARY_TOKEN_CAP = env_int("ENGRAM_COMPACT_SUMMARY_TOKEN_CAP", 1500)
ENGRAM_CONTEXT_HALF_LIFE_MINUTES = env_float("ENGRAM_CONTEXT_HALF_LIFE_MINUTES", 45.0)
ENGRAM_CONTEXT_DEFAULT_BUDGET = env_int("ENGRAM_CONTEXT_DEFAULT_BUDGET", 4000)
# Seed 004's page-out: open turns outside the window older than this many minutes, and
# (with a query) snippets less similar to it than the floor, are evicted before packing.
ENGRAM_CONTEXT_EVICT_TURN_MINUTES = env_float("ENGRAM_CONTEXT_EVICT_TURN_MINUTES", 120.0)
ENGRAM_CONTEXT_SIMILARITY_FLOOR = env_float("ENGRAM_CONTEXT_SIMILARITY_FLOOR", 0.25)
# The newest tool outputs (steps' `tool_output`) offered to the context.
ENGRAM_CONTEXT_TOOL_OUTPUTS = env_int("ENGRAM_CONTEXT_TOOL_OUTPUTS", 8)
# How many rotated sessions a successor's context walks back through `previous_session`
# (seed 002); the walk also stops once their lines exceed the request's budget. A named
# context policy may set its own `predecessor_depth`.
ENGRAM_CONTEXT_PREDECESSOR_DEPTH = env_int("ENGRAM_CONTEXT_PREDECESSOR_DEPTH", 3)
# Named context policies (seed 004's A/B toggles), chosen per session or per request:
# {"name": {"keep_last_turns": int, "memory_limit": int, "compression": bool,
# "predecessor_depth": int}}; a key left out takes the default policy's value. "default" is
# always there (the settings above). These are every tenant's defaults: a tenant adds or
# replaces policies through /api/v1/tenant/context-policies (table tenant_context_policy).
ENGRAM_CONTEXT_POLICIES = env_json(
    "ENGRAM_CONTEXT_POLICIES",
    {
        "keep4": {"keep_last_turns": 4},
        "keep8": {"keep_last_turns": 8},
        "no_compression": {"compression": False},
    },
)
# Share of a context's budget reserved for the newest verbatim turns (the window).
ENGRAM_CONTEXT_WINDOW_SHARE = env_float("ENGRAM_CONTEXT_WINDOW_SHARE", 0.5)
# With a query, summaries, milestones, recalled turns, memories and older open turns whose
# cosine to the query is under this are left out (reason "not_relevant"); 0 disables.
ENGRAM_CONTEXT_MIN_SEMANTIC = env_float("ENGRAM_CONTEXT_MIN_SEMANTIC", 0.3)
# Turns of the user's other sessions a context may recall (then packed under the budget),
# and whether they come from every agent's sessions of the user (on) or only from the
# session's own agent's (off): a user's history is one, whichever agent heard it.
ENGRAM_CONTEXT_PAST_TURNS = env_int("ENGRAM_CONTEXT_PAST_TURNS", 20)
ENGRAM_RECALL_ACROSS_AGENTS = env_bool("ENGRAM_RECALL_ACROSS_AGENTS", True)
# A recalled turn's line holds the passage that answers the query, at most this many
# tokens: a long message's answer is a sentence or two, and more lines fit the budget.
ENGRAM_CONTEXT_RECALL_LINE_TOKENS = env_int("ENGRAM_CONTEXT_RECALL_LINE_TOKENS", 200)

# --- Long-term memory -------------------------------------------------------------------
ENGRAM_MEMORY_MERGE_THRESHOLD = env_float("ENGRAM_MEMORY_MERGE_THRESHOLD", 0.88)
ENGRAM_MEMORY_DECAY_DELETE_BELOW = env_float("ENGRAM_MEMORY_DECAY_DELETE_BELOW", 0.2)
# Insertion gates: a memory (not pinned) below either floor is refused (422
# memory_rejected; extraction drops it). 0 lets everything in.
ENGRAM_MEMORY_MIN_IMPORTANCE = env_float("ENGRAM_MEMORY_MIN_IMPORTANCE", 0.0)
ENGRAM_MEMORY_MIN_CONFIDENCE = env_float("ENGRAM_MEMORY_MIN_CONFIDENCE", 0.0)
# A memory's free `metadata` object, as compact JSON, may not exceed this many bytes.
ENGRAM_MEMORY_METADATA_MAX_BYTES = env_int("ENGRAM_MEMORY_METADATA_MAX_BYTES", 4096)
# Reciprocal rank fusion constant: smaller favours the top of each list more.
ENGRAM_MEMORY_RRF_K = env_int("ENGRAM_MEMORY_RRF_K", 60)
# Search fusion: weight of the z-normalised cosine (the z-normalised BM25 gets the rest).
ENGRAM_MEMORY_FUSION_SEMANTIC_WEIGHT = env_float("ENGRAM_MEMORY_FUSION_SEMANTIC_WEIGHT", 0.5)
# A memory of several sentences is also embedded passage by passage (at most this many
# passages, from its start; 0: none), and the search's semantic signal of a memory is its
# best cosine, whole or passage (docs/decisions/memory-passage-vectors.md).
ENGRAM_MEMORY_MAX_PASSAGES = env_int("ENGRAM_MEMORY_MAX_PASSAGES", 8)
# Bound of the lexical step: candidates come from the query's rarest terms whose postings
# fit this (none if even the rarest does not), and no more rows than this are read in the
# searched scope, before the actor's visibility filter; every term still scores them. Each row
# read is scored (BM25 in SQL, a few microseconds each), so the bound keeps the lexical
# step from becoming the search's tail in a tenant of 100k memories
# (docs/decisions/search-sizing-figures.md). A term in 2% of a 100k tenant's rows
# has an IDF under 4 (a rare one ~10), so what the bound drops from the candidates barely
# ranks; a user's own collection rarely comes near it.
ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS = env_int("ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS", 2000)
# Recency part of the search score halves every this many days since the last update.
ENGRAM_MEMORY_RECENCY_HALF_LIFE_DAYS = env_float("ENGRAM_MEMORY_RECENCY_HALF_LIFE_DAYS", 30.0)
# Reads (search hits, memories in a context) are counted in a Valkey buffer and written by
# the periodic `memory: flush access statistics` task (every 10 s by default: the search's
# access signal lags by that much); false writes the UPDATE in the request.
ENGRAM_MEMORY_ACCESS_BUFFER = env_bool("ENGRAM_MEMORY_ACCESS_BUFFER", True)
# A claimed buffer left this long by a flusher that died is adopted by the next flush.
ENGRAM_MEMORY_ACCESS_STALE_SECONDS = env_float("ENGRAM_MEMORY_ACCESS_STALE_SECONDS", 300.0)
# Query vectors shared between processes through Valkey for this long (0: per-process
# cache only). Keyed by model name and a hash of the text.
ENGRAM_QUERY_EMBEDDING_CACHE_SECONDS = env_int("ENGRAM_QUERY_EMBEDDING_CACHE_SECONDS", 86400)
