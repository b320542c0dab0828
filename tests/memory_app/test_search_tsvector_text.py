"""A stripped tsvector's text read back into its lexemes, held to PostgreSQL's own
unnest() of the same tsvector: plain lexemes, and lexemes holding a quote, a backslash,
the separator's characters, spaces and non-ASCII letters."""

from __future__ import annotations

import pytest
from django.db import connection

from memory_app.selectors.search.tsvector_text import tsvector_lexemes

pytestmark = pytest.mark.django_db

TSVECTORS = [
    "",
    "plain",
    "caroline:1 melani:2 race:3,7 charity:4",
    "'it''s':1 'a\\\\b':2 plain:3",  # a quote and a backslash inside lexemes
    "'o'' ''k':1 other:2",  # a lexeme that holds the separator's characters
    "'two words':1 'trailing\\\\':2 '''':3",
    "café:1 日本語:2 'ü x':3",
]


def _postgres(tsvector: str) -> tuple[str, tuple[str, ...]]:
    """The stripped tsvector's text and its lexemes, as PostgreSQL reads them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT strip(%(v)s::tsvector)::text,"
            " coalesce(array(SELECT lexeme FROM unnest(%(v)s::tsvector)), '{}')",
            {"v": tsvector},
        )
        text, lexemes = cursor.fetchone()
    return text, tuple(lexemes)


@pytest.mark.parametrize("tsvector", TSVECTORS)
def test_the_text_reads_back_into_postgresql_s_lexemes(tsvector: str) -> None:
    text, lexemes = _postgres(tsvector)
    assert tsvector_lexemes(text) == lexemes


def test_no_text_no_lexemes() -> None:
    assert tsvector_lexemes(None) == ()
    assert tsvector_lexemes("") == ()
