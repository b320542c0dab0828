"""Seed 000's laptop conversation, recorded through the workspace services: five laptops
found, "Tell me about the first one" resolved to the Dell XPS 15, the Dell and the
cheapest one added to the cart, each turn recorded with its LLM steps."""

from __future__ import annotations

from typing import Any

from sessions_app.models import ChatSession, Tenant
from sessions_app.services.references import session_reference_resolve
from sessions_app.services.results import ResultItem, session_results_store
from sessions_app.services.selections import selection_add
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts

LAPTOP_QUERY = "Find laptops under $1000"
LAPTOP_FILTERS: dict[str, Any] = {"category": "laptop", "max_price": 1000}
# The five options of seed 000, in the order the bot listed them.
LAPTOPS: list[dict[str, Any]] = [
    {
        "mpn": "DELL-XPS15-9530",
        "name": "Dell XPS 15",
        "component_type": "laptop",
        "summary": "15.6-inch OLED, Core i7, 16 GB RAM, 512 GB SSD",
        "data": {
            "brand": "Dell",
            "price": 899,
            "weight_kg": 1.86,
            "screen_inches": 15.6,
            "ram_gb": 16,
            "storage_gb": 512,
            "battery_hours": 12,
        },
    },
    {
        "mpn": "HP-SPECTRE-X360-14",
        "name": "HP Spectre x360",
        "component_type": "laptop",
        "summary": "13.5-inch 2-in-1 convertible, Core i7, 16 GB RAM",
        "data": {
            "brand": "HP",
            "price": 849,
            "weight_kg": 1.36,
            "screen_inches": 13.5,
            "ram_gb": 16,
            "storage_gb": 1024,
            "battery_hours": 15,
        },
    },
    {
        "mpn": "LEN-TP-X1C-G11",
        "name": "Lenovo ThinkPad",
        "component_type": "laptop",
        "summary": "14-inch business laptop, Core i5, 16 GB RAM",
        "data": {
            "brand": "Lenovo",
            "price": 799,
            "weight_kg": 1.12,
            "screen_inches": 14.0,
            "ram_gb": 32,
            "storage_gb": 512,
            "battery_hours": 14,
        },
    },
    {
        "mpn": "ASUS-ZB14-UX3402",
        "name": "Asus ZenBook",
        "component_type": "laptop",
        "summary": "14-inch OLED ultrabook, Core i5, 8 GB RAM",
        "data": {
            "brand": "Asus",
            "price": 749,
            "weight_kg": 1.39,
            "screen_inches": 14.0,
            "ram_gb": 8,
            "storage_gb": 512,
            "battery_hours": 13,
        },
    },
    {
        "mpn": "ACER-SWIFT-SF314",
        "name": "Acer Swift",
        "component_type": "laptop",
        "summary": "14-inch thin and light, Ryzen 7, 8 GB RAM",
        "data": {
            "brand": "Acer",
            "price": 699,
            "weight_kg": 1.2,
            "screen_inches": 14.0,
            "ram_gb": 8,
            "storage_gb": 256,
            "battery_hours": 10,
        },
    },
]


def _pipeline_steps(input_scale: int) -> list[StepInput]:
    """Seed 000's three-step pipeline: intent and filters on flash, the answer on pro."""
    return [
        StepInput(
            step_type="intent",
            model="gemini-1.5-flash",
            counts=TokenCounts(input_tokens=150 + input_scale, output_tokens=20),
            duration_ms=180,
        ),
        StepInput(
            step_type="filter",
            model="gemini-1.5-flash",
            counts=TokenCounts(input_tokens=300 + input_scale, output_tokens=50),
            duration_ms=220,
        ),
        StepInput(
            step_type="response",
            model="gemini-1.5-pro",
            counts=TokenCounts(input_tokens=800 + input_scale, output_tokens=200),
            duration_ms=450,
        ),
    ]


def demo_shopping_load(*, tenant: Tenant) -> ChatSession:
    """The laptop conversation as four recorded turns; the cart holds the Dell and the
    Acer, and the focus is on the Acer."""
    session = session_create(
        tenant=tenant,
        user_id="demo-shopper",
        agent_id="shopping-assistant",
        state={"stage": "searching"},
        metadata={"seed": "000", "title": "Laptops under $1000"},
    )
    turn_record(
        tenant=tenant,
        session_id=session.pk,
        user_message=LAPTOP_QUERY,
        assistant_response="Here are 5 options: "
        + ", ".join(f"{i}. {x['name']} - ${x['data']['price']}" for i, x in enumerate(LAPTOPS, 1)),
        intent_data={"intent": "search", "filters": LAPTOP_FILTERS},
        steps=_pipeline_steps(0),
    )
    session_results_store(
        session=session,
        query=LAPTOP_QUERY,
        filters=LAPTOP_FILTERS,
        items=[ResultItem(**laptop) for laptop in LAPTOPS],
    )
    utterances = [
        (
            "Tell me about the first one",
            "The Dell XPS 15 has a 15.6-inch OLED screen, a Core i7 and 16 GB of RAM, for $899.",
            "product_detail",
        ),
        ("Add the Dell to my list", "Added the Dell XPS 15 to your list.", "add_to_cart"),
        ("And the cheapest one too", "Added the Acer Swift ($699) as well.", "add_to_cart"),
    ]
    for number, (message, answer, intent) in enumerate(utterances, start=1):
        if intent == "add_to_cart":
            selection_add(session=session, ref=message)
        else:
            session_reference_resolve(session=session, ref=message)
        turn_record(
            tenant=tenant,
            session_id=session.pk,
            user_message=message,
            assistant_response=answer,
            intent_data={"intent": intent},
            state={"stage": "comparing" if intent == "product_detail" else "shortlisting"},
            steps=_pipeline_steps(120 * number),
        )
    session.refresh_from_db()
    return session
