"""Hybrid memory search: vector top-k + BM25 top-k, fused by score, then the final score.

1. Vector (`vector`): HNSW over the halfvec of the embedding, one visibility branch at a
   time, exact distance order restored.
2. Lexical (`lexical`, `lexical_hits`, `bm25`): BM25F inside PostgreSQL over
   `lexical_vector`, IDF from per-user term statistics, candidates read from the GIN
   indexes one visibility branch at a time, bounded by ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS.
3. Pool (`pool`): both top-k lists and their union's signals in one statement.
4. Fusion and final score (`fusion`): z-normalised cosine and BM25 weighted into a
   relevance, then relevance, recency, importance and access into the score.
5. Time (memory_app.selectors.search_time): given `as_of`, a time phrase of the query
   boosts the candidates that occurred in its interval.
6. The speaker (`speaker`): a memory whose speaker ("Name: …") the query names ranks
   higher.
7. The current state (memory_app.selectors.currency): a query about "now" ("where do I
   live now?", or in the present tense, "where do I live?") down-weights the candidates
   that no longer hold.

The hard filters and the visibility branches every step shares are `filters`
(`SearchWhere`; the rule itself is memory_app.selectors.visibility); the hits' rows are
read by `hydration`. Every statement is composed with `psycopg.sql`; their text is held
by tests/memory_app/test_search_sql_snapshots.py.

Access statistics are recorded by the caller (`memory_record_access`) for the hits it
uses.
"""

from memory_app.selectors.search.engine import SearchHit, SearchOutcome, memory_search
from memory_app.selectors.search.filters import MemoryFilters, SearchWhere, search_where
from memory_app.selectors.search.fusion import SearchMode
from memory_app.selectors.search.lexical import LexicalQuery, lexical_query

__all__ = [
    "LexicalQuery",
    "MemoryFilters",
    "SearchHit",
    "SearchMode",
    "SearchOutcome",
    "SearchWhere",
    "lexical_query",
    "memory_search",
    "search_where",
]
