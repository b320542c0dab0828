"""Schemathesis over the live schema: every operation, generated valid and invalid inputs,
every check (500s, undocumented statuses, response schema and headers, schema-valid input
refused, schema-invalid input accepted, ignored auth, …). Routes other apps add later are
covered by the same run, since it reads the schema the server serves.

Bounded (tests/api_edge/schemathesis.toml): a few deterministic examples per operation.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memory_app.embedding import embed_text
from sessions_app.services.api_keys import api_key_create, tenant_get_or_create

CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.mark.django_db(transaction=True)
def test_schemathesis_finds_no_failure_over_the_whole_schema(live_server: object) -> None:
    # The first embedding loads the model; do it here, not inside a fuzzed request.
    embed_text("warm up")
    key = api_key_create(tenant=tenant_get_or_create(name="fuzz"), name="fuzz").secret
    url = f"{live_server}/api/schema/"
    cli = Path(sys.executable).with_name("schemathesis")
    result = subprocess.run(
        [str(cli), "--config-file", str(CONFIG), "run", url,
         "--header", f"Authorization: Bearer {key}"],
        capture_output=True,
        text=True,
        timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-3000:]
