"""The offline extractor: stated facts about the user and explicit durable preferences.

A message is cut into sentences, then into clauses at a new first-person subject ("I live
in Lisbon and I work at Initech" holds two). A sentence that is a question or opens on a
condition, a wish or a hedge is skipped whole. In a clause, a rule of `patterns` must
match right after the lead-in words, so that "she said I love it", "if I lived in Paris"
and "do you think I'm allergic" state nothing. Then the value is cut where the clause
moves on ("because…", ", which…") and checked for what it names: "I love jazz" is a
preference, "I love that!", "I like these ideas" and "I like how you put it" are
reactions to the conversation and are dropped.

The memory's content is the user's own clause from its subject on; its summary is the
same in the third person; a relative named with more said of them ("my sister Ana is a
pilot") keeps what is said ("User's sister Ana is a pilot"), not only the name.

An explicit request to remember ("Remember that I'm allergic to penicillin", "please
note that my flight lands at 6") is read without its wrapper, so the rules see the
statement inside; when none matches it, the statement is kept as it was said.
"""

from __future__ import annotations

import re
from typing import Any

from memory_app.extraction.attributes import ATTRIBUTE_RULES
from memory_app.extraction.candidates import Candidate
from memory_app.extraction.patterns import (
    HYPOTHETICAL_START,
    LANGUAGES,
    LEAD_IN,
    RULES,
    Rule,
    word_set,
)
from memory_app.models import MemoryType

MAX_MESSAGE_CHARS = 8000
MAX_CANDIDATES = 20

_SENTENCES = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)(?<=[.!?…])[\s\"')]+|\s*\n+\s*"
)
_CLAUSES = re.compile(
    r"\s*;\s*|(?<!\bme)\s*(?::|\s[-\u2013\u2014]\s|,?\s+(?:and|but|so|plus|also|though|while|whereas)\b|,)\s*"
    r"(?=(?:I|I'm|I've|I'd|Im|my|we|please)\b)",
    re.IGNORECASE,
)
# A request to remember what follows, when a statement of the user's follows.
_REMEMBER = re.compile(
    r"(?:please\s+)?(?:remember|note|keep\s+in\s+mind|don't\s+forget|do\s+not\s+forget)"
    r"(?:\s+that)?[\s,:]+(?=(?:I|I'm|I've|I'd|my|we|we're|our)\b)",
    re.IGNORECASE,
)
_TRAILING_PUNCTUATION = re.compile(r"[\s.!?…,;:~*)(\"'`-]+$|\s+[:;]-?[()DPp]$")
# Where a value stops: the clause goes on to a reason, a condition or a second thought.
_VALUE_END = re.compile(
    r"\s*(?:[;()]|(?<!Dr)(?<!Mr)(?<!Ms)(?<!Mrs)(?<!St)(?<!Prof)\.\s|\.\.\.|\s[-\u2013\u2014]\s|!|\?)|\s+(?:because|since|'cause|cause|cuz|as\s+(?:it|they|"
    r"I|she|he|we)|which|who|that|but|though|although|if|when|whenever|unless|so|"
    r"and\s+(?:I|I'm|it|that|they|he|she|we|my|it's)|lol|haha+|lmao|tbh|btw|rn|"
    r"for\s+(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|many|several|"
    r"the\s+(?:past|last))\s+(?:years?|months?|weeks?|days?|decades?|while)|"
    r"for\s+(?:ages|years|decades|a\s+while|life|now)|since\s+\d{4}|"
    r"(?:last|this|next)\s+(?:year|month|week|summer|winter|spring|fall|autumn)|"
    r"(?:a|two|three|few|a\s+few|several)\s+(?:years?|months?|weeks?)\s+ago|in\s+\d{4})\b",
    re.IGNORECASE,
)
_COMMA = re.compile(r",")
_COMMA_NOT_NAME = re.compile(r",(?!\s*[A-Z][a-z])")
_TRAILING_FILLER = re.compile(
    r"\s+(?:too|as\s+well|a\s+lot|so\s+much|very\s+much|lots|now|right\s+now|these\s+days|"
    r"nowadays|currently|really|though|anyway|actually|honestly|at\s+all|the\s+most|originally|"
    r"more\s+than\s+anything|tbh|recently|atm|at\s+the\s+moment|haha+|lol|x+d?)$",
    re.IGNORECASE,
)

# A value naming one of these is about the conversation or someone else, not a taste.
_PRONOUNS = word_set(
    "you your yours you're u ur it it's its this that these those them they he she him "
    "her his their theirs we us our ours what's how what"
)
_BAD_FIRST = _PRONOUNS | word_set(
    "the my a an me when whenever where why who whom which whatever everything anything "
    "something nothing all both each every such some any so too if because lots much more "
    "less very as with for about at in on out up back by here there what whether seeing "
    "hearing knowing getting talking chatting being ya lol haha yeah yes no not"
)
# Nouns that make "I like/love X" a reaction to the conversation, not a taste.
_CONVERSATION_NOUNS = word_set(
    "idea ideas suggestion suggestions tip tips advice recommendation recommendations "
    "answer point explanation reply message chat conversation question thought thoughts "
    "post pic pics photo photos picture pictures plan list option options one ones vibe "
    "vibes way attitude energy approach look sound sounds update news story name response "
    "help input feedback"
)
_THE_OK = word_set(
    "beach outdoors mountains sea ocean countryside cold heat rain snow winter summer "
    "autumn fall spring sun sunshine theater theatre opera ballet cinema movies gym "
    "mornings morning night quiet"
)
_BAD_INFINITIVES = word_set(
    "hear see know say think help thank share chat talk imagine be get have let tell ask "
    "try check meet keep hang catch"
)
_NAME_STOP = word_set(
    "I I'm The It This That And But So We He She They You Is Was Has Just Also Not Mr Mrs "
    "Ms Dr My Our Your His Her Their Who Which"
)
_PLACE_STOP = word_set(
    "the here there it this that my your his her their our denial peace fear hope moment head"
)
# Words before a job title that make "I'm a X" a judgement or a joke, not an occupation.
_EVALUATIVE = word_set(
    "good great bad terrible awful decent horrible amazing big huge lousy better worse "
    "best worst pretty natural born total complete real true proud ai virtual language "
    "wannabe aspiring future former ex frustrated struggling"
)
_DANGLING = word_set("to a an the of with for about in on at and or my by from")
_A_GOOD = word_set("good nice great proper strong long hot cold quiet")
_TITLES = word_set("Dr Dr. Mr Mr. Mrs Mrs. Ms Ms. Prof Prof.")
_NOT_A_STUDY = word_set("for to hard tonight now with all the this that it a an late")
_NOT_OWNED = word_set("lot bit little hard tough")


def extract_heuristic(message: str) -> list[Candidate]:
    """Candidates for the stated facts and durable preferences in a user's message."""
    out: list[Candidate] = []
    seen: set[str] = set()
    text = message[:MAX_MESSAGE_CHARS].replace("\u2019", "'").replace("\u2018", "'")
    for sentence in _SENTENCES.split(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        for candidate in _sentence_candidates(_strip_lead_in(sentence)):
            if candidate.summary.lower() not in seen:
                seen.add(candidate.summary.lower())
                out.append(candidate)
    return out[:MAX_CANDIDATES]


def _sentence_candidates(sentence: str) -> list[Candidate]:
    """The candidates of one sentence's clauses; a request to remember without a wrapper,
    and kept as said when no rule reads it (module docstring)."""
    remember = _REMEMBER.match(sentence)
    body = sentence[remember.end() :] if remember else sentence
    if HYPOTHETICAL_START.match(body):
        return []
    found = [
        candidate
        for clause in _CLAUSES.split(body)
        if (candidate := _clause_candidate(_strip_lead_in(clause.strip()))) is not None
    ]
    if remember and not found:
        said = _TRAILING_PUNCTUATION.sub("", body)[:300]
        found.append(
            Candidate(
                type=MemoryType.FACT,
                content=said,
                summary=third_person(f"User asked to remember: {said}")[:300],
                tags=["fact", "remember"],
                structured={"remember": said},
                importance=0.8,
                confidence=0.9,
            )
        )
    return found


def _strip_lead_in(text: str) -> str:
    return text[LEAD_IN.match(text).end() :]  # type: ignore[union-attr]  # may match empty


def _clause_candidate(clause: str) -> Candidate | None:
    clause = _TRAILING_PUNCTUATION.sub("", clause)
    if not clause:
        return None
    for rule in (*ATTRIBUTE_RULES, *RULES):
        match = rule.pattern.match(clause)
        if match is None:
            continue
        value = value_ok(rule.kind, match.group("value") or "")
        if value is None:
            continue
        return _candidate(rule, match, value, clause)
    return None


def _candidate(rule: Rule, match: re.Match[str], value: str, clause: str) -> Candidate:
    groups: dict[str, Any] = {k: (v or "").strip() for k, v in match.groupdict().items()}
    groups["value"] = value
    verb = re.sub(r"\s+", " ", groups.get("verb", "")).lower()
    groups["verb"] = verb
    groups["verb_s"] = _third_person(verb)
    groups["rel"] = groups.get("rel", "").lower()
    groups["what"] = _trim(groups.get("what", ""), "thing")
    summary = third_person(rule.summary.format(**groups))
    said = _said_of_relative(rule, match, value)
    if said:
        summary = third_person(f"User's {groups['rel']} {value} {said}")
    if groups.get("employer"):
        summary += f" at {_trim(groups['employer'], 'place')}"
    structured: dict[str, Any] = {rule.key: value}
    if groups["rel"]:
        structured["relation"] = groups["rel"]
    if groups["what"]:
        structured["category"] = groups["what"]
    return Candidate(
        type=rule.type,
        content=clause[:300],
        summary=summary[:300],
        tags=list(rule.tags),
        structured=structured,
        importance=rule.importance,
        confidence=rule.confidence,
    )


def _said_of_relative(rule: Rule, match: re.Match[str], name: str) -> str:
    """What a clause that names a relative or a pet says of them after the name ("Ana
    just had a baby girl named Rita": "just had a baby girl named Rita"), up to where the
    clause moves on; empty when it only names them."""
    if rule.kind != "name" or not match.groupdict().get("rel"):
        return ""
    rest = match.group("value").split()[len(name.split()) :]
    if not rest or rest[0].lower().split("'")[0] in _PRONOUNS:  # ", he'll pick it up"
        return ""
    return _trim(" ".join(rest), "thing")


def _third_person(verb: str) -> str:
    if not verb or verb.startswith(("can't", "cannot")):
        return verb
    head, _, rest = verb.partition(" ")
    if head.endswith(("sh", "ch", "o", "s", "x")):
        head += "es"
    elif head.endswith("y") and head[-2:-1] not in "aeiou":
        head = head[:-1] + "ies"
    else:
        head += "s"
    return f"{head} {rest}".strip()


def _trim(value: str, kind: str) -> str:
    """The value up to where the clause moves on, without trailing fillers."""
    value = value.strip()
    end = _VALUE_END.search(value)
    if end is not None:
        value = value[: end.start()]
    comma = (_COMMA_NOT_NAME if kind in ("place", "proper", "name") else _COMMA).search(value)
    if comma is not None:
        value = value[: comma.start()]
    previous = None
    while previous != value:
        previous = value
        value = _TRAILING_FILLER.sub("", _TRAILING_PUNCTUATION.sub("", value))
    return value.strip()


def value_ok(kind: str, raw: str) -> str | None:
    """The value a rule captured, cut and checked for its kind; None when it names
    nothing durable (a pronoun, the conversation, an evaluation)."""
    if kind == "none":
        return ""
    value = _trim(raw, kind)
    if kind == "name":  # a name is the capitalised words it starts with
        value = " ".join(_leading_capitalised(value.split())[:4])
    words = value.split()
    if not words or len(words) > 12 or _mentions_the_listener(words):
        return None
    lower = [word.lower().strip(".,!'\"") for word in words]
    if lower[-1] in _DANGLING:  # cut mid-phrase: "escaping to"
        return None
    check = _CHECKS.get(kind)
    if check is not None and not check(words, lower):
        return None
    return value


def _leading_capitalised(words: list[str]) -> list[str]:
    out: list[str] = []
    if len(words) > 1 and words[0] in _TITLES and words[1][:1].isupper():
        return [words[0].rstrip("."), *_leading_capitalised(words[1:])]
    for word in words:
        if not word[:1].isupper() or word.strip(".,!") in _NAME_STOP:
            break
        out.append(word.strip(".,!"))
    return out


_FIRST_PERSON = {
    "my": "their",
    "me": "them",
    "myself": "themselves",
    "i'm": "they're",
    "i": "they",
    "mine": "theirs",
}
_FIRST_PERSON_WORD = re.compile(r"\b(?:my|me|myself|I'm|I|mine)\b", re.IGNORECASE)


def third_person(text: str) -> str:
    """A summary speaks of the user: "with my dog" becomes "with their dog"."""
    return _FIRST_PERSON_WORD.sub(lambda m: _FIRST_PERSON[m.group(0).lower()], text)


def _mentions_the_listener(words: list[str]) -> bool:
    return any(
        word.lower().strip(".,!'\"") in ("you", "your", "yours", "u", "ur") for word in words
    )


def _name_ok(words: list[str], lower: list[str]) -> bool:
    name = words[1:] if words[0] + "." in _TITLES and len(words) > 1 else words
    return name[0][:1].isupper() and name[0] not in _NAME_STOP and len(words) <= 4


def _place_ok(words: list[str], lower: list[str]) -> bool:
    if lower[0] in _PLACE_STOP and not (len(words) > 1 and words[1][:1].isupper()):
        return False
    return len(words) <= 6 and not any(word in _PRONOUNS for word in lower)


def _proper_ok(words: list[str], lower: list[str]) -> bool:
    first = words[1] if lower[0] == "the" and len(words) > 1 else words[0]
    return first[:1].isupper() and first not in _NAME_STOP and len(words) <= 6


def _thing_ok(words: list[str], lower: list[str]) -> bool:
    first = lower[0]
    if first == "to":
        return len(lower) > 1 and lower[1] not in _BAD_INFINITIVES and _no_pronoun(lower)
    if first == "the":
        return len(words) > 1 and (lower[1] in _THE_OK or words[1][:1].isupper())
    if first in ("a", "an") and len(lower) > 2 and lower[1] in _A_GOOD:
        return _no_pronoun(lower)
    if first in _BAD_FIRST:
        return False
    return _no_pronoun(lower) and not any(word in _CONVERSATION_NOUNS for word in lower)


def _habit_ok(words: list[str], lower: list[str]) -> bool:
    return _no_pronoun(lower) and lower[0] not in _BAD_FIRST - {"the", "my", "a", "an"}


def _rather_ok(words: list[str], lower: list[str]) -> bool:
    if lower[0] == "not":
        return len(lower) > 1 and _no_pronoun(lower)
    return _thing_ok(words, lower)


def _no_pronoun(lower: list[str]) -> bool:
    return not any(word in _PRONOUNS for word in lower)


_CHECKS = {
    "name": _name_ok,
    "place": _place_ok,
    "proper": _proper_ok,
    "thing": _thing_ok,
    "habit": _habit_ok,
    "rather": _rather_ok,
    "free": lambda words, lower: len(words) <= 12,
    "amount": lambda words, lower: any(char.isdigit() for char in "".join(words)),
    "language": lambda words, lower: any(word in LANGUAGES for word in lower),
    "occupation": lambda words, lower: lower[0] not in _EVALUATIVE,
    "business": lambda words, lower: _no_pronoun(lower),
    "study": lambda words, lower: lower[0] not in _NOT_A_STUDY and _no_pronoun(lower),
    "owned": lambda words, lower: (
        len(lower) > 1 and lower[1] not in _NOT_OWNED and _no_pronoun(lower)
    ),
}
