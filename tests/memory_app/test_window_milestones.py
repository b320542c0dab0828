"""Milestones of a conversation where the user states the facts and the assistant only
acknowledges: the user's constraints and numbers with their meaning, one line each, and
nothing of the acknowledgements."""

from __future__ import annotations

from memory_app.window.milestones import extract_milestones, milestone_lines
from memory_app.window.text import TurnText, is_acknowledgement, numeric_values
from tests.memory_app.trip_conversation import trip_turns


def _lines() -> list[str]:
    return [line for _, _, line in milestone_lines(extract_milestones(trip_turns()))]


def test_acknowledgements_leave_no_milestone() -> None:
    lines = _lines()
    assert not [line for line in lines if "noted (" in line]
    # 20 turns: one line per fact the user gave, not one per turn's counter.
    assert len(lines) <= 16


def test_a_phone_number_is_one_id() -> None:
    milestones = extract_milestones(trip_turns(14, 14))
    assert [entry["value"] for entry in milestones["ids"]] == ["+47 412 34 567"]
    assert milestones["constraints"] == []


def test_numbers_are_kept_with_their_meaning() -> None:
    constraints = {
        (entry["kind"], entry["value"]) for entry in extract_milestones(trip_turns())["constraints"]
    }
    assert ("budget", "3600 euros") in constraints
    assert ("price_ceiling", "150 euros") in constraints
    assert ("quantity", "4 nights") in constraints
    assert ("date", "August 4th") in constraints and ("date", "August 9th") in constraints
    assert not [value for kind, value in constraints if kind == "fact"]


def test_a_stated_requirement_without_a_number_is_a_constraint() -> None:
    lines = _lines()
    assert "[t4] requirement: Tomas is allergic to peanuts, so restaurants matter." in lines


def test_a_bare_number_is_the_users_fact_not_the_assistants() -> None:
    turns = [TurnText(1, "Put 3 on the list.", "I found 7 matches in 2 shops.")]
    constraints = extract_milestones(turns)["constraints"]
    assert [(entry["kind"], entry["value"]) for entry in constraints] == [("fact", "3")]


def test_acknowledgement_and_phone_patterns() -> None:
    assert is_acknowledgement("OK noted (12).") and is_acknowledgement("Sure, will do!")
    assert not is_acknowledgement("Noted: a price ceiling of 900 EUR per unit.")
    assert not is_acknowledgement("+47 412 34 567")
    assert numeric_values("call (555) 123-4567 by 2026-03-14") == [
        ("phone", "(555) 123-4567"),
        ("date", "2026-03-14"),
    ]
    assert numeric_values("order 1234 of 12 units") == [
        ("number", "1234"),
        ("quantity", "12 units"),
    ]
