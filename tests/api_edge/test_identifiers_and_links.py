"""Two things a client reading the schema relies on, found by a deeper schemathesis run
than the suite's: an identifier is checked by one rule wherever it is sent (a body or a
path), and that rule is the schema's `pattern`; and the OpenAPI links from an operation
that makes an object lead to the operations that take it."""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.api.fields import IDENTIFIER_PATTERN
from tests.sessions_app.helpers import assert_error, create_session, turn_body

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return Client().get("/api/schema/?format=json").json()  # type: ignore[no-any-return]


def _blank(char: str) -> bool:
    """Blank to Python (str.strip(), which DRF trims with) or to ECMAScript's `\\s`
    (WhiteSpace: the Zs category, TAB, VT, FF, ZWNBSP; LineTerminator: LF, CR, LS, PS), or
    a control character."""
    category = unicodedata.category(char)
    return char.isspace() or category in ("Zs", "Cc") or char in "\t\v\f\ufeff\n\r\u2028\u2029"


def test_the_identifier_pattern_refuses_exactly_the_blank_and_control_characters() -> None:
    pattern = re.compile(IDENTIFIER_PATTERN)
    refused = {chr(c) for c in range(sys.maxunicode + 1) if not pattern.search(chr(c))}
    assert refused == {chr(c) for c in range(sys.maxunicode + 1) if _blank(chr(c))}


def test_the_schema_publishes_the_rule_for_bodies_and_paths(schema: dict[str, Any]) -> None:
    body = schema["components"]["schemas"]["SessionCreateRequest"]["properties"]["user_id"]
    assert (body["pattern"], body["maxLength"]) == (IDENTIFIER_PATTERN, 255)
    for path, method in (
        ("/api/v1/users/{user_id}", "delete"),
        ("/api/v1/users/{user_id}/export", "get"),
    ):
        (parameter,) = schema["paths"][path][method]["parameters"]
        assert parameter["schema"]["pattern"] == IDENTIFIER_PATTERN, path
        assert (parameter["schema"]["minLength"], parameter["schema"]["maxLength"]) == (1, 255)


@pytest.mark.parametrize("bad", ["\u001f", "\ufeff", " \u3000 ", "\u0085"])
def test_a_blank_identifier_is_refused_in_a_body_and_in_a_path(api: APIClient, bad: str) -> None:
    response = api.post("/api/v1/sessions", {"user_id": bad, "agent_id": "a"}, format="json")
    assert "user_id" in assert_error(response, 400, "invalid")["fields"]
    response = api.post(
        "/api/v1/memories", {"user_id": bad, "type": "semantic", "content": "x"}, format="json"
    )
    assert "user_id" in assert_error(response, 400, "invalid")["fields"]
    for response in (
        api.delete(f"/api/v1/users/{quote(bad)}"),
        api.get(f"/api/v1/users/{quote(bad)}/export"),
    ):
        assert "user_id" in assert_error(response, 400, "invalid")["fields"]


def test_a_user_id_in_a_path_is_trimmed_like_one_in_a_body(api: APIClient) -> None:
    # The body's " ana " is stored as "ana"; erasing " ana " must erase that user.
    session = create_session(api, user_id=" ana ")
    assert session["user_id"] == "ana"
    exported = api.get(f"/api/v1/users/{quote(' ana ')}/export").json()
    assert [s["id"] for s in exported["sessions"]] == [session["id"]]
    response = api.delete(f"/api/v1/users/{quote(' ana ')}")
    assert response.status_code == 200, response.content
    assert response.json()["user_id"] == "ana"
    assert response.json()["deleted"]["sessions"] == 1
    assert api.get(f"/api/v1/sessions/{session['id']}").status_code == 404


def _operation(schema: dict[str, Any], operation_id: str) -> tuple[str, str, dict[str, Any]]:
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and operation.get("operationId") == operation_id:
                return method, path, operation
    raise AssertionError(f"no operation {operation_id}")


def _follow(link: dict[str, Any], body: Any, request_path: dict[str, str]) -> dict[str, str]:
    """The target's parameters from a link's runtime expressions."""
    values = {}
    for name, expression in link["parameters"].items():
        if expression.startswith("$response.body#"):
            node = body
            for part in expression.removeprefix("$response.body#/").split("/"):
                node = node[part]
            values[name] = str(node)
        else:
            values[name] = request_path[expression.removeprefix("$request.path.")]
    return values


def _links(schema: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    return schema["paths"][path][method]["responses"][status]["links"]  # type: ignore[no-any-return]


def test_every_link_names_an_operation_and_exactly_its_path_parameters(
    schema: dict[str, Any],
) -> None:
    linked = 0
    for item in schema["paths"].values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            assert not any(key.startswith("x-engram") for key in operation)
            for response in operation.get("responses", {}).values():
                for name, link in response.get("links", {}).items():
                    _, path, target = _operation(schema, link["operationId"])
                    assert name == link["operationId"]
                    in_path = set(re.findall(r"\{([^}]+)\}", path))
                    query = {p["name"] for p in target["parameters"] if p["in"] == "query"}
                    assert in_path <= set(link["parameters"]) <= in_path | query, name
                    linked += 1
    sessions = _links(schema, "/api/v1/sessions", "post", "201")
    taking_a_session = {
        operation["operationId"]
        for path, item in schema["paths"].items()
        if re.findall(r"\{([^}]+)\}", path) == ["session_id"]
        for operation in item.values()
        if isinstance(operation, dict) and "operationId" in operation
    }
    assert taking_a_session and taking_a_session <= set(sessions)
    # A session or a memory is linked to what acts on it, not to its user's erasure.
    assert not {"users_destroy", "users_export_retrieve"} & set(sessions)
    assert linked >= 40


def test_following_the_links_reaches_the_objects_made(
    api: APIClient, schema: dict[str, Any]
) -> None:
    """Every GET a link opens, with the values the link takes from a real answer, finds
    the object: a wrong pointer (an id from the wrong field) would be a 404 or a 400."""
    session = create_session(api, user_id="linked")
    turn = api.post(f"/api/v1/sessions/{session['id']}/turns", turn_body(), format="json")
    assert turn.status_code == 201, turn.content
    memory = api.post(
        "/api/v1/memories",
        {"user_id": "linked", "type": "semantic", "content": "Ana keeps bees."},
        format="json",
    )
    assert memory.status_code == 201, memory.content
    answers = [
        ("/api/v1/sessions", "201", session, {}),
        ("/api/v1/sessions/{session_id}/turns", "201", turn.json(), {"session_id": session["id"]}),
        ("/api/v1/memories", "201", memory.json(), {}),
    ]
    followed = 0
    for path, status, body, request_path in answers:
        for link in _links(schema, path, "post", status).values():
            method, target, operation = _operation(schema, link["operationId"])
            if method != "get" or any(
                p.get("required") and p["in"] == "query" for p in operation.get("parameters", [])
            ):
                continue  # a write, or a read that needs more than the link gives
            url, query = target, {}
            for name, value in _follow(link, body, request_path).items():
                if "{" + name + "}" in url:
                    url = url.replace("{" + name + "}", quote(value, safe=""))
                else:
                    query[name] = value
            response = api.get(url, query)
            assert response.status_code == 200, (link["operationId"], url, response.content)
            followed += 1
    assert followed >= 10


def test_a_user_id_in_a_path_longer_than_the_limit_is_refused_even_when_trimming_shortens_it(
    api: APIClient,
) -> None:
    # The schema's maxLength counts the value as sent: "ana" and 300 trailing control
    # characters is too long, though "ana" alone is not.
    padded = "ana" + "\u001d" * 300
    for response in (
        api.delete(f"/api/v1/users/{quote(padded)}"),
        api.get(f"/api/v1/users/{quote(padded)}/export"),
    ):
        assert "user_id" in assert_error(response, 400, "invalid")["fields"]
    assert api.get(f"/api/v1/users/{quote('ana' + chr(0x1D) * 10)}/export").status_code == 200


def test_an_identifier_in_a_body_longer_than_the_limit_is_refused_even_when_trimming_shortens_it(
    api: APIClient,
) -> None:
    padded = "ana" + "\u001d" * 300
    response = api.post("/api/v1/sessions", {"user_id": padded, "agent_id": "a"}, format="json")
    assert "user_id" in assert_error(response, 400, "invalid")["fields"]
    body = {"user_id": "ana\u001d", "agent_id": "a"}
    response = api.post("/api/v1/sessions", body, format="json")
    assert response.status_code == 201 and response.json()["user_id"] == "ana"
