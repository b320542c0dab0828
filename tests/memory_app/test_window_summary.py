"""Extractive summaries of a conversation where the user states the facts and the
assistant only acknowledges: within the summary's token budget, the user's informative
sentences are kept and the acknowledgements are not."""

from __future__ import annotations

from memory_app.window.milestones import extract_milestones, milestone_lines
from memory_app.window.summarize import (
    condense_summaries,
    extractive_summary,
    score_sentence,
    summary_budget,
)
from memory_app.window.text import Sentence, TurnText
from memory_app.window.tokens import count_tokens
from tests.memory_app.trip_conversation import USER_FACTS, trip_turns


def _span_summary(turns: list[TurnText]) -> tuple[str, int]:
    source = sum(count_tokens(t.user_message) + count_tokens(t.assistant_response) for t in turns)
    budget = summary_budget(source)
    return extractive_summary(turns, budget), budget


def test_a_span_summary_keeps_the_users_facts_within_its_budget() -> None:
    summary, budget = _span_summary(trip_turns(1, 5))
    lines = summary.splitlines()
    assert count_tokens(summary) <= budget
    assert lines and all(" U: " in line for line in lines), summary
    assert "[t2] U: Our whole budget is 3600 euros." in lines
    assert "[t4] U: Tomas is allergic to peanuts, so restaurants matter." in lines


def test_summaries_of_the_conversation_hold_the_users_facts() -> None:
    summaries, milestones = [], []
    for first in range(1, 21, 5):
        turns = trip_turns(first, first + 4)
        summaries.append(_span_summary(turns)[0])
        milestones += [line for _, _, line in milestone_lines(extract_milestones(turns))]
    text = "\n".join(summaries)
    assert "noted (" not in text
    kept = [fact for fact in USER_FACTS if fact in text]
    assert len(kept) >= 9, kept
    # What the summaries leave out of the numbers, the milestones keep.
    both = text + "\n".join(milestones)
    assert {"3600", "August 4th", "peanuts", "412 34 567", "August 9th"} <= {
        fact for fact in USER_FACTS if fact in both
    }


def test_an_acknowledgement_scores_nothing_whoever_says_it() -> None:
    assert score_sentence(Sentence(1, "assistant", "OK noted (1).", 0)) == 0
    assert score_sentence(Sentence(1, "user", "Sure, will do (2)!", 0)) == 0
    requirement = Sentence(4, "user", "Tomas is allergic to peanuts, so restaurants matter.", 0)
    date = Sentence(3, "user", "We arrive in Bergen on August 4th.", 0)
    assert score_sentence(requirement) > score_sentence(date) > 0


def test_condensing_drops_acknowledgements_of_earlier_summaries() -> None:
    earlier = (
        "[t1] A: OK noted (1).\n[t2] U: Our whole budget is 3600 euros.\n[t3] A: OK noted (3)."
    )
    assert condense_summaries([earlier], 60) == "[t2] U: Our whole budget is 3600 euros."
