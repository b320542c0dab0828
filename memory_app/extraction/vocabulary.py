"""The words that name an occupation or a diet, as regex alternations: shared by the
extractor's rules (memory_app.extraction.patterns) and the rules that read a memory's
subject (memory_app.subjects), so that what the extractor keeps as an occupation is what
supersession reads as one. Pure Python: no Django."""

from __future__ import annotations


def words(*alternatives: str) -> str:
    """A non-capturing alternation of regex fragments."""
    return "(?:" + "|".join(alternatives) + ")"


OCCUPATIONS = words(
    "teacher", "nurse", "doctor", "physician", "surgeon", "engineer", "developer",
    "programmer", "designer", "lawyer", "attorney", "accountant", "chef", "student",
    "architect", "dentist", "pharmacist", "photographer", "writer", "author", "journalist",
    "musician", "artist", "painter", "scientist", "researcher", "professor", "lecturer",
    "manager", "consultant", "analyst", "electrician", "plumber", "carpenter", "mechanic",
    "firefighter", "paramedic", "pilot", "driver", "barista", "waiter", "waitress",
    "cashier", "farmer", "vet", "veterinarian", "therapist", "counsel+or", "psychologist",
    "social worker", "librarian", "translator", "editor", "realtor", "entrepreneur",
    "freelancer", "intern", "retiree", "midwife", "soldier", "officer", "nanny", "tutor",
    "coach", "instructor", "trainer", "dancer", "actor", "actress", "singer", "baker",
    "hairdresser", "barber", "stylist", "clerk", "receptionist", "technician", "pastor",
    "priest", "rabbi", "judge", "paralegal", "economist", "statistician", "optician",
    "physiotherapist", "physio", "PhD candidate", "postdoc", "undergrad", "grad student",
    "data scientist", "product manager", "stay-at-home (?:mom|mum|dad|parent)", "illustrator",
    "animator", "copywriter", "carer", "caregiver", "contractor", "welder", "machinist",
)  # fmt: skip
DIETS = words(
    "vegetarian", "vegan", "pescatarian", "pescetarian", "plant-based", "teetotal",
    "teetotaler", "teetotaller", "keto", "paleo", "gluten-free", "dairy-free", "sober",
    "lacto-ovo vegetarian",
)  # fmt: skip
