"""Session workspace over HTTP: results, components, resolve, focus, cart, CSV, expiry,
and the snapshot contract the turn rollback relies on. The cart page that cart links
open is in test_cart_page."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, SessionComponent, SessionSelection, Tenant
from sessions_app.services.demo import demo_load
from sessions_app.services.snapshots import session_workspace_restore, session_workspace_snapshot
from tests.sessions_app.cart_helpers import add, cart, stocked_session
from tests.sessions_app.workspace_helpers import (
    ACER,
    ASUS,
    DELL,
    HP,
    LENOVO,
    assert_error,
    create_session,
    store_laptops,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def sid(api: APIClient) -> str:
    return stocked_session(api)


def items(prefix: str, count: int) -> list[dict]:
    return [{"mpn": f"{prefix}-{n}", "name": f"{prefix} {n}"} for n in range(count)]


# --- results and components ------------------------------------------------------------


def test_new_results_take_positions_and_old_ones_lose_them(api: APIClient, sid: str) -> None:
    api.post(
        f"/api/v1/sessions/{sid}/results",
        {
            "query": "cheaper ones",
            "filters": {"max_price": 800},
            "items": [
                {"mpn": ACER, "name": "Acer Swift (refreshed)", "data": {"price": 650}},
                {"mpn": "NEW-1", "name": "Chromebook"},
            ],
        },
        format="json",
    )
    body = api.get(f"/api/v1/sessions/{sid}/components").json()
    assert body["count"] == 6  # upserted, not duplicated
    order = [(c["mpn"], c["position"]) for c in body["results"]]
    assert order[:2] == [(ACER, 1), ("NEW-1", 2)]
    assert {mpn for mpn, pos in order[2:]} == {DELL, HP, LENOVO, ASUS}
    assert all(pos is None for _, pos in order[2:])
    assert body["results"][0]["name"] == "Acer Swift (refreshed)"
    assert body["results"][0]["data"] == {"price": 650}
    # "the first one" now means the first of what was shown last
    first = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the first one"}).json()
    assert first["item"]["mpn"] == ACER


def test_query_history_keeps_the_last_twenty(api: APIClient, sid: str) -> None:
    for n in range(25):
        api.post(
            f"/api/v1/sessions/{sid}/results",
            {"query": f"q{n}", "filters": {"n": n}, "items": []},
            format="json",
        )
    session = ChatSession.objects.get(pk=sid)
    assert [h["query"] for h in session.query_history] == [f"q{n}" for n in range(5, 25)]
    assert session.last_query == "q24" and session.last_filters == {"n": 24}
    assert session.last_results == []


@override_settings(ENGRAM_MAX_FETCHED_ITEMS=6)
def test_eviction_keeps_newest_and_never_the_cart_or_focus(api: APIClient, sid: str) -> None:
    assert add(api, sid, mpn=LENOVO).status_code == 201
    api.put(f"/api/v1/sessions/{sid}/focus", {"mpn": ASUS}, format="json")
    api.post(
        f"/api/v1/sessions/{sid}/results",
        {"query": "more", "items": items("X", 5)},
        format="json",
    )
    kept = set(SessionComponent.objects.filter(session_id=sid).values_list("mpn", flat=True))
    # 5 new + 1 newest of the old batch fit in 6; the cart and focus items stay anyway
    assert {f"X-{n}" for n in range(5)} <= kept
    assert {LENOVO, ASUS} <= kept
    assert DELL in kept  # first of the old batch: next-newest by (fetched_at, position)
    assert HP not in kept and ACER not in kept


def test_components_of_an_empty_session(api: APIClient) -> None:
    sid = create_session(api)
    assert api.get(f"/api/v1/sessions/{sid}/components").json() == {"count": 0, "results": []}


# --- resolve and focus -----------------------------------------------------------------


def test_resolve_sets_focus_unless_told_not_to(api: APIClient, sid: str) -> None:
    r = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the lightest", "set_focus": "false"})
    assert r.status_code == 200 and r.json()["focus_set"] is False
    assert ChatSession.objects.get(pk=sid).focus_mpn is None
    r = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the lightest"})
    assert r.json() | {"item": None} == {
        "item": None,
        "rule": "superlative",
        "expression": "lightest",
        "message": r.json()["message"],
        "focus_set": True,
    }
    assert ChatSession.objects.get(pk=sid).focus_mpn == LENOVO
    it = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "add it"}).json()
    assert (it["item"]["mpn"], it["rule"]) == (LENOVO, "focus")


def test_unresolved_and_ambiguous_carry_candidates(api: APIClient, sid: str) -> None:
    error = assert_error(
        api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the Macbook"}), 404, "unresolved"
    )
    assert [c["mpn"] for c in error["candidates"]] == [DELL, HP, LENOVO, ASUS, ACER]
    assert error["candidates"][0] == {"mpn": DELL, "name": "Dell XPS 15", "position": 1}
    error = assert_error(
        api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the laptop"}), 409, "ambiguous"
    )
    assert len(error["candidates"]) == 5
    error = assert_error(
        api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "it"}), 404, "unresolved"
    )
    assert error["rule"] == "focus"
    assert ChatSession.objects.get(pk=sid).focus_mpn is None


def test_focus_by_mpn_and_by_ref(api: APIClient, sid: str) -> None:
    r = api.put(f"/api/v1/sessions/{sid}/focus", {"mpn": HP}, format="json")
    assert r.status_code == 200 and r.json()["item"]["mpn"] == HP
    r = api.put(f"/api/v1/sessions/{sid}/focus", {"ref": "the thinkpad"}, format="json")
    assert r.json()["item"]["mpn"] == LENOVO and r.json()["rule"] == "name"
    assert api.get(f"/api/v1/sessions/{sid}").json()["focus_mpn"] == LENOVO


@pytest.mark.parametrize(
    ("method", "route"), [("get", "resolve"), ("put", "focus"), ("post", "selections")]
)
def test_every_route_taking_a_reference_answers_and_documents_404_and_409(
    api: APIClient, sid: str, method: str, route: str
) -> None:
    def send(ref: str):  # type: ignore[no-untyped-def]
        path = f"/api/v1/sessions/{sid}/{route}"
        if method == "get":
            return api.get(path, {"ref": ref})
        return getattr(api, method)(path, {"ref": ref}, format="json")

    assert len(assert_error(send("the laptop"), 409, "ambiguous")["candidates"]) == 5
    assert len(assert_error(send("the Macbook"), 404, "unresolved")["candidates"]) == 5
    assert ChatSession.objects.get(pk=sid).focus_mpn is None  # neither moved the focus
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    responses = schema["paths"][f"/api/v1/sessions/{{session_id}}/{route}"][method]["responses"]
    assert {"404", "409"} <= set(responses)
    assert "ambiguous" in responses["409"]["description"]


# --- the cart --------------------------------------------------------------------------


def test_add_twice_is_a_no_op_that_says_so(api: APIClient, sid: str) -> None:
    first = add(api, sid, mpn=DELL, quantity=2, note="for work")
    assert first.status_code == 201 and first.json()["added"] is True
    again = add(api, sid, mpn=DELL, quantity=5)
    assert again.status_code == 200 and again.json()["added"] is False
    assert again.json() == {**first.json(), "added": False}  # quantity 2 kept, not 5
    assert again.json()["price"] == "899.000000" and again.json()["name"] == "Dell XPS 15"
    assert cart(api, sid) == [(1, DELL, 2)]


def test_remove_keeps_positions_contiguous(api: APIClient, sid: str) -> None:
    for mpn in (DELL, HP, LENOVO, ASUS):
        add(api, sid, mpn=mpn)
    assert api.delete(f"/api/v1/sessions/{sid}/selections/{HP}").status_code == 204
    assert cart(api, sid) == [(1, DELL, 1), (2, LENOVO, 1), (3, ASUS, 1)]
    assert api.delete(f"/api/v1/sessions/{sid}/selections/{DELL}").status_code == 204
    assert cart(api, sid) == [(1, LENOVO, 1), (2, ASUS, 1)]
    assert_error(api.delete(f"/api/v1/sessions/{sid}/selections/{DELL}"), 404, "not_in_cart")


def test_patch_and_reorder(api: APIClient, sid: str) -> None:
    for mpn in (DELL, HP, ACER):
        add(api, sid, mpn=mpn)
    r = api.patch(
        f"/api/v1/sessions/{sid}/selections/{HP}", {"quantity": 3, "note": "gift"}, format="json"
    )
    assert r.status_code == 200 and (r.json()["quantity"], r.json()["note"]) == (3, "gift")
    r = api.post(
        f"/api/v1/sessions/{sid}/selections/reorder", {"mpns": [ACER, DELL, HP]}, format="json"
    )
    assert r.status_code == 200
    assert [line["mpn"] for line in r.json()["results"]] == [ACER, DELL, HP]
    assert cart(api, sid) == [(1, ACER, 1), (2, DELL, 1), (3, HP, 3)]
    assert r.json()["total"] == str(699 + 899 + 3 * 849) + ".000000"


def test_mpn_with_a_slash(api: APIClient) -> None:
    sid = create_session(api)
    store_laptops(api, sid, items=[{"mpn": "AB-12/34", "name": "Odd"}])
    assert add(api, sid, mpn="AB-12/34").status_code == 201
    r = api.patch(f"/api/v1/sessions/{sid}/selections/AB-12/34", {"quantity": 2}, format="json")
    assert r.status_code == 200 and r.json()["quantity"] == 2
    assert api.delete(f"/api/v1/sessions/{sid}/selections/AB-12/34").status_code == 204


def test_csv_export_both_ways(api: APIClient, sid: str) -> None:
    store_laptops(
        api, sid, items=[{"mpn": "EVIL", "name": '=HYPERLINK("x")', "data": {"price": 1}}]
    )
    add(api, sid, mpn="EVIL", note="+1 please")
    for url in (
        f"/api/v1/sessions/{sid}/selections.csv",
        f"/api/v1/sessions/{sid}/selections?format=csv",
    ):
        response = api.get(url)
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert rows[0] == ["position", "mpn", "name", "component_type", "quantity", "price", "note"]
        assert rows[1][:2] == ["1", "EVIL"]
        assert rows[1][2].startswith("'=") and rows[1][6] == "'+1 please"  # no formulas
    other = APIClient()
    assert_error(other.get(f"/api/v1/sessions/{sid}/selections.csv"), 401, "not_authenticated")


@pytest.mark.parametrize("requested", ["", "xml", "CSV"])
def test_a_format_the_cart_cannot_render_is_400(api: APIClient, sid: str, requested: str) -> None:
    # DRF's negotiation ignored an empty `format` (JSON) and answered an unknown one 404.
    response = api.get(f"/api/v1/sessions/{sid}/selections", {"format": requested})
    assert "format" in assert_error(response, 400, "invalid")["fields"]
    assert api.get(f"/api/v1/sessions/{sid}/selections", {"format": "json"}).status_code == 200


# --- expiry ----------------------------------------------------------------------------


def test_writes_to_an_expired_session_are_410(api: APIClient, sid: str) -> None:
    add(api, sid, mpn=DELL)
    ChatSession.objects.filter(pk=sid).update(expires_at=timezone.now() - timedelta(seconds=1))
    base = f"/api/v1/sessions/{sid}"
    writes = [
        api.post(f"{base}/results", {"query": "q", "items": []}, format="json"),
        api.get(f"{base}/resolve", {"ref": "the first one"}),
        api.put(f"{base}/focus", {"mpn": DELL}, format="json"),
        api.post(f"{base}/selections", {"mpn": HP}, format="json"),
        api.patch(f"{base}/selections/{DELL}", {"quantity": 2}, format="json"),
        api.delete(f"{base}/selections/{DELL}"),
        api.post(f"{base}/selections/reorder", {"mpns": [DELL]}, format="json"),
        api.post(f"{base}/cart-link"),
    ]
    for response in writes:
        assert_error(response, 410, "session_expired")
    # reads still work, and nothing changed
    assert cart(api, sid) == [(1, DELL, 1)]
    r = api.get(f"{base}/resolve", {"ref": "the first one", "set_focus": "false"})
    assert r.status_code == 200
    assert api.get(f"{base}/components").status_code == 200
    ChatSession.objects.filter(pk=sid).update(
        expires_at=timezone.now() + timedelta(hours=1), status="archived"
    )
    assert_error(add(api, sid, mpn=HP), 410, "session_expired")


# --- snapshots (the rollback contract) -------------------------------------------------


def test_snapshot_and_restore_cover_focus_results_query_and_cart(api: APIClient, sid: str) -> None:
    api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the second one"})
    add(api, sid, mpn=DELL, quantity=2, note="n")
    add(api, sid, mpn=ACER)
    session = ChatSession.objects.get(pk=sid)
    snapshot = session_workspace_snapshot(session=session)

    api.post(
        f"/api/v1/sessions/{sid}/results", {"query": "other", "items": items("Y", 2)}, format="json"
    )
    api.put(f"/api/v1/sessions/{sid}/focus", {"mpn": "Y-0"}, format="json")
    api.delete(f"/api/v1/sessions/{sid}/selections/{DELL}")
    add(api, sid, mpn="Y-1")

    session_workspace_restore(session=ChatSession.objects.get(pk=sid), snapshot=snapshot)
    session = ChatSession.objects.get(pk=sid)
    assert session.focus_mpn == HP
    assert session.last_query == "Find laptops under $1000"
    assert session.last_results == [DELL, HP, LENOVO, ASUS, ACER]
    assert [h["query"] for h in session.query_history] == ["Find laptops under $1000"]
    assert cart(api, sid) == [(1, DELL, 2), (2, ACER, 1)]
    first = api.get(f"/api/v1/sessions/{sid}/resolve", {"ref": "the first one"}).json()
    assert first["item"]["mpn"] == DELL


# --- demo --------------------------------------------------------------------------------


def test_demo_loads_the_laptop_conversation() -> None:
    assert demo_load(admin_username="demo-admin") is not None
    session = ChatSession.objects.get(
        tenant=Tenant.objects.get(name="demo"), user_id="demo-shopper"
    )
    assert session.last_results == [DELL, HP, LENOVO, ASUS, ACER]
    assert list(
        SessionSelection.objects.filter(session=session)
        .order_by("position")
        .values_list("mpn", flat=True)
    ) == [DELL, ACER]
