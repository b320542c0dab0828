"""The outbox drain: every kept task is published once, also with drains in parallel."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from config.celery_app import app as celery_app
from sessions_app.models import OutboxMessage
from sessions_app.services import outbox
from sessions_app.services.outbox import outbox_drain, task_publish

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "celery"  # the default queue: the drain publishes where `.delay` would


@pytest.fixture
def broker_queue() -> Any:
    """The real Valkey's default queue, emptied before and after; tasks are published,
    not run (no eager mode, no worker)."""
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    client.delete(QUEUE)
    celery_app.conf.task_always_eager = False
    try:
        yield client
    finally:
        celery_app.conf.task_always_eager = True
        outbox._broker_down_until = 0.0  # the next test starts with a trusted broker
        client.delete(QUEUE)
        client.close()


def test_two_drains_in_parallel_publish_each_message_exactly_once(broker_queue: Any) -> None:
    OutboxMessage.objects.bulk_create(
        OutboxMessage(task_name="sessions_app.purge_budget_reservations", args=[], kwargs={})
        for _ in range(60)
    )
    results = []

    def drain() -> None:
        try:
            results.append(outbox_drain(batch_size=7))
        finally:
            connection.close()

    threads = [threading.Thread(target=drain) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sum(result.sent for result in results) == 60
    assert not any(result.failed for result in results)
    assert broker_queue.llen(QUEUE) == 60  # nothing sent twice, nothing lost
    assert not OutboxMessage.objects.exists()


def test_a_dead_broker_keeps_the_task_and_the_drain_sends_it_later(
    broker_queue: Any, settings: Any
) -> None:
    good = (celery_app.conf.get("broker_url"), celery_app.conf.get("broker_write_url"))
    dead = "redis://127.0.0.1:1/0"  # nothing listens there
    celery_app.conf.broker_url = celery_app.conf.broker_write_url = dead
    try:
        assert task_publish("sessions_app.purge_budget_reservations") is False
        kept = OutboxMessage.objects.get()
        assert kept.task_name == "sessions_app.purge_budget_reservations" and kept.last_error
        # Still down: the drain stops at the first failure and keeps the row.
        result = outbox_drain()
        assert result.failed and result.sent == 0 and result.remaining == 1
        assert OutboxMessage.objects.get().attempts == 1
    finally:
        celery_app.conf.broker_url, celery_app.conf.broker_write_url = good
    result = outbox_drain()
    assert (result.sent, result.failed, result.remaining) == (1, False, 0)
    assert broker_queue.llen(QUEUE) == 1
