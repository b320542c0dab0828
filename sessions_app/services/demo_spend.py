"""Demo spend: sessions with turns and steps across several agents and models, recorded
through the real services (so totals, prices and budgets are what production computes).
Deterministic: the same demo every time."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from sessions_app.models import ChatSession, Tenant
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts, normalise_usage


@dataclass(frozen=True)
class DemoAgent:
    agent_id: str
    users: tuple[str, ...]
    pipeline: tuple[tuple[str, str], ...]  # (step_type, model)


AGENTS = (
    DemoAgent(
        "shop-assistant",
        ("alice", "bob"),
        (
            ("intent", "gemini-1.5-flash"),
            ("filter", "gemini-1.5-flash"),
            ("response", "gemini-1.5-pro"),
        ),
    ),
    DemoAgent(
        "support-bot",
        ("carol", "dave"),
        (("intent", "gpt-4o-mini"), ("retrieval", ""), ("response", "gpt-4o")),
    ),
    DemoAgent(
        "research-agent",
        ("erin",),
        (("plan", "claude-sonnet-4-5"), ("search", "local-llama-3-8b"), ("answer", "o3")),
    ),
)
USER_MESSAGES = [
    "Find laptops under $1000",
    "Tell me about the first one",
    "Compare it with the HP",
    "Add the Dell to my list",
    "What's in my cart?",
    "Any cheaper option with 16GB RAM?",
]


def _step(rng: random.Random, step_type: str, model: str) -> StepInput:
    """Counts as providers report them: Claude as an Anthropic usage object with cache
    reads, OpenAI models as Chat Completions usage, the rest as explicit counts."""
    prompt = rng.randint(120, 1600)
    completion = rng.randint(15, 400)
    usage: dict[str, Any] | None = None
    if not model:
        counts = TokenCounts()
    elif model.startswith("claude"):
        cache_read = rng.randint(0, 1200)
        usage = {
            "input_tokens": prompt,
            "output_tokens": completion,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": 0 if cache_read else rng.randint(200, 900),
        }
        counts = normalise_usage(usage)
    elif model.startswith(("gpt", "o3")):
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": rng.randint(0, prompt // 2)},
            "completion_tokens_details": {
                "reasoning_tokens": rng.randint(0, completion) if model == "o3" else 0
            },
        }
        counts = normalise_usage(usage)
    else:
        counts = TokenCounts(input_tokens=prompt, output_tokens=completion)
    return StepInput(
        step_type=step_type,
        model=model,
        counts=counts,
        duration_ms=rng.randint(80, 2400),
        usage_raw=usage,
    )


def demo_spend_load(*, tenant: Tenant, seed: int = 2100) -> list[ChatSession]:
    """Two sessions per agent user, 2 to 6 turns each; one session runs over its budget."""
    rng = random.Random(seed)
    sessions = []
    for agent in AGENTS:
        for user_id in agent.users:
            for index in range(2):
                over_budget = agent.agent_id == "research-agent" and index == 1
                session = session_create(
                    tenant=tenant,
                    user_id=user_id,
                    agent_id=agent.agent_id,
                    state={"stage": "browsing"},
                    budget_tokens=4000 if over_budget else None,
                    external_session_id=f"demo-{agent.agent_id}-{user_id}-{index}",
                )
                for turn_index in range(rng.randint(2, 6)):
                    turn_record(
                        tenant=tenant,
                        session_id=session.pk,
                        user_message=USER_MESSAGES[turn_index % len(USER_MESSAGES)],
                        assistant_response="(demo answer)",
                        intent_data={"intent": "demo"},
                        state={"stage": "browsing", "turn": turn_index + 1},
                        steps=[_step(rng, kind, model) for kind, model in agent.pipeline],
                    )
                sessions.append(session)
    return sessions
