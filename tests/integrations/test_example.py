"""`examples/agent_loop.py` runs as a user would run it: its own process, configured by
the environment, against the live server and a loopback OpenAI-compatible model."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from django.conf import settings

from sessions_app.models import ChatSession
from sessions_app.services.api_keys import IssuedKey
from tests.integrations.loopback import FakeLLM


def test_the_example_agent_loop_runs(
    live_server: Any, live_key: IssuedKey, fake_llm: FakeLLM
) -> None:
    env = {
        **os.environ,
        "ENGRAM_URL": live_server.url,
        "ENGRAM_API_KEY": live_key.secret,
        "OPENAI_BASE_URL": fake_llm.url + "/v1",
        "OPENAI_API_KEY": "sk-loopback",
    }
    example = settings.BASE_DIR / "examples" / "agent_loop.py"
    assert len(example.read_text().splitlines()) < 80
    run = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "cart: ['ACER-A5']" in run.stdout
    session = ChatSession.objects.get(external_session_id="example-chat-1")
    assert session.turn_count == 2
    assert len(fake_llm.served) == 1
    served = fake_llm.served[0]
    assert session.total_input_tokens == served.input_tokens
    assert session.total_output_tokens == served.output_tokens
    assert f"spend: {served.input_tokens + served.output_tokens} tokens" in run.stdout
