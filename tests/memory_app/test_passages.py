"""The passage of a long recalled message that a context line shows."""

from __future__ import annotations

from memory_app.window.passages import ELLIPSIS, best_passage
from memory_app.window.tokens import count_tokens

FILLER = " ".join(f"Sentence {n} talks about the weather and nothing else." for n in range(40))
LIST = (
    "Here are five bottles to buy for gin cocktails:\n"
    "1. Sweet Vermouth: a fortified wine for the Negroni. It adds sweetness.\n"
    "2. Dry Vermouth: a fortified wine for the Martini. It adds dryness.\n"
    "3. Campari: a bitter aperitif for the Americano. It adds bitterness.\n"
    "4. Elderflower Liqueur: a floral liqueur. It adds aroma.\n"
    "5. Absinthe: a strong herbal liqueur for the Sazerac. It adds anise.\n"
    "With these bottles you can make a wide variety of gin cocktails. " + FILLER
)


def test_a_text_that_fits_is_returned_whole() -> None:
    assert best_passage("Short and sweet.", "anything", 50) == "Short and sweet."


def test_the_passage_is_around_the_sentence_sharing_the_query_words() -> None:
    text = FILLER + " My sister Maria moved to Lisbon in March. " + FILLER
    passage = best_passage(text, "Where did Maria move?", 40)
    assert "Maria moved to Lisbon" in passage
    assert passage.startswith(ELLIPSIS) and passage.endswith(ELLIPSIS)
    assert count_tokens(passage) <= 40


def test_a_query_pointing_at_a_place_in_a_list_gets_that_item() -> None:
    passage = best_passage(LIST, "What was the fifth bottle you recommended for gin cocktails?", 40)
    assert "5. Absinthe" in passage


def test_the_item_stays_joined_to_its_number() -> None:
    passage = best_passage(LIST, "Remind me of the 3rd bottle", 25)
    assert "3. Campari" in passage


def test_the_first_time_is_not_a_place_in_a_list() -> None:
    pointed = best_passage(LIST, "the first bottle", 30)
    assert "1. Sweet Vermouth" in pointed
    asked = best_passage(LIST, "When was the first time I bought a wide variety of gin?", 30)
    assert asked == best_passage(LIST, "When did I buy a wide variety of gin?", 30)
    assert asked != pointed
