"""The embedded servers that `make run` uses keep their data across a stop and a start."""

from __future__ import annotations

from pathlib import Path

import psycopg

from config.embedded import EmbeddedPostgres, free_port, shared_buffers_mb


def test_embedded_postgres_restarts_on_its_own_data(tmp_path: Path) -> None:
    server = EmbeddedPostgres(tmp_path / "pgdata", free_port())
    try:
        url = server.start()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (42)")
        server.stop()
        url = server.start()  # a second `make run`
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT n FROM kept").fetchone() == (42,)
        assert (tmp_path / "pgdata").stat().st_mode & 0o077 == 0
    finally:
        server.stop()


def test_the_buffer_pool_is_a_quarter_of_memory_within_bounds(tmp_path: Path) -> None:
    gib = 1 << 30
    assert shared_buffers_mb(24 * gib) == 6144
    assert shared_buffers_mb(256 * gib) == 8192  # beyond ~8 GB PostgreSQL gains little
    assert shared_buffers_mb(gib // 4) == 128
    server = EmbeddedPostgres(tmp_path / "pgdata", free_port())
    try:
        with psycopg.connect(server.start(), autocommit=True) as conn:
            shown = conn.execute(
                "SELECT setting::int * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'"
            ).fetchone()
        assert shown == (shared_buffers_mb(),)
    finally:
        server.stop()
