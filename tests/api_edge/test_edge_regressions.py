"""Inputs that could reach the database or a parser unchecked answer 4xx, never 500;
and the edge's promises: every /api/ response is JSON in the error shape and carries a
request id."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import yaml
from django.test import Client, override_settings
from rest_framework.test import APIClient

from config.request_log import EngramJsonFormatter, RequestIdFilter
from sessions_app.models import ChatSession
from tests.sessions_app.helpers import assert_error, create_session, turn_body

pytestmark = pytest.mark.django_db


def raw_post(api: APIClient, path: str, text: str, method: str = "post") -> Any:
    """Send JSON text as is: DRF's test renderer cannot encode lone surrogates."""
    return getattr(api, method)(path, data=text, content_type="application/json")


def _field_error(response: Any, field: str) -> None:
    error = assert_error(response, 400, "invalid")
    assert field in error["fields"], error


@pytest.mark.parametrize("bad", ["a\u0000b", "\udc00"], ids=["nul", "surrogate"])
@pytest.mark.parametrize("field", ["state", "metadata"])
def test_session_json_objects_refuse_nul_and_surrogates(
    api: APIClient, bad: str, field: str
) -> None:
    before = ChatSession.objects.count()
    body = json.dumps({"user_id": "u", "agent_id": "a", field: {"note": bad}})
    _field_error(raw_post(api, "/api/v1/sessions", body), f"{field}.note")
    assert ChatSession.objects.count() == before


@pytest.mark.parametrize("bad", ["\u0000", "\udc00"], ids=["nul", "surrogate"])
def test_turn_intent_data_and_keys_refuse_bad_text(api: APIClient, bad: str) -> None:
    session = create_session(api)
    body = turn_body(intent_data={"intent": "x", "q": bad}, metadata={bad: 1})
    response = raw_post(api, f"/api/v1/sessions/{session['id']}/turns", json.dumps(body))
    error = assert_error(response, 400, "invalid")
    assert "intent_data.q" in error["fields"]
    assert any(name.startswith("metadata.") for name in error["fields"]), error
    assert api.get(f"/api/v1/sessions/{session['id']}/turns").json()["results"] == []


@pytest.mark.parametrize("bad", ["\u0000", "\udc00"], ids=["nul", "surrogate"])
def test_memory_structured_and_patch_refuse_bad_text(api: APIClient, bad: str) -> None:
    memory = {"user_id": "u1", "type": "preference"}
    body = {**memory, "content": "Prefers aisle seats", "structured": {"k": bad}}
    _field_error(raw_post(api, "/api/v1/memories", json.dumps(body)), "structured.k")
    created = api.post(
        "/api/v1/memories", {**memory, "content": "Prefers window seats"}, format="json"
    )
    assert created.status_code == 201, created.content
    memory_id = created.json()["memory"]["id"]
    path = f"/api/v1/memories/{memory_id}?acting_user_id=u1"
    for patch, field in [
        ({"content": bad}, "content"),
        ({"structured": {"x": [bad]}}, "structured.x.0"),
    ]:
        _field_error(raw_post(api, path, json.dumps(patch), method="patch"), field)
    assert api.get(path).json()["content"] == "Prefers window seats"


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_integers_beyond_bigint_are_400(api: APIClient, value: int) -> None:
    before = ChatSession.objects.count()
    body = json.dumps({"user_id": "u", "agent_id": "a", "budget_tokens": value})
    _field_error(raw_post(api, "/api/v1/sessions", body), "budget_tokens")
    session = create_session(api)
    patch = json.dumps({"budget_tokens": value})
    _field_error(
        raw_post(api, f"/api/v1/sessions/{session['id']}", patch, "patch"), "budget_tokens"
    )
    assert ChatSession.objects.count() == before + 1
    assert ChatSession.objects.get(id=session["id"]).budget_tokens is None


def test_largest_bigint_budget_is_accepted(api: APIClient) -> None:
    session = create_session(api, budget_tokens=2**63 - 1)
    assert session["budget"]["budget_tokens"] == 2**63 - 1


def test_non_finite_numbers_are_400(api: APIClient) -> None:
    body = '{"user_id": "u", "agent_id": "a", "metadata": {"x": 1e400}}'
    _field_error(raw_post(api, "/api/v1/sessions", body), "metadata.x")
    assert_error(raw_post(api, "/api/v1/sessions", '{"metadata": NaN}'), 400, "malformed_json")


@pytest.mark.parametrize("window", ["from=9999-12-31&to=9999-12-31", "to=0001-01-01"])
def test_usage_dates_that_overflow_are_400(api: APIClient, window: str) -> None:
    response = api.get(f"/api/v1/usage?group_by=day&{window}")
    assert_error(response, 400, "invalid")


@pytest.mark.parametrize("depth", [40, 1000, 100_000])
def test_deeply_nested_json_is_400(api: APIClient, depth: int) -> None:
    body = '{"user_id": "u", "agent_id": "a", "state": ' + "[" * depth + "]" * depth + "}"
    response = raw_post(api, "/api/v1/sessions", body)
    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"]["code"] in {"invalid", "malformed_json"}


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-16", "application/json; charset=utf-32"],
)
def test_a_body_that_is_not_its_declared_charset_is_400(api: APIClient, content_type: str) -> None:
    # A UTF-8 body declared UTF-16 (no BOM) raised UnicodeError, not UnicodeDecodeError: 500.
    body = b'{"user_id": "u", "agent_id": "a"}'
    api.raise_request_exception = False
    response = api.generic("POST", "/api/v1/sessions", body, content_type=content_type)
    assert_error(response, 400, "malformed_json")


def test_nul_in_query_parameter_is_400(api: APIClient) -> None:
    response = api.get("/api/v1/sessions?user_id=a%00b")
    error = assert_error(response, 400, "invalid")
    assert "user_id" in error["fields"]
    # A repeated parameter is checked in every value, not only the last.
    response = api.get("/api/v1/sessions?user_id=a%00b&user_id=ok")
    assert "user_id" in assert_error(response, 400, "invalid")["fields"]


@pytest.mark.parametrize(
    "page",
    [
        "/admin/sessions_app/chatsession/",
        "/admin/memory_app/memory/",
        "/admin/analytics_app/userspendrollup/",
        "/dashboards/spend/",
    ],
)
def test_nul_in_a_page_query_parameter_is_400_not_500(admin_client: Client, page: str) -> None:
    # The admin filters its changelist by any field the query string names; PostgreSQL
    # refused the NUL (500).
    assert admin_client.get(page, {"user_id": "ok"}).status_code in (200, 302)
    response = admin_client.get(page, {"user_id": "a\x00b"})
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("path", "field"),
    [("/api/v1/memories", "scope"), ("/api/v1/memories", "type"), ("/api/v1/sessions", "status")],
)
def test_an_empty_choice_filter_is_400_not_no_filter(api: APIClient, path: str, field: str) -> None:
    # django-filter read `?scope=` as "no filter"; the schema's enum has no empty value.
    error = assert_error(api.get(f"{path}?{field}="), 400, "invalid")
    assert field in error["fields"]
    assert api.get(path).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nope",
        "/api/v1/sessions/",
        "/api/v1/sessions/x/selections/../../x",
        "/api/v1/../admin",
        "/api/nope",
    ],
)
@pytest.mark.parametrize("debug", [False, True])
def test_unknown_api_routes_are_json_404(api: APIClient, path: str, debug: bool) -> None:
    with override_settings(DEBUG=debug):
        response = api.get(path)
    assert response["Content-Type"].startswith("application/json")
    assert_error(response, 404, "not_found")


def test_405_is_json(api: APIClient) -> None:
    response = api.put("/api/v1/sessions", data="{}", content_type="application/json")
    assert_error(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]


def test_a_wrong_method_on_the_schema_is_405_in_the_error_shape(api: APIClient) -> None:
    """The schema view renders YAML unless JSON is asked for; its errors too."""
    response = api.post("/api/schema/", HTTP_ACCEPT="application/json")
    assert_error(response, 405, "method_not_allowed")
    response = api.post("/api/schema/")
    assert response.status_code == 405
    assert yaml.safe_load(response.content)["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("debug", [False, True])
def test_a_500_is_json_with_the_request_id_and_logs_the_traceback(
    api: APIClient, debug: bool, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessions_app.api import views_sessions

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom: secret detail")

    monkeypatch.setattr(views_sessions.SessionListView, "get", explode)
    api.raise_request_exception = False
    with override_settings(DEBUG=debug), caplog.at_level(logging.ERROR):
        response = api.get("/api/v1/sessions", HTTP_X_REQUEST_ID="trace-123")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    error = assert_error(response, 500, "server_error")
    assert error["request_id"] == "trace-123" == response["X-Request-ID"]
    assert "boom" not in response.content.decode()
    record = next(r for r in caplog.records if r.name == "engram.api")
    assert record.exc_info and "boom: secret detail" in str(record.exc_info[1])


def test_request_id_is_accepted_when_sane_and_generated_otherwise(api: APIClient) -> None:
    assert api.get("/api/v1/sessions", HTTP_X_REQUEST_ID="abc-1")["X-Request-ID"] == "abc-1"
    generated = api.get("/api/v1/sessions", HTTP_X_REQUEST_ID="bad id\nwith newline")
    assert generated["X-Request-ID"] != "bad id\nwith newline"
    assert len(generated["X-Request-ID"]) == 32
    assert Client().get("/healthz")["X-Request-ID"]


def test_log_lines_carry_the_request_id_as_json(api: APIClient) -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        api.get("/api/v1/sessions/00000000-0000-0000-0000-000000000000", HTTP_X_REQUEST_ID="r-42")
    finally:
        logger.removeHandler(handler)
    assert records, "Django logs a 404 on django.request"
    line = json.loads(EngramJsonFormatter().format(records[-1]))
    assert line["request_id"] == "r-42"
    assert line["level"] == "WARNING" and line["logger"] == "django.request"
