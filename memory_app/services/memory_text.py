"""The text keys of a memory: the normalised text that is stored and embedded, the hash
that finds exact duplicates, and the id-like tokens that keep near-duplicates apart."""

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
