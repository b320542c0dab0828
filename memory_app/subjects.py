"""What attribute of its user a memory states a value of: its subject.

Two memories of one user that state the same subject with different values contradict
each other ("I live in Porto", later "I moved to Lisbon"): the newer supersedes the older
(memory_app.services.supersession). The rules are deliberately few and deterministic, so
that a caller can predict them and a test can hold them:

- home: "I live in X", "I'm living in X", "I moved / relocated to X", "I'm based in X",
  "I reside in X", "my home is in X", "my address is X", "my home address is X";
- employer: "I work at / for X", "I'm working at / for X", "I started working at X",
  "my employer is X";
- age: "I am N (years old)", "I'm N years old";
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

_LEAD = r"(?:(?:now|currently|still|recently|just|actually)\s+)?"
_I = r"\bi(?:\s+am|'m|\u2019m|\s+have|'ve|\u2019ve)?\s+" + _LEAD
# The value: everything up to punctuation; trimmed at circumstance words below.
_VALUE = r"(?P<value>[^.,;:!?\n]+)"

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
            _I + r"(?:work|working|started\s+working)\s+(?:at|for)\s+" + _VALUE,
            re.IGNORECASE,
        ),
    ),
    ("employer", re.compile(r"\bmy\s+employer\s+is\s+" + _VALUE, re.IGNORECASE)),
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


def statement_of(text: str) -> Statement | None:
    """The first subject `text` states a value of, by the rules of the module docstring;
    None when it states none."""
    found: list[tuple[int, str, str]] = []
    for subject, pattern in _PATTERNS:
        match = pattern.search(text)
        if match:
            found.append((match.start(), subject, match.group("value")))
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
