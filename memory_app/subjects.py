"""What attribute of its user a memory states a value of: its subject.

Two memories of one user that state the same subject with different values contradict
each other ("I live in Porto", later "I moved to Lisbon"): the newer supersedes the older
(memory_app.services.supersession). The rules are deliberately few and deterministic, so
that a caller can predict them and a test can hold them:

- home: "I live in X", "I'm living in X", "I moved / relocated to X", "I'm based in X",
  "I reside in X", "my home is in X", "my address is X", "my home address is X";
- employer: "I work at / for X", "I'm working at / for X", "I started working at X",
  "I started / got / took a (new) job / position / role at / with X", "my employer is X";
- age: "I am N (years old)", "I'm N years old";
- occupation: "I work as a X", "I started a (new) job as a X", "I'm (now) a X" where X
  ends on a known occupation ("I'm a terrible cook" states none); the value stops before
  where ("at", "for", "in", "with");
- diet: "I'm (now) X", "we're X" for a known diet (vegetarian, vegan, pescatarian…);
- a budget: "my / our / the (trip) budget (for the trip) is X", "… went up to X", "we
  raised the budget to X"; its subject is "budget", or "<thing> budget" when it names
  what for ("the trip budget", "the budget for the trip": "trip budget");
- any "my <one to four words> is / are X" ("my favourite colour is blue", "my phone
  number is …"), the words being the subject ("favorite" read as "favourite").

A leading "now", "currently", "still", "recently" or "just" is skipped; the value ends at
the first punctuation mark or at a word that starts a circumstance ("since", "now",
"with", "and", "because", a year). A sentence that negates ("my car is not …") states
nothing. The first statement of the text counts. Anything else has no subject: a
preference like "I prefer aisle seats" contradicts "I prefer window seats" only when the
caller names the subject (`subject` on POST /memories).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_app.extraction.vocabulary import DIETS, OCCUPATIONS

_LEAD = r"(?:(?:now|currently|still|recently|just|actually)\s+)?"
_I = r"\bi(?:\s+am|'m|\u2019m|\s+have|'ve|\u2019ve)?\s+" + _LEAD
_I_AM = r"\bi(?:\s+am|'m|\u2019m)\s+" + _LEAD
# The value: everything up to punctuation; trimmed at circumstance words below.
_VALUE = r"(?P<value>[^.,;:!?\n]+)"
# An occupation: up to where the work is done or for whom.
_ROLE = r"(?P<value>[^.,;:!?\n]+?)(?=\s+(?:at|for|in|with|on)\b|[.,;:!?\n]|$)"
# A budget and what it is for: "my budget", "the trip budget", "our budget for the trip".
_BUDGET = (
    r"\b(?:my|our|the)\s+(?:(?:whole|total|overall|entire|new|current|updated)\s+)?"
    r"(?:(?P<before>[a-z]+)\s+)??budget(?:\s+for\s+(?:the|this|my|our)\s+(?P<after>[a-z]+))?"
)
_BUDGET_PATTERNS = (
    re.compile(
        _BUDGET + r"\s+(?:is|'s|\u2019s|of|(?:has\s+)?(?:went|gone|goes|moved)\s+(?:up|down)\s+to|"
        r"(?:is|was|has\s+been)\s+(?:raised|increased|lowered|cut|changed|reduced)\s+to)\s+"
        + _LEAD
        + _VALUE,
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:i|we)\s+(?:just\s+|have\s+|'ve\s+)?(?:raised|increased|lowered|cut|changed|"
        r"reduced|upped|set)\s+" + _BUDGET.removeprefix(r"\b") + r"\s+to\s+" + _VALUE,
        re.IGNORECASE,
    ),
)

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "home",
        re.compile(
            _I + r"(?:(?:live|living|reside|residing|based)\s+(?:in|at)"
            r"|(?:moved|relocated)\s+to)\s+" + _VALUE,
            re.IGNORECASE,
        ),
    ),
    (
        "home",
        re.compile(
            r"\bmy\s+(?:home\s+)?(?:address|home)\s+is\s+(?:in\s+|at\s+)?" + _VALUE,
            re.IGNORECASE,
        ),
    ),
    (
        "employer",
        re.compile(
            _I + r"(?:work|working|started\s+working"
            r"|(?:started|got|took|landed|accepted)\s+(?:a\s+|an\s+|my\s+)?(?:new\s+)?"
            r"(?:job|position|role))\s+(?:at|for|with)\s+" + _VALUE,
            re.IGNORECASE,
        ),
    ),
    ("employer", re.compile(r"\bmy\s+employer\s+is\s+" + _VALUE, re.IGNORECASE)),
    (
        "occupation",
        re.compile(
            _I + r"(?:work(?:ing)?\s+as|(?:started|got|took|landed|accepted)\s+"
            r"(?:a\s+|an\s+|my\s+)?(?:new\s+)?(?:job|position|role)\s+as)\s+(?:a|an)\s+" + _ROLE,
            re.IGNORECASE,
        ),
    ),
    (
        "occupation",
        re.compile(
            _I_AM + rf"(?:a|an)\s+(?P<value>(?:[\w-]+\s+){{0,3}}?{OCCUPATIONS})s?\b", re.IGNORECASE
        ),
    ),
    (
        "diet",
        re.compile(
            r"\b(?:i(?:\s+am|'m|\u2019m)|we(?:'re|\u2019re|\s+are))\s+"
            + _LEAD
            + rf"(?:(?:a|an|strictly|fully|mostly|mainly)\s+)*(?P<value>{DIETS})\b",
            re.IGNORECASE,
        ),
    ),
    (
        "age",
        re.compile(
            r"\bi(?:\s+am|'m|\u2019m)\s+(?P<value>\d{1,3})(?:\s+years?\s+old)?\b(?!\s*[%$€£\w])",
            re.IGNORECASE,
        ),
    ),
)
_GENERIC = re.compile(
    r"\bmy\s+(?P<subject>[a-z][a-z'\u2019-]*(?:\s+[a-z][a-z'\u2019-]*){0,3}?)"
    r"\s+(?:is|are)\s+" + _VALUE,
    re.IGNORECASE,
)
# Where a value stops: the circumstances around it are not part of it.
_VALUE_END = re.compile(
    r"\s+(?:now|these\s+days|currently|since|with|and|but|because|as\s+of|from|"
    r"for\s+(?:now|the|a|\d)|last|this|next|in\s+\d{4}|(?:\d{4})\b)\b.*$",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"^(?:not|no\s+longer|never)\b", re.IGNORECASE)
_SPELLING = {"favorite": "favourite", "color": "colour"}
MAX_SUBJECT_CHARS = 100


@dataclass(frozen=True)
class Statement:
    """A subject and the value a text gives it, both case-folded."""

    subject: str
    value: str


def normalise_subject(subject: str) -> str:
    """Case-folded, single-spaced, British spelling of the few words that vary."""
    words = [_SPELLING.get(word, word) for word in subject.casefold().split()]
    return " ".join(words)[:MAX_SUBJECT_CHARS]


def _value(raw: str) -> str:
    value = _VALUE_END.sub("", raw.strip()).strip().casefold()
    return " ".join(re.sub(r"[^\w\s'-]", " ", value).split())


def _budget_found(text: str) -> list[tuple[int, str, str]]:
    """(start, subject, raw value) of the budget statements of `text`."""
    found = []
    for pattern in _BUDGET_PATTERNS:
        match = pattern.search(text)
        if match:
            what = match.group("after") or match.group("before") or ""
            found.append((match.start(), f"{what} budget".strip(), match.group("value")))
    return found


def statement_of(text: str) -> Statement | None:
    """The first subject `text` states a value of, by the rules of the module docstring;
    None when it states none."""
    found: list[tuple[int, str, str]] = []
    for subject, pattern in _PATTERNS:
        match = pattern.search(text)
        if match:
            found.append((match.start(), subject, match.group("value")))
    found += _budget_found(text)
    generic = _GENERIC.search(text)
    if generic:
        found.append((generic.start(), generic.group("subject"), generic.group("value")))
    for _, subject, raw in sorted(found, key=lambda item: item[0]):
        if _NEGATION.match(raw.strip()):
            continue
        value = _value(raw)
        if value:
            return Statement(normalise_subject(subject), value)
    return None


def value_of(text: str, subject: str) -> str:
    """The value `text` gives `subject`: by the rules when they read that subject, else
    the whole text case-folded (a subject the caller named)."""
    statement = statement_of(text)
    if statement is not None and statement.subject == subject:
        return statement.value
    return _value(text)
