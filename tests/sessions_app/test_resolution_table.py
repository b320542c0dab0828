"""Acceptance 2: a table of phrasings, each with the item it means or the error it
earns. The world: the five laptops of seed 000 are the last results (in order), an
older search fetched a Dell Inspiron that is no longer shown, and the focus is the HP.

The table runs twice: against the pure resolver (fast, every row its own test case)
and through `GET /sessions/{id}/resolve` on a stored session."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app.resolution import Item, resolve_reference
from sessions_app.services.demo_shopping import LAPTOPS
from tests.sessions_app.workspace_helpers import (
    ACER,
    ASUS,
    DELL,
    HP,
    LENOVO,
    create_session,
    store_laptops,
)

INSPIRON = "DELL-INSP-3520"
OLD_RESULT = {
    "mpn": INSPIRON,
    "name": "Dell Inspiron 15",
    "component_type": "laptop",
    "summary": "15.6-inch budget laptop",
    "data": {"brand": "Dell", "price": 549, "weight_kg": 1.9, "screen_inches": 15.6},
}
AMBIGUOUS, UNRESOLVED = "ambiguous", "unresolved"

TABLE: list[tuple[str, str]] = [
    # ordinals, in words and digits, inside utterances
    ("Tell me about the first one", DELL),
    ("Tell me about the first one!", DELL),
    ("the FIRST one", DELL),
    ("1st", DELL),
    ("the 2nd one", HP),
    ("#3", LENOVO),
    ("number four", ASUS),
    ("the third one", LENOVO),
    ("item 5", ACER),
    ("what about option two?", HP),
    ("show me result #4", ASUS),
    ("the fifth", ACER),
    ("the top one", DELL),
    ("3", LENOVO),
    ("no. 2 please", HP),
    ("Could you add the 2nd one, please?", HP),
    # from the end
    ("last", ACER),
    ("the last one", ACER),
    ("second to last", ASUS),
    ("the penultimate one", ASUS),
    ("second-to-last", ASUS),
    ("third from the end", LENOVO),
    ("the one before last", ASUS),
    # positions that do not exist, or several at once
    ("the sixth one", UNRESOLVED),
    ("item 9", UNRESOLVED),
    ("the first and the third", AMBIGUOUS),
    # pronouns and demonstratives → the focus (the HP)
    ("it", HP),
    ("tell me more about it", HP),
    ("this", HP),
    ("that one", HP),
    ("this laptop", HP),
    ("add that one to my cart", HP),
    ("how much is it?", HP),
    ("the same one", HP),
    # names, brands, model fragments, misspellings
    ("the Dell", DELL),  # the Inspiron is a Dell too, but not among the last results
    ("add the Dell to my list", DELL),
    ("the XPS", DELL),
    ("the XPS 15", DELL),
    ("is the dell xps any good?", DELL),
    ("thinkpad", LENOVO),
    ("ThinkPad", LENOVO),
    ("the Lenovo", LENOVO),
    ("lenvo", LENOVO),
    ("thinkpda", LENOVO),
    ("the HP", HP),
    ("spectre", HP),
    ("the Spectre x360", HP),
    ("zenbook", ASUS),
    ("zen book", ASUS),
    ("the asus one", ASUS),
    ("acer", ACER),
    ("the Swfit", ACER),
    ("the Inspiron", INSPIRON),
    ("the Dell Inspiron", INSPIRON),
    ("the Macbook", UNRESOLVED),
    ("the laptop", AMBIGUOUS),
    ("mpn: DELL-XPS15-9530", DELL),
    # superlatives over numeric data
    ("the cheapest", ACER),
    ("and the cheapest one too", ACER),
    ("THE CHEAPEST!!!", ACER),
    ("the least expensive laptop", ACER),
    ("the most expensive", DELL),
    ("the priciest one", DELL),
    ("the lightest", LENOVO),
    ("the heaviest", DELL),
    ("the biggest screen", DELL),
    ("the one with the smallest screen", HP),
    ("the cheapest Lenovo", LENOVO),
    ("the one with the most RAM", LENOVO),
    ("the one with the least RAM", AMBIGUOUS),  # the Asus and the Acer both have 8 GB
    ("the highest rated", UNRESOLVED),  # no item has a rating
    # nothing that refers
    ("hmm", UNRESOLVED),
]


def test_the_table_is_big_enough() -> None:
    assert len(TABLE) >= 60
    assert len({phrase for phrase, _ in TABLE}) == len(TABLE)


def _items() -> list[Item]:
    return [
        Item(
            mpn=r["mpn"],
            name=r["name"],
            component_type=r["component_type"],
            summary=r["summary"],
            data=r["data"],
        )
        for r in [*LAPTOPS, OLD_RESULT]
    ]


@pytest.mark.parametrize(("phrase", "expected"), TABLE)
def test_resolver(phrase: str, expected: str) -> None:
    result = resolve_reference(
        phrase,
        items=_items(),
        last_results=[laptop["mpn"] for laptop in LAPTOPS],
        focus_mpn=HP,
    )
    if expected in (AMBIGUOUS, UNRESOLVED):
        assert result.status == expected, result
        assert result.mpns, "errors carry candidates"
    else:
        assert (result.status, result.mpn) == ("resolved", expected), result


@pytest.mark.django_db
def test_the_table_through_the_api(api: APIClient) -> None:
    sid = create_session(api)
    store_laptops(api, sid, items=[OLD_RESULT])
    store_laptops(api, sid)
    assert api.put(f"/api/v1/sessions/{sid}/focus", {"mpn": HP}, format="json").status_code == 200

    mismatches = []
    for phrase, expected in TABLE:
        response = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": phrase, "set_focus": "false"})
        body = response.json()
        if expected == AMBIGUOUS:
            got = (response.status_code, body.get("error", {}).get("code"))
            ok = got == (409, AMBIGUOUS) and len(body["error"]["candidates"]) >= 2
        elif expected == UNRESOLVED:
            got = (response.status_code, body.get("error", {}).get("code"))
            ok = got == (404, UNRESOLVED) and body["error"]["candidates"]
        else:
            got = (response.status_code, body.get("item", {}).get("mpn"))
            ok = got == (200, expected)
        if not ok:
            mismatches.append((phrase, expected, got))
    assert mismatches == []
    # set_focus=false left the focus alone through all of it
    assert api.get(f"/api/v1/sessions/{sid}").json()["focus_mpn"] == HP
