"""The rules that read a memory's subject (memory_app.subjects) and that tell a question
about the current state (memory_app.selectors.currency): pure functions, held here
sentence by sentence."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_app.selectors.currency import asks_current_state
from memory_app.subjects import Statement, statement_of, value_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Porto", ("home", "porto")),
        ("I moved to Lisbon last year", ("home", "lisbon")),
        ("I've just moved to Lisbon.", ("home", "lisbon")),
        ("I\u2019ve relocated to Lisbon", ("home", "lisbon")),
        ("I am currently living in New York with my wife", ("home", "new york")),
        ("Hi, I'm based in Berlin now", ("home", "berlin")),
        ("My wife and I live in Porto", ("home", "porto")),
        ("My address is 12 Rua Augusta, Lisbon", ("home", "12 rua augusta")),
        ("I work at Acme since 2020", ("employer", "acme")),
        ("I started working for Globex", ("employer", "globex")),
        ("I started a new job at Nortada Labs", ("employer", "nortada labs")),
        ("I've just got a job with Initech.", ("employer", "initech")),
        ("I started a new job as a data analyst at Farfetch", ("occupation", "data analyst")),
        ("I'm 34 years old", ("age", "34")),
        ("My favorite color is blue", ("favourite colour", "blue")),
        ("my favourite colour is green", ("favourite colour", "green")),
        ("My phone number is +351 912 000 000", ("phone number", "351 912 000 000")),
    ],
)
def test_statements_the_rules_read(text: str, expected: tuple[str, str]) -> None:
    assert statement_of(text) == Statement(*expected)


@pytest.mark.parametrize(
    "text",
    [
        "I prefer aisle seats",  # a preference names no subject by itself
        "I live alone",
        "I work from home",
        "I'm 5 minutes away",
        "My car is not red",  # a negation states no value
        "Where do I live now?",
        "I lived in Porto for ten years",  # the past: no current value
    ],
)
def test_texts_that_state_no_subject(text: str) -> None:
    assert statement_of(text) is None


def test_value_of_a_subject_the_rules_do_not_read() -> None:
    assert value_of("I prefer window seats!", "seat") == "i prefer window seats"
    assert value_of("I moved to Lisbon.", "home") == "lisbon"


@pytest.mark.parametrize(
    ("query", "current"),
    [
        ("where do I live now?", True),
        ("Do I still work at Acme?", True),
        ("what is my current address", True),
        ("what do I drive these days", True),
        ("am I vegetarian at the moment", True),
        ("Do I eat meat anymore?", True),
        ("currently reading?", True),
        ("where did I live in 2020?", False),
        ("I know where I lived", False),
        ("what was my address before the move", False),
    ],
)
def test_questions_about_the_current_state(query: str, current: bool) -> None:
    assert asks_current_state(query) is current


@pytest.mark.parametrize(
    ("query", "current"),
    [
        ("where do I live", True),
        ("What is my job?", True),
        ("am I vegetarian", True),
        ("do I have a car?", True),
        ("what's my address", True),
        ("where do I live today", True),
        ("where did I live", False),
        ("what was my job", False),
        ("what did I use to eat", False),
        ("where do I live, previously?", False),
        ("where did I live before I moved", False),
        ("what is my job in 2020", False),
        ("what is my plan for next week", False),
        ("do I remember where I lived two years ago", False),
    ],
)
def test_present_tense_questions_about_the_user(query: str, current: bool) -> None:
    assert asks_current_state(query, datetime(2024, 5, 16, 12, tzinfo=UTC)) is current
