"""What a user says has ended: "I'm not vegetarian anymore", "I'm no longer a nurse",
"I quit nursing", "I stopped being vegan", "I don't live in London any more".

Such a sentence states no new value, so it supersedes nothing (memory_app.subjects); it
ends the user's current memories whose subject's value it names instead
(memory_app.services.supersession.memories_end_ceased). What it names is compared by
word stems, so that "nursing" ends "nurse" and "vegetarian" ends "vegetarian"; the
words around the value ("work", "live", "in", "my job") name no value themselves.
"I quit my job" (or "lost my job"), naming no job, ends the user's current occupation
and employer whatever their value; "I don't work there anymore" ("there" being where the
user works now) ends the current employer, and "I don't live there anymore" the home.

What it ends is what the sentence is about: its verb names the subject when it has one
("live in" a home, "work at / for" and "my job at" an employer, "work as" and "my job
as" an occupation), so "I no longer work at Acme" ends the employer Acme, not a
favourite shop "Acme Hardware"; other forms end any subject whose value they name. It
must be about the user doing or being it: "I don't think the bus stops here anymore"
(a thought about the bus) and "I stopped by the Lisbon office" (a visit) end nothing.
Only these forms count: a plain "I'm not a nurse" may correct a misunderstanding
rather than report a change, and "I used to …" is about the past, not about now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_END = r"(?P<value>[^.,;:!?\n]+?)"
_STOP = r"(?=[.,;:!?\n]|\s+(?:and|but|so|because|since)\b|$)"
_QUIT = r"\bi(?:'ve|\u2019ve|\s+have)?\s+(?:just\s+|finally\s+)?"
_JOB = r"my\s+(?:current\s+|old\s+)?(?:job|position)\b"
_BARE_JOB = _JOB + r"(?!\s+(?:as|at|with)\b)"  # "I quit my job", no job named
# "I quit my job": the user's work has ended, whatever it was.
_JOB_ENDED = re.compile(_QUIT + r"(?:quit|lost|gave\s+up|given\s+up)\s+" + _BARE_JOB, re.IGNORECASE)
WORK_SUBJECTS = frozenset(("occupation", "employer"))
# "I stopped by / at / in …" is a visit, not an end.
_VISIT = r"(?:by|at|in|into|off|over|for|to|near|outside|around|through)\b"
# The verb of an ending that names the subject it ends (first match wins).
_ABOUT = tuple(
    (re.compile(pattern, re.IGNORECASE), frozenset(subjects))
    for pattern, subjects in (
        (r"\b(?:live|living|reside|residing|based)\s+(?:in|at)\b", ("home",)),
        (
            r"\b(?:work|working)\s+(?:at|for)\b|\bno\s+longer\s+with\b|"
            + _JOB
            + r"\s+(?:at|with)\b",
            ("employer",),
        ),
        (r"\b(?:work|working)\s+as\b|" + _JOB + r"\s+as\b", ("occupation",)),
    )
)
# "I don't work there anymore", "I no longer live there": "there" is the place the
# user's current value of the subject names, so it ends that subject whatever its value.
_THERE = tuple(
    (re.compile(pattern, re.IGNORECASE), frozenset(subjects))
    for pattern, subjects in (
        (r"(?:live|living|reside|residing|based)\s+there", ("home",)),
        (r"(?:work|working)\s+there", ("employer",)),
    )
)
# A value that opens on a thought or holds a question is about something else than the
# user: "I don't think the bus stops here anymore", "I'm not sure why it works anymore".
_NOT_ABOUT_USER = re.compile(
    r"^(?:think|believe|know|guess|suppose|expect|feel|sure|say|said|remember|reckon|mean|"
    r"hear|see|understand|reali[sz]e|hope|wonder|doubt|notice)\b"
    r"|\b(?:if|whether|how|why|when|where|what|who|which)\b",
    re.IGNORECASE,
)
_CEASED = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\bi(?:\s+am|'m|\u2019m)\s+not\s+(?:a\s+|an\s+)?" + _END + r"\s+any\s?more\b",
        r"\bi(?:\s+am|'m|\u2019m)?\s+no\s+longer\s+(?:a\s+|an\s+)?" + _END + _STOP,
        r"\bi\s+(?:don't|don\u2019t|do\s+not)\s+" + _END + r"\s+any\s?more\b",
        _QUIT
        + r"(?:quit|stopped|gave\s+up|given\s+up)\s+(?!"
        + _BARE_JOB
        + r"|"
        + _VISIT
        + r")(?:being\s+(?:a\s+|an\s+)?|"
        + _JOB
        + r"\s+(?:as\s+(?:a\s+|an\s+)?|at\s+|with\s+))?"
        + _END
        + _STOP,
    )
)
# Words of a sentence of ending that are not the value ended.
_NOT_A_VALUE = frozenset(
    (
        "a", "an", "the", "my", "our", "in", "at", "for", "with", "as", "to", "of", "on",
        "from", "work", "working", "live", "living", "be", "being", "eat", "eating",
        "drink", "drinking", "job",
    )
)  # fmt: skip
_SUFFIXES = ("ing", "ers", "er", "ists", "ist", "es", "s", "e")
_WORD = re.compile(r"[a-z][a-z'-]*")


def stems(text: str) -> frozenset[str]:
    """The word stems of a value, the words that name no value left out."""
    out = set()
    for word in _WORD.findall(text.casefold()):
        if word in _NOT_A_VALUE:
            continue
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        out.add(word)
    return frozenset(out)


@dataclass(frozen=True)
class Ceased:
    """What a sentence says has ended for the user: the stems of the value it names, or,
    when it names none, the subjects it ends whatever their value."""

    stems: frozenset[str]
    subjects: frozenset[str] = frozenset()  # empty: any subject whose value it names

    def ends(self, subject: str, value: str) -> bool:
        """Whether it ends a current memory that gives `subject` the value `value`."""
        if not self.stems:
            return subject in self.subjects
        if self.subjects and subject not in self.subjects:
            return False
        return bool(self.stems & stems(value))


def _ceased(said: str, value: str) -> Ceased | None:
    """What the ending `said` (its whole match), whose value is `value`, ends."""
    there = next((subjects for verb, subjects in _THERE if verb.fullmatch(value.strip())), None)
    if there is not None:
        return Ceased(frozenset(), there)
    words = stems(value)
    if not words or _NOT_ABOUT_USER.search(value.strip()):
        return None
    about = next((subjects for verb, subjects in _ABOUT if verb.search(said)), frozenset())
    return Ceased(words, about)


def ceased_values(text: str) -> list[Ceased]:
    """What `text` says has ended for the user, in the order said."""
    found = [
        (match.start(), Ceased(frozenset(), WORK_SUBJECTS)) for match in _JOB_ENDED.finditer(text)
    ]
    for pattern in _CEASED:
        for match in pattern.finditer(text):
            ceased = _ceased(match.group(0), match.group("value"))
            if ceased is not None:
                found.append((match.start(), ceased))
    return [ceased for _, ceased in sorted(found, key=lambda item: item[0])]
