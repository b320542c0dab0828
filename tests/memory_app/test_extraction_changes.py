"""A user's facts that change, read from recorded turns by the rules: the newer statement
of an attribute (occupation, diet, a budget, home, employer) supersedes the older, a
sentence saying a value has ended ends its memory, a correction in one message keeps the
corrected value, and an explicit "remember that …" is always kept."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from memory_app.models import Memory
from memory_app.subject_endings import WORK_SUBJECTS, Ceased, ceased_values
from memory_app.subjects import Statement, statement_of
from sessions_app.hooks import turn_recorded
from sessions_app.models import ChatTurn, Tenant
from sessions_app.services.sessions import session_create
from tests.memory_app.test_memories_api import add
from tests.memory_app.test_memory_types_metadata_relations import created

pytestmark = pytest.mark.django_db


def say(tenant: Tenant, *messages: str, user_id: str = "alice") -> None:
    """Each message a turn of its own session, a day after the one before."""
    start = timezone.now() - timedelta(days=len(messages))
    for day, message in enumerate(messages):
        session = session_create(tenant=tenant, user_id=user_id, agent_id="shop")
        turn = ChatTurn.objects.create(
            tenant=tenant,
            session=session,
            turn_number=1,
            user_message=message,
            occurred_at=start + timedelta(days=day),
        )
        turn_recorded.send(
            sender=ChatTurn, turn_id=turn.pk, session_id=session.pk, tenant_id=tenant.pk
        )


def extracted(tenant: Tenant) -> dict[str, Memory]:
    return {
        m.content: m
        for m in Memory.objects.filter(tenant=tenant).exclude(source="conversation_turn")
    }


def current(tenant: Tenant) -> list[str]:
    return sorted(
        content
        for content, m in extracted(tenant).items()
        if m.superseded_by_id is None and m.valid_to is None
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I work as a nurse at Santa Maria hospital", ("occupation", "nurse")),
        ("I started a new job as a data analyst at Farfetch", ("occupation", "data analyst")),
        ("I'm a high school chemistry teacher.", ("occupation", "high school chemistry teacher")),
        ("I'm vegetarian", ("diet", "vegetarian")),
        ("We're strictly vegan at home", ("diet", "vegan")),
        ("My budget for the trip is 4200 euros.", ("trip budget", "4200 euros")),
        ("We raised the trip budget to 5000 euros", ("trip budget", "5000 euros")),
        ("Our whole budget is 3600 euros", ("budget", "3600 euros")),
    ],
)
def test_attributes_the_subject_rules_read(text: str, expected: tuple[str, str]) -> None:
    assert statement_of(text) == Statement(*expected)
    # Without a known occupation after "I'm a", or with "I have", no occupation.
    assert statement_of("I'm a terrible cook") is statement_of("I have a teacher") is None


def test_sentences_that_say_a_value_has_ended() -> None:
    assert ceased_values("I started a new job; I quit nursing") == [Ceased(frozenset({"nurs"}))]
    assert ceased_values("I'm not vegetarian anymore, I'm pescatarian") == [
        Ceased(frozenset({"vegetarian"}))
    ]
    assert ceased_values("I don't live in London any more.") == [
        Ceased(frozenset({"london"}), frozenset({"home"}))
    ]
    assert ceased_values("I'm no longer a nurse.") == [Ceased(frozenset({"nurs"}))]
    assert ceased_values("I'm not a fan of tea. I used to live in Rome.") == []


def test_a_new_job_supersedes_the_old_occupation(tenant: Tenant) -> None:
    say(
        tenant,
        "I work as a nurse at Santa Maria hospital.",
        "I live in Lisbon.",
        "I work at Google.",
        "I started a new job as a data analyst at Farfetch; I quit nursing",
        "I moved to Porto.",
        "I work at Apple.",
    )
    memories = extracted(tenant)
    new_job = memories["I started a new job as a data analyst at Farfetch"]
    nurse = memories["I work as a nurse at Santa Maria hospital"]
    assert nurse.superseded_by_id == new_job.pk and nurse.valid_to == new_job.valid_from
    # Home and employer changes supersede as they did.
    assert current(tenant) == [
        "I moved to Porto",
        "I started a new job as a data analyst at Farfetch",
        "I work at Apple",
    ]


def test_a_new_job_at_another_company_supersedes_the_employer(tenant: Tenant) -> None:
    say(tenant, "I work at Atlas Robotics.", "I started a new job at Nortada Labs.")
    memories = extracted(tenant)
    atlas, nortada = (
        memories["I work at Atlas Robotics"],
        memories["I started a new job at Nortada Labs"],
    )
    assert atlas.subject == nortada.subject == "employer"
    assert atlas.superseded_by_id == nortada.pk
    assert current(tenant) == ["I started a new job at Nortada Labs"]


def test_a_new_diet_supersedes_the_old(tenant: Tenant) -> None:
    say(tenant, "I'm vegetarian.", "I'm vegan now")
    memories = extracted(tenant)
    assert memories["I'm vegetarian"].superseded_by_id == memories["I'm vegan now"].pk
    assert current(tenant) == ["I'm vegan now"]


def test_saying_a_value_has_ended_ends_its_memory(tenant: Tenant) -> None:
    say(
        tenant,
        "I'm vegetarian.",
        "I live in London.",
        "I'm not vegetarian anymore, I'm pescatarian now.",
        "I don't live in London anymore.",
    )
    memories = extracted(tenant)
    vegetarian, london = memories["I'm vegetarian"], memories["I live in London"]
    assert current(tenant) == ["I'm pescatarian now"]
    assert vegetarian.superseded_by_id == memories["I'm pescatarian now"].pk
    assert london.superseded_by_id is None and london.valid_to is not None


def test_quitting_the_job_ends_the_occupation_and_the_employer(tenant: Tenant) -> None:
    say(
        tenant,
        "I'm vegetarian.",
        "I work as a nurse at Santa Maria hospital.",
        "I work at Acme.",
        "I quit smoking.",
        "I stopped eating meat.",
    )
    work = ["I work as a nurse at Santa Maria hospital", "I work at Acme"]
    # Neither habit names the job, and no meat is no end of a vegetarian diet.
    assert current(tenant) == [*work, "I'm vegetarian"]
    say(tenant, "I quit my job to travel for a year.")
    assert current(tenant) == ["I'm vegetarian"]
    memories = extracted(tenant)
    for content in work:
        assert memories[content].valid_to is not None
        assert memories[content].superseded_by_id is None
    assert ceased_values("I quit my job.") == [Ceased(frozenset(), WORK_SUBJECTS)]
    assert ceased_values("I lost my job") == ceased_values("I've just quit my job.")


def test_an_ending_ends_only_the_user_s_fact_it_is_about(tenant: Tenant, api: APIClient) -> None:
    say(
        tenant,
        "I work at Acme.",
        "My favourite shop is Acme Hardware.",
        "I live in Lisbon.",
    )
    bus = "My favourite means of transport is the bus"
    created(add(api, content=bus, type="preference", occurred_at="2020-01-01T00:00:00Z"))
    kept = ["I live in Lisbon", bus, "My favourite shop is Acme Hardware"]
    say(
        tenant,
        "I don't think the bus stops here anymore.",  # about the bus, not the user
        "The bus no longer stops here.",
        "I stopped by the Lisbon office today.",  # a visit
        "I'm not sure the bus stops here anymore.",
    )
    assert current(tenant) == sorted([*kept, "I work at Acme"])
    say(tenant, "I no longer work at Acme.")  # the employer, not the shop
    assert current(tenant) == kept
    assert extracted(tenant)["I work at Acme"].valid_to is not None


def test_a_correction_in_one_message_keeps_the_corrected_value(tenant: Tenant) -> None:
    say(tenant, "I work as a teacher. Actually no, I work as a pilot.")
    assert current(tenant) == ["I work as a pilot"]


def test_an_updated_budget_supersedes_the_earlier(tenant: Tenant) -> None:
    say(tenant, "My budget for the trip is 4200 euros.", "We raised the trip budget to 5000 euros.")
    memories = extracted(tenant)
    raised = memories["We raised the trip budget to 5000 euros"]
    assert memories["My budget for the trip is 4200 euros"].superseded_by_id == raised.pk
    assert raised.summary == "User's trip budget is 5000 euros"
    assert current(tenant) == ["We raised the trip budget to 5000 euros"]


def test_remember_that_is_always_kept(tenant: Tenant) -> None:
    say(
        tenant,
        "Remember that I'm allergic to penicillin.",
        "Please remember that my flight lands at 6pm.",
    )
    memories = extracted(tenant)
    assert memories["I'm allergic to penicillin"].summary == "User is allergic to penicillin"
    flight = memories["my flight lands at 6pm"]
    assert flight.summary == "User asked to remember: their flight lands at 6pm"


def test_no_longer_there_ends_the_current_employer_or_home(tenant: Tenant) -> None:
    say(tenant, "I work at Acme.", "I live in Lisbon.", "My favourite shop is Acme Hardware.")
    say(tenant, "I don't work there anymore.")
    assert current(tenant) == ["I live in Lisbon", "My favourite shop is Acme Hardware"]
    assert extracted(tenant)["I work at Acme"].valid_to is not None
    say(tenant, "I'm not living there any more.")
    assert current(tenant) == ["My favourite shop is Acme Hardware"]
    assert extracted(tenant)["I live in Lisbon"].valid_to is not None
    employer, home = frozenset({"employer"}), frozenset({"home"})
    assert ceased_values("I no longer work there.") == [Ceased(frozenset(), employer)]
    assert ceased_values("I quit working there") == [Ceased(frozenset(), employer)]
    assert ceased_values("I don't live there anymore") == [Ceased(frozenset(), home)]
