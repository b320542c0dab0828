"""Schemathesis over the live schema: every operation, generated valid and invalid inputs,
every check (500s, undocumented statuses, response schema and headers, schema-valid input
refused, schema-invalid input accepted, ignored auth, …). Routes other apps add later are
covered by the same run, since it reads the schema the server serves.

Bounded by examples per operation (tests/api_edge/schemathesis.toml). The seed is new on
every run and printed, so each run explores other inputs and a failure can be replayed:

    ENGRAM_SCHEMATHESIS_SEED=<seed> .venv/bin/python -m pytest tests/api_edge/test_schemathesis.py

ENGRAM_SCHEMATHESIS_EXAMPLES overrides the examples per operation (e.g. 100 for a deeper
run than the suite's).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from memory_app.embedding import embed_text
from sessions_app.services.api_keys import api_key_create, tenant_get_or_create

CONFIG = Path(__file__).with_name("schemathesis.toml")


def _seed() -> int:
    chosen = os.environ.get("ENGRAM_SCHEMATHESIS_SEED")
    return int(chosen) if chosen else random.SystemRandom().randrange(2**32)


@pytest.mark.django_db(transaction=True)
def test_schemathesis_finds_no_failure_over_the_whole_schema(live_server: object) -> None:
    # The first embedding loads the model; do it here, not inside a fuzzed request.
    embed_text("warm up")
    key = api_key_create(tenant=tenant_get_or_create(name="fuzz"), name="fuzz").secret
    url = f"{live_server}/api/schema/"
    cli = Path(sys.executable).with_name("schemathesis")
    seed = _seed()
    replay = f"replay with ENGRAM_SCHEMATHESIS_SEED={seed}"
    print(f"schemathesis seed {seed} ({replay})")  # shown with -s, and in the failure
    options = ["--seed", str(seed)]
    examples = os.environ.get("ENGRAM_SCHEMATHESIS_EXAMPLES")
    if examples:
        options += ["--max-examples", examples]
    result = subprocess.run(
        [str(cli), "--config-file", str(CONFIG), "run", url, *options,
         "--header", f"Authorization: Bearer {key}"],
        capture_output=True,
        text=True,
        timeout=3000,
    )  # fmt: skip
    assert result.returncode == 0, (
        f"schemathesis seed {seed}: {replay}\n" + result.stdout[-20000:] + result.stderr[-3000:]
    )
