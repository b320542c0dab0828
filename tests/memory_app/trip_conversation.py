"""A trip-planning conversation in which the user states the facts and the assistant only
acknowledges ("Sure, noted (3)."): what compaction keeps of it shows whether the summary and
the milestones hold the user's facts or the assistant's boilerplate."""

from __future__ import annotations

from memory_app.window.text import TurnText

USER_MESSAGES = [
    "Hello, we're planning a walking holiday in Norway in August with my husband Tomas.",
    "Our whole budget is 3600 euros.",
    "We arrive in Bergen on August 4th.",
    "Tomas is allergic to peanuts, so restaurants matter.",
    "I'd like cabins under 150 euros a night.",
    "Let's look at cabins near the fjord.",
    "Reserve the Fjordbu cabin for 4 nights.",
    "After Bergen we want to see Flam.",
    "Ferry or bus to Flam?",
    "Ferry it is, window seats please.",
    "In Flam we want to ride the mountain railway.",
    "I confirm the booking: Fjordbu cabin 4 nights and the ferry.",
    "Then a glacier hike on August 9th.",
    "My mobile for the bookings is +47 412 34 567.",
    "Do we need hiking boots?",
    "Yes, add boot rental from Trollsport.",
    "How cold is it in August?",
    "Great. Also a concert in Bergen on August 5th.",
    "Move the concert to August 6th.",
    "Tell me what we reserved.",
]
# Each fact the user stated, as a word that only its turn holds, with that turn.
USER_FACTS = {
    "Norway": 1,
    "Tomas": 1,
    "3600": 2,
    "August 4th": 3,
    "peanuts": 4,
    "150 euros": 5,
    "Fjordbu": 7,
    "window seats": 10,
    "mountain railway": 11,
    "August 9th": 13,
    "412 34 567": 14,
    "Trollsport": 16,
    "August 6th": 19,
}


def assistant_reply(number: int) -> str:
    return f"Sure, noted ({number})."


def trip_turns(first: int = 1, last: int = len(USER_MESSAGES)) -> list[TurnText]:
    """Turns first..last of the conversation."""
    return [
        TurnText(number, USER_MESSAGES[number - 1], assistant_reply(number))
        for number in range(first, last + 1)
    ]
