"""What attribute of its user a question asks for: the subject a memory would state
(memory_app.subjects), read from the question instead of a statement.

"Where do I live?" asks for `home`, which "I moved to Porto last week" states; the two
share no word, and their cosine is low, so a search relates them by vector alone and
weakly. Knowing the subject asked relates them by more: the search credits such a
memory (memory_app.selectors.search.asked_subject), and so the context's similarity
floors let it through. The rules mirror the statement rules and are as few and
deterministic:

- home: "where do/did I live / stay / reside", "where am I living / based / staying",
  "which city / town / country do I live in", "where did I move (to)", "what is my
  (home) address", "where is my home";
- employer: "where do/did I work", "where am I working", "who do/did I work for", "who
  is my employer", "what company do/did I work at / for";
- occupation: "what do/did I do for a living / for work", "what is my job / occupation /
  profession";
- age: "how old am I", "what is my age";
- diet: "am I (a) <diet>" for a known diet, "what is my diet";
- a budget: "what is my / our / the (trip) budget (for the trip)": "budget" or
  "<thing> budget", as the statement rule names it;
- any "what is / are / was / were my <one to four words>" ("what's my favourite
  colour?", "what is my phone number?"), the words being the subject.

The first rule that matches counts; a question that matches none asks for no subject.
"""

from __future__ import annotations

import re

from memory_app.extraction.vocabulary import DIETS
from memory_app.subjects import normalise_subject


def _asking(word: str, verbs: str = "is|was") -> str:
    """`word` and a verb of being, apart or contracted: "what is", "what's"."""
    return rf"\b{word}(?:\s+(?:{verbs})|'s|\u2019s)\s+"


_WHAT_IS = _asking("what")

_ASKED: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "home",
        re.compile(
            r"\bwhere\s+(?:do|did)\s+i\s+(?:currently\s+|now\s+)?(?:live|stay|reside)\b"
            r"|\bwhere\s+am\s+i\s+(?:currently\s+|now\s+)?(?:living|based|staying|residing)\b"
            r"|\b(?:which|what)\s+(?:city|town|country|place)\s+(?:do|did)\s+i\s+live\s+in\b"
            r"|\bwhere\s+(?:did|have)\s+i\s+(?:just\s+)?(?:moved?|relocated?)\b"
            rf"|{_WHAT_IS}my\s+(?:home\s+)?address\b"
            rf"|{_asking('where')}my\s+home\b",
            re.IGNORECASE,
        ),
    ),
    (
        "employer",
        re.compile(
            r"\bwhere\s+(?:do|did)\s+i\s+(?:currently\s+|now\s+)?work\b"
            r"|\bwhere\s+am\s+i\s+(?:currently\s+|now\s+)?working\b"
            r"|\bwho\s+(?:do|did)\s+i\s+(?:currently\s+|now\s+)?work\s+for\b"
            rf"|{_asking('who')}my\s+employer\b"
            r"|\bwhat\s+company\s+(?:do|did)\s+i\s+work\s+(?:at|for)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "occupation",
        re.compile(
            r"\bwhat\s+(?:do|did)\s+i\s+do\s+(?:for\s+a\s+living|for\s+work)\b"
            rf"|{_WHAT_IS}my\s+(?:current\s+)?(?:job|occupation|profession)\b",
            re.IGNORECASE,
        ),
    ),
    ("age", re.compile(rf"\bhow\s+old\s+am\s+i\b|{_WHAT_IS}my\s+age\b", re.IGNORECASE)),
    (
        "diet",
        re.compile(
            rf"\bam\s+i\s+(?:still\s+)?(?:a\s+|an\s+)?{DIETS}\b|{_WHAT_IS}my\s+diet\b",
            re.IGNORECASE,
        ),
    ),
)
_BUDGET = re.compile(
    rf"{_WHAT_IS}(?:my|our|the)\s+(?:(?:whole|total|overall|current)\s+)?"
    r"(?:(?P<before>[a-z]+)\s+)??budget(?:\s+for\s+(?:the|this|my|our)\s+(?P<after>[a-z]+))?",
    re.IGNORECASE,
)
# One to four words, as few as leave the rest to the trailing "now" and punctuation.
_WORDS = r"[a-z][a-z'\u2019-]*(?:\s+[a-z][a-z'\u2019-]*){0,3}?"
_GENERIC = re.compile(
    rf"{_asking('what', 'is|are|was|were')}my\s+(?P<subject>{_WORDS})"
    r"\s*(?:now|currently|these\s+days|again)?\s*[?.!]*\s*$",
    re.IGNORECASE,
)


def asked_subject(question: str) -> str | None:
    """The subject `question` asks for, by the rules of the module docstring; None when
    it asks for none."""
    for subject, pattern in _ASKED:
        if pattern.search(question):
            return subject
    budget = _BUDGET.search(question)
    if budget:
        what = budget.group("after") or budget.group("before") or ""
        return f"{what} budget".strip()
    generic = _GENERIC.search(question)
    if generic:
        return normalise_subject(generic.group("subject"))
    return None
