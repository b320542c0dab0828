"""The text keys of a memory: the normalised text that is stored and embedded, the hash
that finds exact duplicates, and the id-like tokens and content words that keep
near-duplicates apart."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")
# Tokens with a digit in them: ids, order numbers, part numbers, amounts, dates.
_ID_TOKEN = re.compile(r"[\w][\w./-]*\d[\w./-]*|\d[\w./-]*", re.UNICODE)


def normalise_text(text: str) -> str:
    """NFKC, single spaces, trimmed: what we store and embed."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def content_hash(text: str) -> str:
    """Case-insensitive hash of normalised text: "I like tea" == "i like  tea"."""
    return hashlib.sha256(normalise_text(text).casefold().encode()).hexdigest()


def id_tokens(text: str) -> frozenset[str]:
    """The id-like tokens of a text. Two memories that differ in them ("order A-1" and
    "order B-2") are different facts however close their vectors are, so never merged."""
    return frozenset(token.strip("./-").casefold() for token in _ID_TOKEN.findall(text))


# The words that reverse a statement: "I do not prefer aisle seats", "I don't like jazz",
# "I never drink coffee", "I no longer eat meat", "I have no pets", "I can't swim". A
# "no" that answers ("No, I prefer the aisle") reverses nothing.
_NEGATION = re.compile(r"\b(?:not|never|cannot|no(?!\s*[,.!?;:]))\b|n['\u2019]t\b", re.IGNORECASE)


def negated(text: str) -> bool:
    """Whether a text says the reverse of itself without its negations: an odd number of
    them ("I never said I don't like jazz" is two, so not reversed)."""
    return len(_NEGATION.findall(text)) % 2 == 1


def reverse_each_other(first: str, second: str) -> bool:
    """Whether one text negates what the other states ("I prefer aisle seats" / "I do not
    prefer aisle seats"): however close their vectors and words, they are opposite
    statements, never one merged into the other."""
    return negated(first) != negated(second)


_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
# Words that carry no content of their own: two texts that differ only in these say the
# same thing ("I went running this morning" / "I went running this morning too!").
_FUNCTION_WORDS = frozenset(
    (
        "a", "an", "the", "and", "or", "but", "so", "to", "of", "in", "on", "at", "for",
        "with", "from", "by", "as", "is", "are", "was", "were", "be", "been", "am", "i",
        "i'm", "i've", "i'd", "me", "my", "mine", "we", "our", "us", "you", "your", "he",
        "she", "it", "they", "them", "his", "her", "its", "their", "this", "that", "these",
        "those", "there", "here", "too", "also", "very", "really", "just", "now", "still",
        "then", "than", "do", "does", "did", "have", "has", "had", "will", "would", "can",
        "could", "should", "not", "no", "yes",
    )
)  # fmt: skip


def content_words(text: str) -> frozenset[str]:
    """The words of a text that say something, case-folded, a plural "s" dropped."""
    out = set()
    for word in _WORD.findall(text.casefold()):
        if word not in _FUNCTION_WORDS:
            out.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return frozenset(out)


def say_different_things(first: str, second: str) -> bool:
    """Whether each text says something the other does not: "My sister Ana had a baby"
    and "My sister Ana is a pilot" are two facts about Ana, however close their vectors;
    "I have a cat" and "I have a cat named Biscuit" are one, told in more detail."""
    words_first, words_second = content_words(first), content_words(second)
    return bool(words_first - words_second) and bool(words_second - words_first)
