"""The search's score as the API documents it, from a hit's parts: for the tests that
check a hit's score is its parts' sum (a hit no time, date or currency rule halves)."""

from __future__ import annotations

from memory_app.selectors.latest import LATEST_WEIGHT
from memory_app.selectors.search.asked_subject import ASKED_WEIGHT


def score_of_parts(parts: dict[str, float]) -> float:
    """0.6 relevance + 0.2 recency + 0.1 importance + 0.1 access + 0.2 speaker + thread
    + length + 0.1 latest + 0.3 asked (the schema's help text of `score`; time 0 here)."""
    return (
        0.6 * parts["relevance"] + 0.2 * parts["recency"] + 0.1 * parts["importance"]
        + 0.1 * parts["access"] + 0.2 * parts["speaker"] + parts["thread"] + parts["length"]
        + LATEST_WEIGHT * parts["latest"] + ASKED_WEIGHT * parts["asked"]
    )  # fmt: skip
