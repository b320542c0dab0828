"""The TypeScript client (`clients/typescript`): `npm ci && npm test` against a live Engram,
with a loopback OpenAI-compatible server for the `openai` and `ai` packages and a proxy
that drops the answer of the first turn POST. Node 20 and npm are required: without them
this test fails, saying so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db.models import Sum
from django.test import Client

from sessions_app.models import ChatSession
from sessions_app.services.api_keys import IssuedKey
from tests.integrations.loopback import FakeLLM, serve_dropping_proxy

PACKAGE = Path(settings.BASE_DIR) / "clients" / "typescript"


def _npm() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("The TypeScript client's tests need Node.js 20+ and npm on PATH.")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    if int(version.strip().lstrip("v").split(".")[0]) < 20:
        pytest.fail(f"The TypeScript client's tests need Node.js 20+, found {version.strip()}.")
    return npm


def _run(npm: str, *args: str, env: dict[str, str] | None = None) -> str:
    run = subprocess.run(
        [npm, *args, "--no-audit", "--no-fund"],
        cwd=PACKAGE,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, (
        f"npm {' '.join(args)} failed:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    )
    return run.stdout


def test_npm_test_passes_against_the_live_server(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey, fake_llm: FakeLLM
) -> None:
    npm = _npm()
    _run(npm, "ci")
    first_turn_post = {"done": False}

    def drop_first_turn(method: str, path: str) -> bool:
        if method == "POST" and path.endswith("/turns") and not first_turn_post["done"]:
            first_turn_post["done"] = True
            return True
        return False

    with serve_dropping_proxy(live_server.url, drop_first_turn) as proxy:
        env = {
            **os.environ,
            "ENGRAM_URL": live_server.url,
            "ENGRAM_API_KEY": live_key.secret,
            "ENGRAM_OTHER_API_KEY": other_live_key.secret,
            "ENGRAM_DROPPING_URL": proxy.url,
            "FAKE_LLM_URL": fake_llm.url,
        }
        output = _run(npm, "test", env=env)
    assert "# fail 0" in output and "# pass 4" in output, output[-3000:]
    assert len(proxy.dropped) == 1  # the retry test did lose an answer
    # Every token the loopback model served reached a session, and no more (the retry
    # test's hand-made step adds its 120 input tokens).
    sums = ChatSession.objects.filter(tenant=live_key.api_key.tenant_id).aggregate(
        input=Sum("total_input_tokens"), output=Sum("total_output_tokens")
    )
    assert sums["input"] == fake_llm.totals()["input_tokens"] + 120
    assert sums["output"] == fake_llm.totals()["output_tokens"] + 30


@pytest.mark.django_db
def test_the_typescript_types_match_the_servers_schema(tmp_path: Path) -> None:
    """`src/schema.ts` is generated from the OpenAPI schema; regenerate it (`npm run
    generate` with ENGRAM_SCHEMA) when the API changes."""
    npm = _npm()
    if not (PACKAGE / "node_modules" / ".bin" / "openapi-typescript").exists():
        _run(npm, "ci")
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    (tmp_path / "openapi.json").write_text(json.dumps(schema))
    out = tmp_path / "schema.ts"
    subprocess.run(
        [
            str(PACKAGE / "node_modules" / ".bin" / "openapi-typescript"),
            str(tmp_path / "openapi.json"),
            "--default-non-nullable",
            "false",
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert out.read_text() == (PACKAGE / "src" / "schema.ts").read_text(), (
        "clients/typescript/src/schema.ts is stale: ENGRAM_SCHEMA=<schema.json> npm run generate"
    )
