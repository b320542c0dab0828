"""Erasing a user while their turns are being written as memory: nothing outlives it."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import connection, connections, transaction
from django.test import override_settings

from memory_app.models import Memory
from memory_app.services.conversation import conversation_remember_turns
from memory_app.services.extraction import memories_extract_from_turn
from sessions_app.models import ChatSession, ChatTurn, Tenant
from sessions_app.services.erasure import user_erase
from tests.integrations.loopback import serve_fake_llm
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db(transaction=True)


def _someone_waits_on_a_lock() -> bool:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return bool(cursor.fetchone()[0])


def test_an_erasure_waits_for_a_turn_memory_in_flight_and_deletes_it(tenant: Tenant) -> None:
    # The writer has taken its locks, checked the turn is live and inserted its memory,
    # but not yet committed, when the erasure starts: the erasure must wait for that
    # commit and delete the row, not delete what it sees and let the write land after.
    session = new_session(tenant)
    record(tenant, session, "My locker code is 1035.", "Noted.")
    Memory.objects.filter(tenant=tenant, session_id=session.pk).delete()
    holding, go = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def write() -> None:
        try:
            with transaction.atomic():  # the writer's locks last to this block's commit
                turns = list(ChatTurn.objects.filter(session_id=session.pk))
                outcome["written"] = len(conversation_remember_turns(turns=turns))
                holding.set()
                go.wait(60)
        finally:
            holding.set()
            connection.close()

    def erase() -> None:
        try:
            outcome["erased"] = user_erase(tenant=tenant, user_id=session.user_id)
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    assert holding.wait(60) and outcome.get("written") == 1
    eraser = threading.Thread(target=erase)
    eraser.start()
    deadline = time.monotonic() + 60
    while eraser.is_alive() and not _someone_waits_on_a_lock():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    go.set()
    writer.join(60)
    eraser.join(60)
    assert "erased" in outcome
    assert not ChatSession.objects.filter(tenant=tenant, user_id=session.user_id).exists()
    assert not Memory.objects.filter(tenant=tenant, user_id=session.user_id).exists()
    assert not Memory.objects.filter(tenant=tenant, session_id=session.pk).exists()


def test_a_turn_erased_while_its_extraction_waits_for_the_llm_leaves_no_memory(
    tenant: Tenant,
) -> None:
    # Extraction reads the turn, then waits for the LLM; the user is erased (committed)
    # meanwhile. What the LLM then answers must not be added for a user who is gone.
    armed, asked, go = threading.Event(), threading.Event(), threading.Event()

    def reply(body: dict[str, object]) -> str:
        if armed.is_set():
            asked.set()
            go.wait(60)
        return json.dumps({"memories": [{"type": "fact", "content": "Lives in Ghent"}]})

    with (
        serve_fake_llm() as llm,
        override_settings(
            ENGRAM_LLM_URL=f"{llm.url}/v1", ENGRAM_LLM_API_KEY="sk-test", ENGRAM_LLM_MODEL="m"
        ),
    ):
        llm.chat_reply = reply
        session = new_session(tenant)
        record(tenant, session, "I live in Ghent.", "Noted.")
        turn = ChatTurn.objects.get(session_id=session.pk, turn_number=1)
        Memory.objects.filter(tenant=tenant).exclude(source="conversation_turn").delete()
        armed.set()
        outcome: dict[str, object] = {}

        def extract() -> None:
            try:
                outcome["added"] = memories_extract_from_turn(turn_id=turn.pk)
            except Exception as exc:
                outcome["error"] = exc
            finally:
                asked.set()
                connection.close()

        extractor = threading.Thread(target=extract)
        extractor.start()
        assert asked.wait(60)
        user_erase(tenant=tenant, user_id=session.user_id)
        go.set()
        extractor.join(60)
    assert "error" not in outcome, outcome
    assert outcome["added"] == []
    assert not Memory.objects.filter(tenant=tenant, user_id=session.user_id).exists()
