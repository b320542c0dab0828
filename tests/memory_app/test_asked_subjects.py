"""The subject a question asks for (memory_app.asked_subjects): the one a memory that
answers it states (memory_app.subjects)."""

from __future__ import annotations

import pytest

from memory_app.asked_subjects import asked_subject
from memory_app.subjects import statement_of

# A question, and a statement that answers it: the two name one subject.
ANSWERED = [
    ("Where do I live?", "I moved to Porto last week for the new job.", "home"),
    ("where do I currently live", "I live in Braga.", "home"),
    ("Where am I based these days?", "I'm based in Berlin.", "home"),
    ("Which city do I live in now?", "I relocated to Lyon.", "home"),
    ("Where did I move to?", "I moved to Lisbon.", "home"),
    ("What's my address?", "My address is 12 Rua Nova, Porto.", "home"),
    ("Where do I work?", "I started working at Acme Robotics.", "employer"),
    ("Who do I work for now?", "I work for the city council.", "employer"),
    ("Who is my employer?", "My employer is Globex.", "employer"),
    ("What company did I work at?", "I worked at Initech.", None),
    ("What do I do for a living?", "I work as a nurse at the clinic.", "occupation"),
    ("What is my job?", "I'm a software engineer.", "occupation"),
    ("How old am I?", "I'm 34 years old.", "age"),
    ("Am I vegetarian?", "I'm vegetarian now.", "diet"),
    ("What's our budget for the trip?", "Our budget for the trip is 3000 euros.", "trip budget"),
    ("What is the budget?", "The budget is 500.", "budget"),
    ("What's my favorite color?", "My favourite colour is green.", "favourite colour"),
    ("What is my phone number now?", "My phone number is 555 0100.", "phone number"),
]


@pytest.mark.parametrize(("question", "statement", "subject"), ANSWERED)
def test_a_question_asks_for_what_its_answer_states(
    question: str, statement: str, subject: str | None
) -> None:
    said = statement_of(statement)
    if subject is None:
        # "I worked at": the past tense states no current employer; the question, asked
        # in the past, still asks for the employer.
        assert said is None
        assert asked_subject(question) == "employer"
        return
    assert said is not None and said.subject == subject
    assert asked_subject(question) == subject


@pytest.mark.parametrize(
    "question",
    [
        "What did I eat last Saturday?",
        "Tell me about the hike.",
        "Where did we go hiking?",
        "How old is my car?",
        "What is the weather like in Porto?",
        "Who lives in Porto?",
        "",
    ],
)
def test_a_question_about_something_else_asks_for_no_subject(question: str) -> None:
    assert asked_subject(question) is None
