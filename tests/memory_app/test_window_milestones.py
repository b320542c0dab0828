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


def test_numbers_that_label_a_sentence_or_count_nothing_are_no_facts() -> None:
    turns = [
        TurnText(n, f"Turn {n}: just checking in, {n % 9 + 2} more things to go.", "Sure.")
        for n in range(1, 101)
    ]
    turns.append(TurnText(101, "Step 2: we are 4 people and 3 of them fly.", "Noted."))
    constraints = extract_milestones(turns)["constraints"]
    assert [(entry["kind"], entry["value"]) for entry in constraints] == [("quantity", "4 people")]


def test_an_id_like_token_is_an_item_only_when_shopping() -> None:
    turns = [
        TurnText(1, "My passport number is X1234567.", "Noted."),
        TurnText(2, "Our flight code is TP1234 and the seat 14C.", "Great."),
        TurnText(3, "Tell me more about the XPS-15-9530.", "It costs $1,450 and is in stock."),
    ]
    milestones = extract_milestones(turns)
    assert [entry["mpn"] for entry in milestones["items"]] == ["XPS-15-9530"]
    assert [entry["value"] for entry in milestones["ids"]] == ["X1234567", "TP1234"]
