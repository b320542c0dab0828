"""B2's context assembly: a session whose context is asked for over HTTP at every
memory size, with a query, so each request embeds it and searches the memories."""

from __future__ import annotations

from typing import Any

from bench.loadgen import HttpPoster, run_load
from bench.servers import Gunicorn


def context_session(tenant: Any) -> Any:
    """A session of user-0 with 12 recorded turns (compaction folds the oldest into a
    summary), whose context the benchmark asks for at every memory size."""
    from sessions_app.services.sessions import session_create
    from sessions_app.services.turn_recording import turn_record
    from sessions_app.services.turn_totals import StepInput
    from sessions_app.usage import TokenCounts

    session = session_create(tenant=tenant, user_id="user-0", agent_id="bench")
    step_input = StepInput(
        step_type="response",
        model="gpt-4o-mini",
        counts=TokenCounts(input_tokens=700, output_tokens=90),
    )
    for number in range(1, 13):
        turn_record(
            tenant=tenant,
            session_id=session.pk,
            user_message=f"Question {number}: what about order A-{7000 + number}?",
            assistant_response=f"Order A-{7000 + number} ships on day {number}.",
            steps=[step_input],
        )
    return session


def measure_context(server: Gunicorn, secret: str, session: Any, size: Any) -> dict:
    """`GET /sessions/{id}/context` with a query (so the query is embedded and memories
    are searched in the request) and a 2,000-token budget."""
    getter = HttpPoster(
        port=server.port,
        paths=[
            f"/api/v1/sessions/{session.pk}/context?query=when%20does%20my%20order%20ship"
            "&budget=2000"
        ],
        headers={"Authorization": f"Bearer {secret}"},
        expect=200,
        method="GET",
    )
    result = run_load(
        name="context",
        operations=[getter],
        max_requests=size.requests_per_shape,
        max_seconds=size.seconds_per_shape,
        warmup_per_thread=2,
    )
    return result.summary()
