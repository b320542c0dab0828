"""A stripped tsvector's text read back into its lexemes.

The pool brings each member's lexemes as `strip(lexical_vector)::text`, `'a' 'b' 'c'`:
PostgreSQL writes that text in a fraction of the time it builds and writes the same
lexemes as an array (`tsvector_to_array`), and splitting it here costs less than
psycopg parsing an array. tsvector's output quotes each lexeme, doubling a quote or a
backslash inside it; a text with neither is split on the separators, any other is read
lexeme by lexeme.
"""

from __future__ import annotations

import re

# One quoted lexeme: any character but a quote or a backslash, or either doubled.
_LEXEME = re.compile(r"'((?:[^'\\]|''|\\\\)*)'")
_UNESCAPE = re.compile(r"''|\\\\")


def tsvector_lexemes(text: str | None) -> tuple[str, ...]:
    """The lexemes of a stripped tsvector's text, in its order; () for none."""
    if not text:
        return ()
    if "''" not in text and "\\" not in text:
        return tuple(text[1:-1].split("' '"))
    return tuple(
        _UNESCAPE.sub(lambda found: found.group()[0], lexeme) for lexeme in _LEXEME.findall(text)
    )
