"""Reading memories out of what a user wrote, without touching the database.

- `patterns`: the vocabularies and the rules of the heuristic extractor;
- `heuristic`: the offline extractor, which keeps only stated facts about the user
  and explicit durable preferences;
- `llm`: the prompt asking an OpenAI-compatible model for facts with their time, and
  the strict parser of its answer.

`memory_app.services.extraction` turns what these find into memories.
"""

from memory_app.extraction.candidates import Candidate

__all__ = ["Candidate"]
