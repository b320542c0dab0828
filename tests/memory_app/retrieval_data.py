"""A synthetic multi-session conversation set for the retrieval evaluation, generated
deterministically (templates x entities, fixed seed; no copied data).

Each user states facts across several sessions: single facts (home, employer, allergy…)
and several instances of id-bearing facts (orders, tickets, part numbers, bookings),
between small-talk lines that act as distractors. Questions come in three kinds:
- paraphrase: other words than the statement ("Where do I reside?" for "I live in X");
- direct: the words of the statement, minus the answer;
- exact id: the id or number itself ("What was order A-73812 for?").
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

SEED = 20260422
USERS = 4
SESSIONS_PER_USER = 4
INSTANCES_PER_MULTI = 12
FILLERS_PER_USER = 15


@dataclass
class Fact:
    key: str  # unique within the set
    user_id: str
    session_id: uuid.UUID
    type: str
    statement: str
    answer: str  # a string the statement contains: the thing asked for


@dataclass
class Question:
    fact_key: str
    user_id: str
    kind: str  # paraphrase | direct | exact_id
    text: str


@dataclass
class ConversationSet:
    facts: list[Fact] = field(default_factory=list)
    fillers: list[Fact] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


CITIES = [
    "Lisbon",
    "Porto",
    "Madrid",
    "Valencia",
    "Lyon",
    "Bordeaux",
    "Turin",
    "Bologna",
    "Ghent",
    "Utrecht",
    "Krakow",
    "Brno",
    "Graz",
    "Aarhus",
    "Tampere",
    "Bergen",
]
COMPANIES = [
    "Initech",
    "Globex",
    "Umbrella Labs",
    "Hooli",
    "Vandelay Industries",
    "Stark Freight",
    "Wayne Biotech",
    "Tyrell Systems",
    "Cyberdyne Logistics",
]
ALLERGENS = ["peanuts", "shellfish", "penicillin", "latex", "bee stings", "sesame", "kiwi"]
PETS = ["Biscuit", "Pepper", "Mochi", "Rufus", "Nala", "Ziggy", "Tofu", "Maple"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
CUISINES = ["Thai", "Ethiopian", "Peruvian", "Korean", "Lebanese", "Georgian", "Sichuan"]
SEATS = ["aisle", "window", "exit-row"]
CARS = ["Skoda Octavia", "Volvo V60", "Mazda MX-5", "Renault Zoe", "Toyota Yaris", "Kia EV6"]
LANGUAGES = ["Japanese", "Portuguese", "Finnish", "Greek", "Turkish", "Swahili", "Czech"]
HOBBIES = ["bouldering", "sailing", "birdwatching", "trail running", "pottery", "kayaking"]
TONES = ["short and to the point", "detailed with examples", "formal", "playful"]
PRODUCTS = [
    "laptop",
    "monitor",
    "headphones",
    "keyboard",
    "printer",
    "router",
    "webcam",
    "tablet",
    "coffee grinder",
    "desk lamp",
    "office chair",
    "smartwatch",
]
DEVICES = [
    "dishwasher",
    "e-bike",
    "television",
    "washing machine",
    "camera",
    "drone",
    "thermostat",
    "vacuum robot",
    "oven",
    "treadmill",
    "projector",
    "sewing machine",
    "game console",
]
APPLIANCES = [
    "fridge",
    "boiler",
    "dryer",
    "espresso machine",
    "lawn mower",
    "air purifier",
    "blender",
    "microwave",
    "heat pump",
    "water heater",
    "dehumidifier",
    "garage door opener",
    "induction hob",
]
TRIP_CITIES = [
    "Vienna",
    "Oslo",
    "Seville",
    "Riga",
    "Naples",
    "Dublin",
    "Zagreb",
    "Tallinn",
    "Malaga",
    "Geneva",
    "Ljubljana",
    "Bruges",
    "Salzburg",
]
SMALL_TALK = [
    "Thanks, that was helpful.", "Let me think about it and come back later.",
    "The weather has been strange this week.", "Can you explain that once more?",
    "I watched a documentary about octopuses yesterday.", "My neighbour is renovating again.",
    "That sounds reasonable to me.", "I had a long day at the office.",
    "Could you compare the two options?", "I'm not in a hurry with this.",
    "We had pizza for dinner tonight.", "The train was late again this morning.",
    "I read an article about electric planes.", "Maybe next month would work better.",
    "I need to water the plants later.", "The football match last night was exciting.",
    "My sister is visiting on Sunday.", "I'm trying to drink less coffee.",
    "The new bakery on the corner is good.", "I should clean my desk.",
]  # fmt: skip

# (key, type, statement, answer, [paraphrase questions], [direct questions])
_SINGLES = [
    ("city", "fact", "I live in {v}.", CITIES,
     ["Which town is my home base?", "Where do I reside these days?"],
     ["Which city do I live in?"]),
    ("employer", "fact", "I work at {v} these days.", COMPANIES,
     ["Who is my employer?", "Which company pays my salary?"], ["Where do I work?"]),
    ("allergy", "fact", "I'm allergic to {v}.", ALLERGENS,
     ["What should I avoid because of my immune reactions?", "What gives me an allergic reaction?"],
     ["What am I allergic to?"]),
    ("pet", "fact", "My dog is called {v}.", PETS,
     ["What is my puppy's name?", "How do I call my four-legged friend?"],
     ["What is my dog called?"]),
    ("birthday", "fact", "My birthday is on {v}.", None,
     ["When was I born?", "On which date do I celebrate getting older?"],
     ["When is my birthday?"]),
    ("cuisine", "preference", "I love {v} food.", CUISINES,
     ["What kind of cooking do I enjoy eating?", "Which restaurant style suits my taste?"],
     ["Which food do I love?"]),
    ("seat", "preference", "I prefer {v} seats on flights.", SEATS,
     ["Where do I like to sit on a plane?", "What spot do I pick when flying?"],
     ["Which seats do I prefer on flights?"]),
    ("car", "fact", "I drive a {v}.", CARS,
     ["What vehicle do I own?", "Which automobile is mine?"], ["What car do I drive?"]),
    ("language", "fact", "I am learning {v}.", LANGUAGES,
     ["Which foreign tongue am I studying?", "What language lessons am I taking?"],
     ["Which language am I learning?"]),
    ("hobby", "preference", "On weekends I go {v}.", HOBBIES,
     ["What is my favourite pastime on Saturdays?", "How do I spend my free days?"],
     ["What do I do on weekends?"]),
    ("tone", "preference", "Please keep your answers {v}.", TONES,
     ["How should you write your replies to me?", "What response style do I want?"],
     ["How should I get my answers?"]),
]  # fmt: skip

# (key, statement, entity pool, id maker, [paraphrase], [direct], [exact id])
_MULTIS = [
    ("order", "My order number for the {e} is {id}.", PRODUCTS,
     lambda r: f"{r.choice('ABCDEFGH')}-{r.randint(10000, 99999)}",
     ["Which purchase reference belongs to my {e}?"],
     ["What is the order number for my {e}?"],
     ["What did I buy with order {id}?"]),
    ("ticket", "Support ticket {id} is about my broken {e}.", DEVICES,
     lambda r: f"TCK-{r.randint(100000, 999999)}",
     ["Which case did I open when my {e} stopped working?"],
     ["Which support ticket is about my broken {e}?"],
     ["What is {id} about?"]),
    ("part", "The replacement part for my {e} is {id}.", APPLIANCES,
     lambda r: f"{r.choice(['XK', 'PN', 'RB', 'ZT'])}{r.randint(100, 999)}-{r.randint(10, 99)}",
     ["Which spare component fits my {e}?"],
     ["What is the replacement part for my {e}?"],
     ["Which appliance is {id} for?"]),
    ("booking", "My hotel booking in {e} has confirmation code {id}.", TRIP_CITIES,
     lambda r: "".join(r.choice("BCDFGHJKLMNPQRSTVWXZ23456789") for _ in range(6)),
     ["What's the reservation reference for where I'm staying in {e}?"],
     ["What is the confirmation code of my hotel booking in {e}?"],
     ["Which city is booking {id} in?"]),
]  # fmt: skip


def generate(seed: int = SEED) -> ConversationSet:
    rng = random.Random(seed)
    out = ConversationSet()
    for user_index in range(USERS):
        user_id = f"user-{user_index:02d}"
        sessions = [
            uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(SESSIONS_PER_USER)
        ]
        for key, memory_type, template, pool, paraphrases, directs in _SINGLES:
            if pool is None:
                value = f"{rng.choice(MONTHS)} {rng.randint(1, 28)}"
            else:
                value = rng.choice(pool)
            fact = Fact(
                f"{user_id}:{key}",
                user_id,
                rng.choice(sessions),
                memory_type,
                template.format(v=value),
                value,
            )
            out.facts.append(fact)
            out.questions.append(Question(fact.key, user_id, "paraphrase", rng.choice(paraphrases)))
            if rng.random() < 0.5:
                out.questions.append(Question(fact.key, user_id, "direct", rng.choice(directs)))
        for key, template, pool, make_id, paraphrases, directs, exacts in _MULTIS:
            for index, entity in enumerate(rng.sample(pool, INSTANCES_PER_MULTI)):
                ident = make_id(rng)
                fact = Fact(
                    f"{user_id}:{key}:{index}",
                    user_id,
                    rng.choice(sessions),
                    "fact",
                    template.format(e=entity, id=ident),
                    ident,
                )
                out.facts.append(fact)
                asked = rng.choice(paraphrases + directs)
                kind = "paraphrase" if asked in paraphrases else "direct"
                out.questions.append(Question(fact.key, user_id, kind, asked.format(e=entity)))
                exact = rng.choice(exacts).format(id=ident)
                out.questions.append(Question(fact.key, user_id, "exact_id", exact))
        for index, line in enumerate(rng.sample(SMALL_TALK, FILLERS_PER_USER)):
            out.fillers.append(
                Fact(
                    f"{user_id}:filler:{index}", user_id, rng.choice(sessions), "episodic", line, ""
                )
            )
    return out


# --- Dialogues: answers that only their neighbouring turn explains ---------------------
#
# Each exchange is a question by one speaker naming a subject and a reply that answers it
# without naming it ("Yes, leaving on the 14th"). Asked later about the subject, only
# the reply holds the answer, and only the turn before it says what it is about; the
# other exchanges of the same template make look-alike replies. A search that indexes a
# turn with its neighbours finds the reply; one that sees each line alone cannot tell the
# replies apart.

_EXCHANGES: list[tuple[str, str, str, list[str]]] = [
    ("Did you book the trip to {e} yet?", "Yes! Leaving on the {n}th, early flight.",
     "When is Ben leaving for {e}?", TRIP_CITIES),
    ("Did you ever get your {e} repaired?", "Finally, and it cost me {n} dollars.",
     "How much did Ben pay to repair the {e}?", DEVICES),
    ("Is the new {e} working out?", "Mostly, though it broke after {n} days once.",
     "After how many days did Ben's {e} break?", APPLIANCES),
    ("How often do you go back to {e}?", "About {n} times a year, family reasons.",
     "How often does Ben visit {e}?", CITIES),
]  # fmt: skip
EXCHANGES_PER_TEMPLATE = 5
DIALOGUE_FILLERS = [
    "Ana: Haha, sounds about right.",
    "Ben: Anyway, how was your week?",
    "Ana: Busy, but good. Work is work.",
    "Ben: Same here, honestly.",
]


@dataclass
class DialogueSet:
    """Lines of one thread per user, in order, and questions naming the target line."""

    lines: dict[str, list[str]] = field(default_factory=dict)
    questions: list[tuple[str, str, int]] = field(default_factory=list)  # user, text, line


def generate_dialogues(seed: int = SEED, users: int = 2) -> DialogueSet:
    rng = random.Random(seed + 1)
    out = DialogueSet()
    for user_index in range(users):
        user_id = f"talker-{user_index:02d}"
        exchanges = [
            (asked, reply, question, entity)
            for asked, reply, question, pool in _EXCHANGES
            for entity in rng.sample(pool, EXCHANGES_PER_TEMPLATE)
        ]
        rng.shuffle(exchanges)
        lines: list[str] = []
        for asked, reply, question, entity in exchanges:
            lines.append("Ana: " + asked.format(e=entity))
            lines.append("Ben: " + reply.format(n=rng.randint(2, 28)))
            out.questions.append((user_id, question.format(e=entity), len(lines) - 1))
            lines.extend(rng.sample(DIALOGUE_FILLERS, 2))
        out.lines[user_id] = lines
    return out
