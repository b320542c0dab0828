"""The context assembled for a session's next LLM call (`context_assemble`), as a
package of small modules:

- `assemble`: the orchestration and its result, `AssembledContext`;
- `candidate`: what may go in (`Candidate`), the sections it renders in, its tokens;
- `candidates`: where candidates come from, one module per source (state, turns,
  summaries and milestones, recalled and past turns, predecessors, memories, failures,
  tool outputs);
- `recall`: the turn recall through the memory search, and the one statement of the
  context's own (the cosine over a found turn's thread window);
- `scoring`: semantic and recency scores; `eligibility`: page-out and relevance floor;
- `packing`: greedy packing under the budget; `explanation`: `included`, `excluded`,
  `parts`; `lines`: how a text becomes one line.

When a session is due for compaction is `memory_app.window.selectors`' business; what
serving a context writes (access statistics) is `memory_app.services.context`'s."""

from memory_app.selectors.context.assemble import AssembledContext, context_assemble
from memory_app.selectors.context.candidates.memories import DEFAULT_MEMORY_LIMIT
from memory_app.selectors.context.candidates.turns import MAX_VERBATIM_TURNS

__all__ = ["DEFAULT_MEMORY_LIMIT", "MAX_VERBATIM_TURNS", "AssembledContext", "context_assemble"]
