"""A small world for the cockpit's tests, written through the services: one costly
session past its budget (flagged runaway) with a cart, a focus, a compacted span and
memories learnt in it; a calm session of another user; staff and non-staff accounts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.utils import timezone

from analytics_app.services.rollups import rollups_fill
from analytics_app.services.runaway import runaway_check_session
from memory_app.services.compaction import session_compact
from memory_app.services.memories import MemoryDraft, memory_add, memory_update
from sessions_app.models import ChatSession, ChatTurn, Tenant
from sessions_app.services.api_keys import tenant_get_or_create
from sessions_app.services.references import session_focus_set
from sessions_app.services.results import ResultItem, session_results_store
from sessions_app.services.selections import selection_add
from tests.analytics_app.factories import (
    Step,
    make_session,
    record_turn,
    set_price,
    without_memory_reactions,
)

MESSAGES = [
    "I need a laptop for video editing, budget 1500 euros",
    "Show me the ones with 32GB of RAM",
    "My order A-73812 never arrived",
    "I prefer matte screens, glossy ones hurt my eyes",
    "Compare the first two please",
    "Add the XPS to my cart",
    "What is the warranty on it?",
    "Ship it to my office in Lisbon",
]


@dataclass(frozen=True)
class World:
    tenant_id: int
    costly_id: str
    calm_id: str
    matte_id: str  # "prefers matte screens", edited once: two versions
    order_id: str  # mentions order A-73812
    user_id: str = "night-owl"


def seed_world() -> World:
    tenant = tenant_get_or_create(name="acme")
    at = timezone.now() - timedelta(hours=20)
    # The night's tool call is made expensive: 7,000 in + 20 out tokens cost $0.50.
    set_price("claude-sonnet-4", input_per_million="70", output_per_million="500")
    costly = make_session(tenant, user_id="night-owl", agent_id="shop", budget_usd=Decimal("2"))
    # Per-session thresholds have no API yet: set as the window tests do.
    ChatSession.objects.filter(pk=costly.pk).update(compact_keep_last_turns=2)
    calm = make_session(tenant, user_id="day-user", agent_id="support")
    turns = _record_the_night(costly, calm, at)
    _fill_the_cart(costly)
    rollups_fill()
    runaway_check_session(session_id=costly.pk, now=at + timedelta(minutes=9))
    session_compact(session_id=costly.pk, force=True)
    matte, order = _remember_the_night(tenant, costly, turns)
    _create_accounts()
    return World(tenant.pk, str(costly.pk), str(calm.pk), matte, order)


def _costly_steps(n: int) -> list[Step]:
    """An intent and an expensive tool call; the fourth turn's tool call times out."""
    return [
        Step(step_type="intent", model="gpt-4o-mini"),
        Step(
            step_type="tool_call",
            model="claude-sonnet-4",
            input_tokens=7000,
            success=n != 3,
            error=None if n != 3 else "tool timeout after 30s",
        ),
    ]


def _record_the_night(costly: ChatSession, calm: ChatSession, at: datetime) -> list[ChatTurn]:
    """One turn a minute in each session from `at`: MESSAGES in the costly one, "hi" in the
    calm one. Returns the costly session's turns."""
    turns = []
    # The world's memories are written by hand (_remember_the_night: known contents and
    # versions); memory_app's extraction from these turns would add its own copies of the
    # same facts.
    with without_memory_reactions():
        for n, message in enumerate(MESSAGES):
            turns.append(
                record_turn(
                    costly, _costly_steps(n), at=at + timedelta(minutes=n), user_message=message
                )
            )
            record_turn(calm, [Step()], at=at + timedelta(minutes=n), user_message="hi")
    return turns


def _fill_the_cart(costly: ChatSession) -> None:
    """Two laptops shown, the XPS selected and in focus."""
    session_results_store(
        session=costly,
        query="laptop 32GB",
        filters={"ram": "32GB"},
        items=[
            ResultItem(mpn="XPS-9530", name="Dell XPS 15", data={"price": 1499}),
            ResultItem(mpn="ZB-G10", name="HP ZBook Studio", data={"price": 1899}),
        ],
    )
    selection_add(session=costly, mpn="XPS-9530")
    session_focus_set(session=costly, mpn="XPS-9530")


def _remember_the_night(
    tenant: Tenant, costly: ChatSession, turns: list[ChatTurn]
) -> tuple[str, str]:
    """The memories learnt in the costly session; returns the matte-screens memory (edited
    once) and the order memory."""

    def remember(content: str, kind: str, turn: int, **kw: object) -> str:
        draft = MemoryDraft(
            user_id="night-owl",
            agent_id="shop",
            type=kind,
            content=content,
            session_id=costly.pk,
            structured={"extracted_from": {"turn_id": turns[turn - 1].pk, "turn_number": turn}},
            **kw,  # type: ignore[arg-type]
        )
        return str(memory_add(tenant=tenant, draft=draft).memory.pk)

    matte = remember("I prefer glossy screens", "preference", 4, importance=0.7)
    memory_update(
        memory=_memory(matte),
        changes={"content": "I prefer matte screens, glossy ones hurt my eyes"},
    )
    order = remember("My order A-73812 never arrived", "fact", 3, importance=0.9)
    remember("Budget for the laptop is 1500 euros", "fact", 1)
    remember("Ships to the office in Lisbon", "fact", 8, scope="shared", allowed_users=["ops-bot"])
    return matte, order


def _create_accounts() -> None:
    """A staff superuser `ops` and a non-staff `dev`, once."""
    users = get_user_model()
    if not users.objects.filter(username="ops").exists():
        users.objects.create_user("ops", password="ops-pass-123", is_staff=True, is_superuser=True)
        users.objects.create_user("dev", password="dev-pass-123")


def _memory(pk: str):  # type: ignore[no-untyped-def]
    from memory_app.models import Memory

    return Memory.objects.get(pk=pk)
