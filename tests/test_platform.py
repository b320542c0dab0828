"""Health, the OpenAPI schema and docs, the key command, production settings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.django_db
def test_healthz_reports_database_broker_and_embedder() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200, response.content
    checks = response.json()["checks"]
    assert {name: check["ok"] for name, check in checks.items()} == {
        "database": True,
        "broker": True,
        "embedder": True,
    }
    assert "pgvector" in checks["database"]["detail"]
    assert "384" in checks["embedder"]["detail"]


@pytest.mark.django_db
def test_schema_and_docs_are_served_without_a_cdn() -> None:
    client = Client()
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert "/api/v1/sessions" in schema.json()["paths"]
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    external = [url for url in re.findall(r'(?:src|href)="([^"]+)"', html) if "//" in url]
    assert external == []
    assert "swagger-ui" in html


@pytest.mark.django_db
def test_create_api_key_command_prints_a_working_key() -> None:
    out, err = StringIO(), StringIO()
    call_command("create_api_key", "--tenant", "initech", stdout=out, stderr=err)
    secret = out.getvalue().strip()
    assert secret.startswith("eng_")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/sessions").status_code == 200


def test_check_deploy_is_clean_with_production_settings() -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": "x" * 30 + "-production-like-secret-0123456789abcdefghij",
        "DJANGO_ALLOWED_HOSTS": "engram.example.com",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr
    assert "no issues" in result.stdout


def test_every_setting_read_from_the_environment_is_in_env_example() -> None:
    """STYLE rule 6: `.env.example` lists every variable the settings read."""
    names: set[str] = set()
    for path in [*(ROOT / "config" / "settings").glob("*.py"), *(ROOT / "config").glob("*.py")]:
        text = path.read_text()
        names |= set(
            re.findall(r'env_(?:str|int|float|bool|list|int_map|json)\("([A-Z0-9_]+)"', text)
        )
        names |= set(re.findall(r'os\.environ\.get\("([A-Z0-9_]+)"', text))
    listed = set(re.findall(r"^([A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert names, "no settings found: the pattern is stale"
    assert sorted(names - listed) == []


def _devstack_ports(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """The ports `make run` (config.devstack) would start PostgreSQL and Valkey on."""
    from config import devstack

    started: dict[str, int] = {}

    class Fake:
        def __init__(self, data_dir: Path, port: int) -> None:
            self.port = port
            started[type(self).__name__] = port

        def start(self) -> str:
            return f"fake://{self.port}"

    monkeypatch.setattr(devstack, "EmbeddedPostgres", type("Postgres", (Fake,), {}))
    monkeypatch.setattr(devstack, "EmbeddedValkey", type("Valkey", (Fake,), {}))
    monkeypatch.setattr(devstack, "port_is_open", lambda port: False)
    monkeypatch.setattr(devstack, "say", lambda *args: None)
    devstack._start_servers([])
    return started["Postgres"], started["Valkey"]


def test_manage_py_without_database_url_reaches_the_servers_of_make_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run` starts its PostgreSQL and Valkey on ENGRAM_PG_PORT / ENGRAM_VALKEY_PORT;
    a `manage.py` command (create_api_key…) given the same ports and no DATABASE_URL or
    REDIS_URL connects there."""
    for name in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ENGRAM_PG_PORT", "54349")
    monkeypatch.setenv("ENGRAM_VALKEY_PORT", "63849")
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    show = "from django.conf import settings as s; print(s.DATABASE_URL, s.REDIS_URL)"
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", show],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].split() == [
        "postgres://postgres@127.0.0.1:54349/engram",
        "redis://127.0.0.1:63849/0",
    ]
    assert _devstack_ports(monkeypatch) == (54349, 63849)
