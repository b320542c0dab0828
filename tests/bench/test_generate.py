"""The benchmark data generator: exact row counts, and a second run adds nothing."""

from __future__ import annotations

from io import StringIO

import pytest
from django.db.models import Sum

from bench.generate_cli import main as generate_main
from sessions_app.models import (
    ChatSession,
    ChatTurn,
    SessionComponent,
    SessionSelection,
    Tenant,
    TurnStep,
)

pytestmark = pytest.mark.django_db

ARGS = [
    "--tenants=2",
    "--sessions=3",
    "--turns-per-session=4",
    "--steps-per-turn=3",
    "--components=5",
    "--selections=2",
    "--seed=7",
    "--chunk-sessions=2",  # more than one chunk per tenant
]


def counts() -> dict[str, int]:
    return {
        "tenants": Tenant.objects.filter(name__startswith="bench-7-").count(),
        "sessions": ChatSession.objects.count(),
        "turns": ChatTurn.objects.count(),
        "steps": TurnStep.objects.count(),
        "components": SessionComponent.objects.count(),
        "selections": SessionSelection.objects.count(),
    }


def test_generate_twice_gives_exact_counts_and_consistent_totals() -> None:
    expected = {
        "tenants": 2,
        "sessions": 6,
        "turns": 24,
        "steps": 72,
        "components": 30,
        "selections": 12,
    }
    generate_main(ARGS, stdout=StringIO(), stderr=StringIO())
    assert counts() == expected
    first_ids = sorted(str(pk) for pk in ChatSession.objects.values_list("pk", flat=True))

    out = StringIO()
    generate_main(ARGS, stdout=out, stderr=StringIO())
    assert counts() == expected
    assert "chat_turn +0" in out.getvalue() and "turn_step +0" in out.getvalue()
    assert sorted(str(pk) for pk in ChatSession.objects.values_list("pk", flat=True)) == (first_ids)

    # Totals agree at every level, as if the turns had been recorded one by one.
    for session in ChatSession.objects.all():
        steps = TurnStep.objects.filter(session=session).aggregate(
            i=Sum("input_tokens"), o=Sum("output_tokens"), c=Sum("cost_usd")
        )
        assert session.turn_count == session.last_turn_number == 4
        assert session.total_calls == 12 and session.status == "active"
        assert (session.total_input_tokens, session.total_output_tokens) == (steps["i"], steps["o"])
        assert session.total_cost_usd == steps["c"] and steps["c"] > 0
    for turn in ChatTurn.objects.all()[:5]:
        assert [s.step_order for s in turn.steps.all()] == [1, 2, 3]
        assert turn.steps.last().step_type == "response"  # type: ignore[union-attr]
    positions = SessionSelection.objects.filter(session=ChatSession.objects.first())
    assert sorted(positions.values_list("position", flat=True)) == [1, 2]


def test_growing_the_turn_count_resumes() -> None:
    generate_main(ARGS, stdout=StringIO(), stderr=StringIO())
    grown = [a if not a.startswith("--turns") else "--turns-per-session=6" for a in ARGS]
    generate_main(grown, stdout=StringIO(), stderr=StringIO())
    assert ChatTurn.objects.count() == 36 and TurnStep.objects.count() == 108
    assert set(ChatSession.objects.values_list("last_turn_number", flat=True)) == {6}
