"""A memory said by someone the query names ranks higher.

A conversation stored line by line keeps who said each line at its head ("Caroline: I
started painting again"). A question that names a person ("What kind of art does
Caroline make?") asks, more often than not, about what that person said: their own
lines hold their plans, tastes and news, while the other speaker's lines mostly reply.
The words of the question rarely tell the two apart (the name is in every window of
the conversation, so BM25 gives it almost nothing, and the cosine of a short line barely
moves with it), so a candidate whose speaker the query names gets SPEAKER_WEIGHT added
to its score (part `speaker` = 1). It reorders the candidates the two signals found;
it brings none into the pool.

The speaker is the head of the memory's text up to the first colon, when that head is
one to three words, the first starting with a capital letter, within the text's first
SPEAKER_LABEL_CHARS characters ("Caroline", "Dr. Ruiz"); a query names it when one of
the query's capitalised words (not a contraction such as "I'm") is one of the head's
words. A memory without such a head (most of them: a fact, a message on its
own) is never weighed. Computed on the pool's rows in the pool's statement
(`speaker_sql`), from the text's first characters only, so a long memory is not read
whole.

Chosen on both dev sets together; docs/decisions/search-speaker-named.md has the
figures.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from psycopg import sql

if TYPE_CHECKING:
    from memory_app.selectors.search.fusion import Scored
    from memory_app.selectors.search.pool import Candidate

SPEAKER_WEIGHT = 0.2
SPEAKER_LABEL_CHARS = 60

# Capitalised words that open a question or a clause and name nobody.
_NOT_NAMES = frozenset([
    "a", "an", "and", "are", "at", "but", "can", "could", "did", "do", "does", "for",
    "from", "had", "has", "have", "how", "i", "if", "in", "is", "it", "may", "might", "my",
    "of", "on", "or", "shall", "should", "so", "that", "the", "then", "there", "these",
    "this", "those", "to", "was", "we", "were", "what", "when", "where", "which", "who",
    "whom", "whose", "why", "will", "with", "would", "you", "your",
])  # fmt: skip
_WORD = re.compile(r"[^\W\d_][\w'\u2019.-]*")
_POSSESSIVE = re.compile(r"['\u2019]s?$")
_CONTRACTION = re.compile(r"['\u2019](?:d|ll|m|re|t|ve)$", re.IGNORECASE)  # I've, I'm, Don't

# The head of the text up to the first colon: one to three words, the first opening with
# a capital, among the text's first SPEAKER_LABEL_CHARS characters ("Caroline", "Dr.
# Ruiz"; not "I think I'll use the first one"). NULL when the text has none.
_LABEL_WORD = "[^:[:space:][:cntrl:]]"
_LABEL_PATTERN = f"^([[:upper:]]{_LABEL_WORD}*(?: {_LABEL_WORD}+){{0,2}}):"
_SPEAKER = sql.SQL(
    "coalesce(string_to_array(substring(left({content}, {head}) from {pattern}), ' ')"
    " && %(speakers)s::text[], false)"
)


def query_speaker_names(query: str) -> list[str]:
    """The capitalised words of `query` that may name a person, without a possessive
    ending ("Caroline's" -> "Caroline"), in order, each once."""
    names: list[str] = []
    for word in _WORD.findall(query):
        if _CONTRACTION.search(word):
            continue
        name = _POSSESSIVE.sub("", word.rstrip(".-"))
        if len(name) < 2 or not name[0].isupper() or name.lower() in _NOT_NAMES:
            continue
        if name not in names:
            names.append(name)
    return names


def speaker_sql(alias: str) -> sql.Composable:
    """Whether row `alias`'s speaker is among the query's names (`%(speakers)s`)."""
    return _SPEAKER.format(
        content=sql.Identifier(alias, "content"),
        head=sql.Literal(SPEAKER_LABEL_CHARS + 1),
        pattern=sql.Literal(_LABEL_PATTERN),
    )


def apply_speaker_match(
    scored: list[Scored], candidates: Mapping[uuid.UUID, Candidate]
) -> list[Scored]:
    """`scored` with part `speaker` in every hit's parts (1 when the query names the
    memory's speaker) and SPEAKER_WEIGHT times it added to the score."""
    out: list[Scored] = []
    for pk, score, parts in scored:
        named = 1.0 if pk in candidates and candidates[pk].speaker_named else 0.0
        out.append((pk, round(score + SPEAKER_WEIGHT * named, 6), {**parts, "speaker": named}))
    return out
