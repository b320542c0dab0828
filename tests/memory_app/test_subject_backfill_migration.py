"""Memories stored without a subject (before the rules read occupation, diet and budgets)
get the subject the rules read from their content, by the data migration 0009, so that
a newer statement supersedes them as it does a memory written now."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from rest_framework.test import APIClient

from memory_app.models import Memory
from sessions_app.models import Tenant
from tests.memory_app.test_extraction_changes import current, extracted, say
from tests.memory_app.test_memories_api import add
from tests.memory_app.test_memory_types_metadata_relations import created

pytestmark = pytest.mark.django_db

MIGRATION = "memory_app.migrations.0009_fact_memories_subject_read_from_content"


def test_backfilled_memories_are_superseded_by_a_newer_statement(
    api: APIClient, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    say(
        tenant,
        "I'm vegetarian.",
        "I work as a nurse at Santa Maria hospital.",
        "My budget for the trip is 4200 euros.",
    )
    old = list(extracted(tenant).values())
    created(add(api, content="I go to the gym near Acme", type="fact", subject="gym"))
    # As the rows were stored before memories had a subject.
    Memory.objects.filter(pk__in=[memory.pk for memory in old]).update(subject="")
    turns = Memory.objects.filter(tenant=tenant, source="conversation_turn")
    assert turns.exists()

    migration = importlib.import_module(MIGRATION)
    monkeypatch.setattr(migration, "BATCH", 2)  # several batches
    assert migration.backfill_subjects(apps, None) == 3
    assert migration.backfill_subjects(apps, None) == 0  # a re-run finds nothing left

    assert {content: memory.subject for content, memory in extracted(tenant).items()} == {
        "I'm vegetarian": "diet",
        "I work as a nurse at Santa Maria hospital": "occupation",
        "My budget for the trip is 4200 euros": "trip budget",
        "I go to the gym near Acme": "gym",  # a caller's subject is kept
    }
    assert set(turns.values_list("subject", flat=True)) == {""}  # what was said states none

    for content in ("I'm vegan now", "I work as a pilot", "Our budget for the trip is 5000 euros"):
        created(add(api, content=content, type="fact"))
    assert current(tenant) == [
        "I go to the gym near Acme",
        "I work as a pilot",
        "I'm vegan now",
        "Our budget for the trip is 5000 euros",
    ]
    newer = extracted(tenant)
    vegetarian = newer["I'm vegetarian"]
    assert vegetarian.superseded_by_id == newer["I'm vegan now"].pk
    assert vegetarian.valid_to == newer["I'm vegan now"].valid_from
