"""Decay, erasure and concurrent adds, through the real services and database."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.db import close_old_connections, connection
from django.utils import timezone
from rest_framework.test import APIClient

from memory_app.models import Memory
from memory_app.services.decay import memories_decay
from memory_app.services.memories import MemoryDraft, memory_add
from memory_app.tasks import decay_memories
from sessions_app.models import (
    ChatSession,
    ChatTurn,
    IdempotencyRecord,
    SessionComponent,
    SessionSelection,
    Tenant,
    TurnStep,
)
from sessions_app.services.sessions import session_create


@pytest.mark.django_db
def test_decay_deletes_the_forgotten_and_keeps_the_pinned(tenant: Tenant) -> None:
    start = timezone.now()

    def remember(content: str, **fields: Any) -> Memory:
        draft = MemoryDraft(user_id="alice", type="episodic", content=content, **fields)
        return memory_add(tenant=tenant, draft=draft, now=start).memory

    trivial = remember("We chatted about the weather on Tuesday", importance=0.1)
    pinned = remember(
        "Alice's wedding anniversary dinner was at Belcanto", importance=0.1, pinned=True
    )
    kept = remember("Alice always orders gluten-free meals", importance=1.0)
    Memory.objects.filter(pk=kept.pk).update(access_count=25)

    fresh = memories_decay(now=start + timedelta(days=1))
    assert fresh.deleted == 0
    assert Memory.objects.get(pk=trivial.pk).decay_score > 0.9

    later = start + timedelta(days=120)
    memories_decay(now=later, delete=False)
    scores = dict(Memory.objects.values_list("pk", "decay_score"))
    assert scores[trivial.pk] < 0.2
    assert scores[pinned.pk] < 0.2
    assert scores[kept.pk] > 0.5

    report = memories_decay(now=later)
    assert report.deleted == 1
    assert set(Memory.objects.values_list("pk", flat=True)) == {pinned.pk, kept.pk}


@pytest.mark.django_db
def test_decay_task_runs_in_batches_and_reading_refreshes(tenant: Tenant) -> None:
    old = timezone.now() - timedelta(days=400)
    for index in range(5):
        draft = MemoryDraft(
            user_id="bob", type="episodic", content=f"Visited shop {index}", importance=0.0
        )
        memory_add(tenant=tenant, draft=draft, now=old)
    read_recently = Memory.objects.get(content="Visited shop 3")
    Memory.objects.filter(pk=read_recently.pk).update(last_accessed_at=timezone.now())
    report = memories_decay(batch_size=2)
    assert report.batches == 3 and report.scored == 5 and report.deleted == 4
    assert list(Memory.objects.values_list("content", flat=True)) == ["Visited shop 3"]
    assert decay_memories.delay().get() == {"scored": 1, "deleted": 0, "batches": 1}


def _rows_about(tenant: Tenant, user_id: str, session_ids: list[uuid.UUID]) -> dict[str, int]:
    """Every table in the project: the tenant's rows carrying the user id or tied to the
    user's sessions (or to their memories, or naming them in a sharing list)."""
    found: dict[str, int] = {}
    for model in apps.get_models():
        names = {field.name for field in model._meta.get_fields()}
        rows = model.objects.all()
        if "tenant" in names:
            rows = rows.filter(tenant=tenant)
        elif "memory" in names:
            rows = rows.filter(memory__tenant=tenant)
        elif model is not Tenant:
            rows = rows.none() if "user_id" not in names else rows
        counted = 0
        if "user_id" in names:  # end-user ids are plain columns (auth FKs are `user`)
            counted += rows.filter(user_id=user_id).count()
        if "session" in names or "session_id" in names:
            counted += rows.filter(session_id__in=session_ids).count()
        if "memory" in names:
            counted += rows.filter(memory__user_id=user_id).count()
        if "allowed_users" in names:
            counted += rows.filter(allowed_users__contains=[user_id]).count()
        if counted:
            found[model._meta.db_table] = counted
    return found


def _session_with_everything(tenant: Tenant, user_id: str) -> ChatSession:
    session = session_create(tenant=tenant, user_id=user_id, agent_id="shop")
    turn = ChatTurn.objects.create(
        tenant=tenant, session=session, turn_number=1, user_message="I live in Lisbon"
    )
    TurnStep.objects.create(
        tenant=tenant,
        turn=turn,
        session=session,
        user_id=user_id,
        agent_id="shop",
        step_order=1,
        step_type="intent",
    )
    SessionComponent.objects.create(
        tenant=tenant, session=session, mpn="XPS-9530", fetched_at=timezone.now()
    )
    SessionSelection.objects.create(tenant=tenant, session=session, mpn="XPS-9530", position=1)
    IdempotencyRecord.objects.create(
        tenant=tenant,
        key=f"k-{user_id}",
        scope=f"sessions/{session.pk}/turns",
        session_id=session.pk,
        request_hash="0" * 64,
    )
    return session


# The tables holding rows about a user with a session of everything and memories.
ALICE_TABLES = {
    "memory",
    "memory_version",
    "memory_term_stat",  # BM25 statistics hold her words: erasure removes them too
    "memory_lexicon_stat",
    "chat_session",
    "chat_turn",
    "turn_step",
    "session_component",
    "session_selection",
    "idempotency_record",
}
# Bob's rows: his session of everything and two memories (one shared with alice).
BOB_ROWS = {
    "chat_session": 1,
    "chat_turn": 1,
    "turn_step": 2,
    "session_component": 1,
    "session_selection": 1,
    "idempotency_record": 1,
    "memory": 2,
    "memory_lexicon_stat": 1,
    "memory_term_stat": 6,
}


def _remember_alice_and_bob(
    tenant: Tenant, other_tenant: Tenant, alice_session: ChatSession
) -> None:
    """Alice's fact (merged: two versions), Bob's memory shared with her, Bob's own fact,
    and another tenant's alice's fact."""
    for content in ("I live in Lisbon", "I live in Lisbon, Portugal"):  # merged: 2 versions
        memory_add(
            tenant=tenant,
            draft=MemoryDraft(
                user_id="alice", type="fact", content=content, session_id=alice_session.pk
            ),
        )
    memory_add(
        tenant=tenant,
        draft=MemoryDraft(
            user_id="bob",
            type="fact",
            content="Alice helped me pick the XPS",
            scope="shared",
            allowed_users=["alice"],
        ),
    )
    memory_add(
        tenant=tenant, draft=MemoryDraft(user_id="bob", type="fact", content="I live in Porto")
    )
    memory_add(
        tenant=other_tenant,
        draft=MemoryDraft(user_id="alice", type="fact", content="I live in Lisbon"),
    )


def _assert_one_of_each_deleted(response: Any) -> None:
    assert response.status_code == 200, response.content
    deleted = response.json()["deleted"]
    assert deleted["memories"] == 1 and deleted["memory_versions"] == 1
    assert deleted["sessions"] == 1 and deleted["turns"] == 1 and "steps" not in deleted
    assert response.json()["anonymised"] == {"steps": 1}  # kept as spend, not deleted
    assert deleted["components"] == 1 and deleted["selections"] == 1
    assert deleted["idempotency_records"] == 1 and deleted["memories_unshared"] == 1


@pytest.mark.django_db
def test_erasure_leaves_no_row_about_the_user(
    api: APIClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    alice_session = _session_with_everything(tenant, "alice")
    bob_session = _session_with_everything(tenant, "bob")
    elsewhere = _session_with_everything(other_tenant, "alice")  # another tenant's alice
    _remember_alice_and_bob(tenant, other_tenant, alice_session)
    assert set(_rows_about(tenant, "alice", [alice_session.pk])) == ALICE_TABLES

    _assert_one_of_each_deleted(api.delete("/api/v1/users/alice"))

    assert _rows_about(tenant, "alice", [alice_session.pk]) == {}
    # Erasure is per tenant: another tenant's "alice" is another person.
    assert _rows_about(other_tenant, "alice", [elsewhere.pk]) != {}
    assert Memory.objects.get(tenant=other_tenant, user_id="alice")
    assert ChatSession.objects.filter(pk=elsewhere.pk).exists()
    # Bob keeps everything, minus alice in his shared memory's allowed_users.
    assert _rows_about(tenant, "bob", [bob_session.pk]) == BOB_ROWS
    assert Memory.objects.get(content="Alice helped me pick the XPS").allowed_users == []


@pytest.mark.django_db
def test_user_erased_hook_is_sent_in_the_transaction(api: APIClient, tenant: Tenant) -> None:
    from sessions_app.hooks import user_erased

    seen: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        seen.append({**kwargs, "in_atomic": connection.in_atomic_block})

    user_erased.connect(receiver)
    try:
        api.delete("/api/v1/users/zoe")
    finally:
        user_erased.disconnect(receiver)
    assert seen and seen[0]["user_id"] == "zoe" and seen[0]["tenant_id"] == tenant.pk


@pytest.mark.django_db(transaction=True)
def test_two_identical_adds_at_once_make_one_row(tenant: Tenant) -> None:
    barrier = threading.Barrier(4)
    actions: list[str] = []

    def add(content: str) -> None:
        try:
            barrier.wait()
            draft = MemoryDraft(user_id="alice", type="fact", content=content)
            actions.append(memory_add(tenant=tenant, draft=draft).action)
        finally:
            close_old_connections()
            connection.close()

    contents = ["I am allergic to peanuts"] * 2 + ["I'm allergic to peanuts."] * 2
    threads = [threading.Thread(target=add, args=(c,)) for c in contents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(actions).count("created") == 1
    assert len(actions) == 4
    assert Memory.objects.filter(tenant=tenant).count() == 1


@pytest.mark.django_db(transaction=True)
def test_identical_adds_at_once_make_one_row_per_agent(tenant: Tenant) -> None:
    barrier = threading.Barrier(6)
    actions: list[tuple[str, str]] = []

    def add(agent_id: str) -> None:
        try:
            barrier.wait()
            draft = MemoryDraft(
                user_id="alice", agent_id=agent_id, type="fact", content="My dog is called Rex"
            )
            actions.append((agent_id, memory_add(tenant=tenant, draft=draft).action))
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=add, args=(a,)) for a in ["ag1", "ag2"] * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(actions) == [
        *[("ag1", "created")] + [("ag1", "duplicate")] * 2,
        *[("ag2", "created")] + [("ag2", "duplicate")] * 2,
    ]
    rows = Memory.objects.filter(tenant=tenant).values_list("agent_id", flat=True)
    assert sorted(rows) == ["ag1", "ag2"]


def test_admin_erase_action_asks_first_then_erases_the_user(tenant, admin_client) -> None:
    """The admin's right-to-erasure action: a confirmation page, then the same erasure
    as the API; another user of the tenant is untouched."""
    from memory_app.models import Memory
    from memory_app.services.memories import MemoryDraft, memory_add
    from sessions_app.models import ChatSession
    from sessions_app.services.sessions import session_create

    doomed = session_create(tenant=tenant, user_id="leaver", agent_id="shop")
    kept = session_create(tenant=tenant, user_id="stayer", agent_id="shop")
    for user_id in ("leaver", "stayer"):
        draft = MemoryDraft(user_id=user_id, type="fact", content=f"{user_id} lives in Porto")
        memory_add(tenant=tenant, draft=draft)
    url = "/admin/sessions_app/chatsession/"
    selection = {"action": "erase_users", "_selected_action": [str(doomed.pk)]}
    confirm = admin_client.post(url, selection)
    assert confirm.status_code == 200 and b"leaver" in confirm.content
    assert ChatSession.objects.filter(pk=doomed.pk).exists()  # nothing erased yet
    done = admin_client.post(url, {**selection, "confirm": "yes"}, follow=True)
    assert b"Erased 1 user" in done.content
    assert not ChatSession.objects.filter(user_id="leaver").exists()
    assert not Memory.objects.filter(user_id="leaver").exists()
    assert ChatSession.objects.filter(pk=kept.pk).exists()
    assert Memory.objects.filter(user_id="stayer").count() == 1
