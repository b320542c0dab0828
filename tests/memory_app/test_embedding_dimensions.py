"""The embedding size is one setting: the memory column, the searches' halfvec cast and
the embedders all follow ENGRAM_EMBEDDING_DIMENSIONS, and a size the local model cannot
produce stops the server at start."""

from __future__ import annotations

from django.conf import settings
from django.test import override_settings
from psycopg import sql

from memory_app.checks import check_embedding_settings
from memory_app.embedding import OpenAIEmbedder, embedder
from memory_app.models import Memory
from memory_app.selectors.search import SearchWhere
from memory_app.selectors.search.vector import nearest_sql


def test_column_and_embedder_follow_the_setting() -> None:
    assert Memory._meta.get_field("embedding").dimensions == settings.ENGRAM_EMBEDDING_DIMENSIONS
    assert embedder().dimensions == settings.ENGRAM_EMBEDDING_DIMENSIONS


def test_search_casts_to_the_column_size() -> None:
    true = sql.SQL("TRUE")
    where = SearchWhere(scope=true, visible=true, branches=(true,), tenant_id=1)
    expected = f"halfvec({settings.ENGRAM_EMBEDDING_DIMENSIONS})"
    statement = nearest_sql(where).as_string(None)  # no database: no quoting to negotiate
    assert f"m.embedding::{expected} <=> %(q)s::{expected}" in statement


def test_remote_embedder_expects_the_configured_size() -> None:
    with override_settings(ENGRAM_EMBEDDING_DIMENSIONS=768):
        remote = OpenAIEmbedder("m", "http://127.0.0.1:9", "", 8)
    assert remote.dimensions == 768


def test_local_model_with_another_size_is_a_startup_error() -> None:
    with override_settings(ENGRAM_EMBEDDING_BACKEND="local", ENGRAM_EMBEDDING_DIMENSIONS=768):
        errors = check_embedding_settings()
    assert [error.id for error in errors] == ["engram.E012"]
    with override_settings(ENGRAM_EMBEDDING_BACKEND="openai", ENGRAM_EMBEDDING_DIMENSIONS=768):
        assert check_embedding_settings() == []
    assert check_embedding_settings() == []
