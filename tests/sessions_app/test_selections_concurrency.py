"""Acceptance 3: concurrent adds keep the cart's positions contiguous and unique."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from sessions_app.models import SessionSelection
from sessions_app.services.api_keys import IssuedKey
from tests.sessions_app.workspace_helpers import create_session, store_laptops

ITEMS = [
    {"mpn": f"SKU-{n:02d}", "name": f"Item {n}", "component_type": "part", "data": {"price": n}}
    for n in range(10)
]


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_adds_of_ten_items(api: APIClient, issued_key: IssuedKey) -> None:
    sid = create_session(api)
    store_laptops(api, sid, items=ITEMS)
    barrier = threading.Barrier(50)
    statuses: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def add(n: int) -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.secret}")
            barrier.wait(timeout=30)
            response = client.post(
                f"/api/v1/sessions/{sid}/selections",
                {"mpn": ITEMS[n % 10]["mpn"]},
                format="json",
            )
            with lock:
                statuses.append(response.status_code)
        except BaseException as exc:  # reported by the main thread
            with lock:
                errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=add, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert sorted(statuses) == [200] * 40 + [201] * 10  # each item created once
    rows = list(SessionSelection.objects.filter(session_id=sid).order_by("position"))
    assert [row.position for row in rows] == list(range(1, 11))
    assert sorted(row.mpn for row in rows) == sorted(item["mpn"] for item in ITEMS)
    cart = api.get(f"/api/v1/sessions/{sid}/selections").json()
    assert [line["position"] for line in cart["results"]] == list(range(1, 11))
