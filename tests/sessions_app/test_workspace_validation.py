"""Acceptance 5: another tenant's session is 404 on every new route, and bad input is a
4xx with a code and the field at fault, never a 500, with nothing written."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, SessionComponent, SessionSelection
from sessions_app.services.snapshots import session_workspace_snapshot
from tests.sessions_app.workspace_helpers import (
    ACER,
    DELL,
    HP,
    assert_error,
    create_session,
    store_laptops,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def sid(api: APIClient) -> str:
    session_id = create_session(api)
    store_laptops(api, session_id)
    for mpn in (DELL, HP):
        api.post(f"/api/v1/sessions/{session_id}/selections", {"mpn": mpn}, format="json")
    api.put(f"/api/v1/sessions/{session_id}/focus", {"mpn": ACER}, format="json")
    return session_id


def state_of(sid: str) -> dict[str, Any]:
    """Everything a write could touch, to prove a refused request wrote nothing."""
    session = ChatSession.objects.get(pk=sid)
    return {
        "context": session_workspace_snapshot(session=session),
        "components": list(
            SessionComponent.objects.filter(session=session)
            .order_by("mpn")
            .values("mpn", "name", "position", "full_data", "fetched_at")
        ),
        "selections": list(
            SessionSelection.objects.filter(session=session)
            .order_by("position")
            .values("mpn", "position", "quantity", "note")
        ),
    }


def call(client: APIClient, method: str, url: str, body: Any = None):
    if method == "get":
        return client.get(url, body or {})
    return getattr(client, method)(url, body, format="json")


EVERY_ROUTE = [
    ("post", "results", {"query": "q", "items": []}),
    ("get", "components", None),
    ("get", "resolve", {"ref": "the first one"}),
    ("put", "focus", {"mpn": DELL}),
    ("get", "selections", None),
    ("post", "selections", {"mpn": ACER}),
    ("get", "selections.csv", None),
    ("patch", f"selections/{DELL}", {"quantity": 2}),
    ("delete", f"selections/{DELL}", None),
    ("post", "selections/reorder", {"mpns": [HP, DELL]}),
    ("post", "cart-link", None),
]


@pytest.mark.parametrize(("method", "route", "body"), EVERY_ROUTE)
def test_another_tenants_session_is_404(
    api: APIClient, other_api: APIClient, sid: str, method: str, route: str, body: Any
) -> None:
    before = state_of(sid)
    response = call(other_api, method, f"/api/v1/sessions/{sid}/{route}", body)
    assert_error(response, 404, "not_found")
    assert state_of(sid) == before
    # the owner gets a 2xx from the same call, so the 404 was about the tenant
    assert call(api, method, f"/api/v1/sessions/{sid}/{route}", body).status_code < 300


@pytest.mark.parametrize(("method", "route", "body"), EVERY_ROUTE)
def test_unknown_or_malformed_session_id_is_404(
    api: APIClient, method: str, route: str, body: Any
) -> None:
    for session_id in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        response = call(api, method, f"/api/v1/sessions/{session_id}/{route}", body)
        assert_error(response, 404, "not_found")


def too_many(n: int) -> list[dict[str, str]]:
    return [{"mpn": f"M{i}"} for i in range(n)]


BAD_INPUT = [
    # results
    ("post", "results", {"items": []}, 400, "invalid", "query"),
    ("post", "results", {"query": "", "items": []}, 400, "invalid", "query"),
    ("post", "results", {"query": "q"}, 400, "invalid", "items"),
    ("post", "results", {"query": "q", "items": "Dell"}, 400, "invalid", "items"),
    ("post", "results", {"query": "q", "items": too_many(101)}, 400, "invalid", "items"),
    ("post", "results", {"query": "q", "items": [{"name": "x"}]}, 400, "invalid", "items.0.mpn"),
    ("post", "results", {"query": "q", "items": [{"mpn": " "}]}, 400, "invalid", "items.0.mpn"),
    (
        "post",
        "results",
        {"query": "q", "items": [{"mpn": "x" * 256}]},
        400,
        "invalid",
        "items.0.mpn",
    ),
    (
        "post",
        "results",
        {"query": "q", "items": [{"mpn": "A", "data": [1]}]},
        400,
        "invalid",
        "items.0.data",
    ),
    (
        "post",
        "results",
        {"query": "q", "items": [{"mpn": "A"}, {"mpn": "A"}]},
        400,
        "invalid",
        "items.1.mpn",
    ),
    ("post", "results", {"query": "q", "filters": "cheap", "items": []}, 400, "invalid", "filters"),
    ("post", "results", {"query": ["q"], "items": []}, 400, "invalid", "query"),
    # resolve
    ("get", "resolve", {}, 400, "invalid", "ref"),
    ("get", "resolve", {"ref": ""}, 400, "invalid", "ref"),
    ("get", "resolve", {"ref": "x" * 501}, 400, "invalid", "ref"),
    ("get", "resolve", {"ref": "the first", "set_focus": "maybe"}, 400, "invalid", "set_focus"),
    ("get", "resolve", {"ref": "the Macbook"}, 404, "unresolved", "ref"),
    ("get", "resolve", {"ref": "the laptop"}, 409, "ambiguous", "ref"),
    ("get", "resolve", {"ref": "the 9th one"}, 404, "unresolved", "ref"),
    # focus
    ("put", "focus", {}, 400, "invalid", "mpn"),
    ("put", "focus", {"mpn": DELL, "ref": "the Dell"}, 400, "invalid", "ref"),
    ("put", "focus", {"mpn": ["x"]}, 400, "invalid", "mpn"),
    ("put", "focus", {"mpn": "NOPE"}, 404, "item_not_found", "mpn"),
    ("put", "focus", {"ref": "the Macbook"}, 404, "unresolved", "ref"),
    # add to cart
    ("post", "selections", {}, 400, "invalid", "mpn"),
    ("post", "selections", {"mpn": ACER, "quantity": 0}, 400, "invalid", "quantity"),
    ("post", "selections", {"mpn": ACER, "quantity": "lots"}, 400, "invalid", "quantity"),
    ("post", "selections", {"mpn": ACER, "quantity": 10**9}, 400, "invalid", "quantity"),
    ("post", "selections", {"mpn": ACER, "note": "n" * 2001}, 400, "invalid", "note"),
    ("post", "selections", {"mpn": {"a": 1}}, 400, "invalid", "mpn"),
    ("post", "selections", {"mpn": "NOPE"}, 404, "item_not_found", "mpn"),
    ("post", "selections", {"ref": "the Macbook"}, 404, "unresolved", "ref"),
    ("post", "selections", {"ref": "the laptop"}, 409, "ambiguous", "ref"),
    ("post", "selections", {"ref": ""}, 400, "invalid", "ref"),
    # change a line
    ("patch", f"selections/{DELL}", {}, 400, "invalid", "quantity"),
    ("patch", f"selections/{DELL}", {"quantity": -1}, 400, "invalid", "quantity"),
    ("patch", f"selections/{DELL}", {"quantity": 1.5}, 400, "invalid", "quantity"),
    ("patch", f"selections/{DELL}", {"note": None}, 400, "invalid", "note"),
    ("patch", f"selections/{ACER}", {"quantity": 2}, 404, "not_in_cart", "mpn"),
    ("patch", "selections/NOPE", {"quantity": 2}, 404, "not_in_cart", "mpn"),
    # remove a line
    ("delete", f"selections/{ACER}", None, 404, "not_in_cart", "mpn"),
    # reorder
    ("post", "selections/reorder", {}, 400, "invalid", "mpns"),
    ("post", "selections/reorder", {"mpns": DELL}, 400, "invalid", "mpns"),
    ("post", "selections/reorder", {"mpns": [DELL]}, 400, "invalid", "mpns"),
    ("post", "selections/reorder", {"mpns": [DELL, DELL]}, 400, "invalid", "mpns"),
    ("post", "selections/reorder", {"mpns": [HP, DELL, ACER]}, 400, "invalid", "mpns"),
    ("post", "selections/reorder", {"mpns": [HP, "NOPE"]}, 400, "invalid", "mpns"),
    ("post", "selections/reorder", {"mpns": [f"M{i}" for i in range(501)]}, 400, "invalid", "mpns"),
    ("post", "selections/reorder", {"mpns": [HP, None]}, 400, "invalid", "mpns.1"),
]


@pytest.mark.parametrize(
    ("method", "route", "body", "status", "code", "field"),
    BAD_INPUT,
    ids=[f"{m} {r} {i}" for i, (m, r, *_rest) in enumerate(BAD_INPUT)],
)
def test_bad_input_is_refused_and_writes_nothing(
    api: APIClient,
    sid: str,
    method: str,
    route: str,
    body: Any,
    status: int,
    code: str,
    field: str,
) -> None:
    before = state_of(sid)
    response = call(api, method, f"/api/v1/sessions/{sid}/{route}", body)
    assert_error(response, status, code, field)
    assert state_of(sid) == before


@pytest.mark.parametrize(
    ("method", "route"),
    [
        ("post", "results"),
        ("put", "focus"),
        ("post", "selections"),
        ("patch", f"selections/{DELL}"),
        ("post", "selections/reorder"),
    ],
)
def test_malformed_json_is_400(api: APIClient, sid: str, method: str, route: str) -> None:
    before = state_of(sid)
    response = getattr(api, method)(
        f"/api/v1/sessions/{sid}/{route}", data="{not json", content_type="application/json"
    )
    assert_error(response, 400, "malformed_json")
    assert state_of(sid) == before


def test_oversized_body_is_413(api: APIClient, sid: str) -> None:
    before = state_of(sid)
    huge = [{"mpn": f"M{i}", "summary": "x" * 9_000} for i in range(100)]  # ~900 kB
    huge[0]["data"] = {"blob": "y" * 300_000}
    response = api.post(
        f"/api/v1/sessions/{sid}/results", {"query": "q", "items": huge}, format="json"
    )
    assert_error(response, 413, "request_too_large")
    assert state_of(sid) == before
