"""B1's floor: the least SQL that records a turn, one transaction issued with psycopg:
update the session's totals (returning the turn number), insert the turn, insert its
steps, commit.

It is a lower bound on the work of `POST …/turns`, not an alternative implementation: it
skips authentication, validation, pricing lookups (the steps are priced once, up front),
the budget check, the context snapshot and the response body.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import psycopg

FLOOR_SESSION_SQL = """
UPDATE chat_session SET
    status = 'active', turn_count = turn_count + 1, last_turn_number = last_turn_number + 1,
    total_input_tokens = total_input_tokens + %(input)s,
    total_output_tokens = total_output_tokens + %(output)s,
    total_cost_usd = total_cost_usd + %(cost)s, total_calls = total_calls + %(calls)s,
    total_duration_ms = total_duration_ms + %(duration)s,
    last_active_at = now(), updated_at = now(),
    expires_at = now() + make_interval(secs => ttl_seconds)
WHERE id = %(session)s
RETURNING last_turn_number, tenant_id, user_id, agent_id
"""
FLOOR_TURN_SQL = """
INSERT INTO chat_turn (
    tenant_id, session_id, turn_number, user_message, assistant_response, intent_data,
    reasoning, metadata, state_before, state_after, context_after, input_tokens,
    output_tokens, cached_tokens, reasoning_tokens, cost_usd, call_count, error_count,
    unpriced_calls, duration_ms, compacted, rolled_back, created_at, occurred_at)
VALUES (%(tenant)s, %(session)s, %(number)s, %(user_message)s, %(assistant_response)s,
        %(intent)s, '', '{}', '{}', '{}', '{}', %(input)s, %(output)s, 0, 0, %(cost)s,
        %(calls)s, 0, 0, %(duration)s, false, false, now(), now())
RETURNING id
"""
FLOOR_STEP_ROW = (
    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 0, 0, 0, %s, false, %s, true, NULL, now())"
)


def floor_steps_sql(count: int) -> str:
    """One INSERT of `count` steps."""
    return (
        "INSERT INTO turn_step (tenant_id, turn_id, session_id, user_id, agent_id, step_order, "
        "step_type, model, input_tokens, output_tokens, cached_tokens, cache_write_tokens, "
        "reasoning_tokens, cost_usd, price_missing, duration_ms, success, error, created_at) "
        "VALUES " + ", ".join([FLOOR_STEP_ROW] * count)
    )


def step_costs(steps: list[dict[str, Any]]) -> list[Decimal]:
    """Priced once, in Python, with the same table the service uses."""
    from sessions_app.hooks import StepUsage, price_step
    from sessions_app.services.turn_totals import COST_PRECISION
    from sessions_app.usage import TokenCounts

    at = datetime.now(UTC)
    costs = []
    for step in steps:
        cost = price_step(
            StepUsage(
                str(step["model"]),
                TokenCounts(
                    input_tokens=int(step["input_tokens"]),
                    output_tokens=int(step["output_tokens"]),
                ),
                at,
            )
        )
        assert cost is not None, f"no price for {step['model']}"
        costs.append(cost.quantize(COST_PRECISION))
    return costs


class FloorWriter:
    """One psycopg connection; one call = `body` (a turn as `POST …/turns` takes it)
    recorded in one transaction, in the next of `session_ids`."""

    def __init__(
        self,
        *,
        database_url: str,
        session_ids: list[str],
        body: dict[str, Any],
        costs: list[Decimal],
    ):
        self.conn = psycopg.connect(database_url)
        self.session_ids = session_ids
        self.body = body
        self.steps: list[dict[str, Any]] = body["steps"]
        self.steps_sql = floor_steps_sql(len(self.steps))
        self.costs = costs
        self.turn = 0
        self.totals = {
            "input": sum(int(s["input_tokens"]) for s in self.steps),
            "output": sum(int(s["output_tokens"]) for s in self.steps),
            "cost": sum(costs, Decimal(0)),
            "calls": len(self.steps),
            "duration": sum(int(s["duration_ms"]) for s in self.steps),
        }
        self.intent = json.dumps(body["intent_data"])

    def __call__(self) -> None:
        session = self.session_ids[self.turn % len(self.session_ids)]
        self.turn += 1
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(FLOOR_SESSION_SQL, {**self.totals, "session": session})
            number, tenant, user_id, agent_id = cur.fetchone()  # type: ignore[misc]
            cur.execute(
                FLOOR_TURN_SQL,
                {
                    **self.totals,
                    "tenant": tenant,
                    "session": session,
                    "number": number,
                    "user_message": self.body["user_message"],
                    "assistant_response": self.body["assistant_response"],
                    "intent": self.intent,
                },
            )
            (turn_id,) = cur.fetchone()  # type: ignore[misc]
            params: list[Any] = []
            for order, (step, cost) in enumerate(zip(self.steps, self.costs, strict=True), 1):
                params += [tenant, turn_id, session, user_id, agent_id, order,
                           step["step_type"], step["model"], step["input_tokens"],
                           step["output_tokens"], cost, step["duration_ms"]]  # fmt: skip
            cur.execute(self.steps_sql, params)

    def close(self) -> None:
        self.conn.close()
