"""What the code refuses, the schema states: a request string takes no NUL (the parser and
the query-string middleware refuse it everywhere; a free-form JSON value says so in its
description, and a NUL at any depth is refused naming its path), a trimmed string that
may not be blank holds something besides whitespace, the codings the OTLP receiver takes
are the schema's pattern, and MCP and OTLP/JSON bodies have the shape their receivers
parse. Found by schemathesis runs deeper than the suite's (schema-valid input refused)."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from integrations.otlp_decode import OtlpError, decompress
from integrations.views_otlp import CONTENT_ENCODING_PATTERN
from sessions_app.api.fields import FREE_JSON_NOTE, NOT_BLANK_TEXT_PATTERN
from tests.sessions_app.helpers import assert_error

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return Client().get("/api/schema/?format=json").json()  # type: ignore[no-any-return]


def _strings(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every string schema under `node` (properties, items, anyOf/oneOf branches)."""
    if not isinstance(node, dict):
        return
    if node.get("type") == "string":
        yield where, node
    for name, child in node.get("properties", {}).items():
        yield from _strings(child, f"{where}.{name}")
    yield from _strings(node.get("items"), f"{where}[]")
    for key in ("anyOf", "oneOf", "allOf"):
        for index, child in enumerate(node.get(key, [])):
            yield from _strings(child, f"{where}/{key}{index}")


def _request_strings(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, component in schema["components"]["schemas"].items():
        if name.endswith("Request"):
            yield from _strings(component, name)
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                where = f"{method} {path} {parameter['name']}"
                yield from _strings(parameter.get("schema"), where)


def test_no_request_string_of_the_schema_takes_nul(schema: dict[str, Any]) -> None:
    seen = 0
    for where, string in _request_strings(schema):
        if string.get("maxLength") == 0 or "format" in string:
            continue  # "" (a blank branch), or a uuid / date-time / …
        seen += 1
        if "enum" in string:
            assert not any("\x00" in str(value) for value in string["enum"]), where
            continue
        assert "pattern" in string, where
        assert not re.search(string["pattern"], "a\x00b"), where
    assert seen > 100


def test_a_trimmed_string_that_may_not_be_blank_says_so(
    schema: dict[str, Any], api: APIClient
) -> None:
    tags = schema["components"]["schemas"]["MemoryCreateRequest"]["properties"]["tags"]
    assert tags["items"]["pattern"] == NOT_BLANK_TEXT_PATTERN
    for blank in (" ", "\t\u3000", "\u0085"):
        assert not re.search(NOT_BLANK_TEXT_PATTERN, blank)
        body = {"user_id": "u", "content": "likes tea", "tags": [blank]}
        response = api.post("/api/v1/memories", body, format="json")
        assert "tags" in json.dumps(assert_error(response, 400, "invalid")["fields"])
    assert re.search(NOT_BLANK_TEXT_PATTERN, " a\u3000")


@pytest.mark.parametrize(
    ("header", "taken"),
    [
        ("", True),
        ("identity", True),
        (" GZip\t", True),
        ("DEFLATE", True),
        ("br", False),
        ("\u00a0gzip", False),
        ("gzip, gzip", False),
    ],
)
def test_the_content_encoding_pattern_is_what_the_receiver_decodes(
    header: str, taken: bool
) -> None:
    matches = re.search(CONTENT_ENCODING_PATTERN, header) is not None
    assert matches == (header.strip(" \t").lower() in ("", "identity", "gzip", "deflate"))
    coding = header.lower()
    body = (
        gzip.compress(b"x")
        if "gzip" in coding
        else zlib.compress(b"x")
        if "deflate" in coding
        else b"x"
    )
    try:
        assert decompress(body, header, 1000) == b"x"
    except OtlpError as exc:
        assert not taken, exc
        assert exc.status == 415
        assert not matches
    else:
        assert taken


def test_mcp_and_otlp_bodies_are_described(schema: dict[str, Any]) -> None:
    mcp = schema["paths"]["/mcp/"]["post"]["requestBody"]["content"]["application/json"]
    assert mcp["schema"]["properties"]["jsonrpc"]["enum"] == ["2.0"]
    assert mcp["schema"]["required"] == ["jsonrpc"]
    otlp = schema["paths"]["/v1/traces"]["post"]["requestBody"]["content"]["application/json"]
    assert otlp["schema"]["properties"]["resourceSpans"]["type"] == "array"


def test_the_metadata_filter_is_a_json_object_parameter(
    schema: dict[str, Any], api: APIClient
) -> None:
    (parameter,) = [
        p
        for p in schema["paths"]["/api/v1/memories"]["get"]["parameters"]
        if p["name"] == "metadata"
    ]
    assert parameter["content"]["application/json"]["schema"]["type"] == "object"
    assert "metadata" in parameter["description"]
    assert api.get("/api/v1/memories", {"metadata": '{"source": "crm"}'}).status_code == 200
    for bad in ("[1]", "crm", '"crm"'):
        response = api.get("/api/v1/memories", {"metadata": bad})
        assert "metadata" in assert_error(response, 400, "invalid")["fields"]


def test_free_form_json_says_it_takes_no_nul_and_the_code_refuses_it_at_depth(
    schema: dict[str, Any], api: APIClient
) -> None:
    create = schema["components"]["schemas"]["SessionCreateRequest"]["properties"]
    for name in ("state", "metadata"):
        assert FREE_JSON_NOTE in create[name]["description"]
    turn = schema["components"]["schemas"]["TurnCreateRequest"]["properties"]
    assert FREE_JSON_NOTE in turn["intent_data"]["description"]
    body = {"user_id": "u", "agent_id": "a", "state": {"cart": [{"note": "a\u0000b"}]}}
    response = api.post("/api/v1/sessions", body, format="json")
    assert list(assert_error(response, 400, "invalid")["fields"]) == ["state.cart.0.note"]
    body = {"user_id": "u", "agent_id": "a", "metadata": {"k\u0000": 1}}
    response = api.post("/api/v1/sessions", body, format="json")
    assert "metadata" in json.dumps(assert_error(response, 400, "invalid")["fields"])


def test_an_mcp_answer_is_read_as_one_whatever_else_it_holds(
    schema: dict[str, Any], api: APIClient
) -> None:
    """The SDK reads a message with `id` and `result` as a client's answer, ignoring a
    `method` or `params` of any shape beside them; the schema constrains `params` only
    for a message that is a call."""
    message = schema["paths"]["/mcp/"]["post"]["requestBody"]["content"]["application/json"]
    call, answer, _ = message["schema"]["anyOf"]
    assert "params" in call["properties"] and "params" not in message["schema"]["properties"]
    assert answer["required"] == ["id", "result"]
    headers = {"HTTP_ACCEPT": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": "a", "result": {}, "method": "", "params": []}
    assert api.post("/mcp/", body, format="json", **headers).status_code == 202
    call_body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []}
    assert api.post("/mcp/", call_body, format="json", **headers).status_code == 400


def test_an_mcp_error_answer_may_have_a_null_id(schema: dict[str, Any], api: APIClient) -> None:
    """JSON-RPC lets an error answer carry a null `id` (its request's id could not be
    read), and the SDK takes it; the schema says so. A result's `id` may not be null."""
    message = schema["paths"]["/mcp/"]["post"]["requestBody"]["content"]["application/json"]
    _, answer, error = message["schema"]["anyOf"]
    assert error["required"] == ["id", "error"] and error["properties"]["id"]["nullable"] is True
    assert "nullable" not in answer["properties"]["id"]
    headers = {"HTTP_ACCEPT": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
    assert api.post("/mcp/", body, format="json", **headers).status_code == 202
    body = {"jsonrpc": "2.0", "id": None, "result": {}}
    assert api.post("/mcp/", body, format="json", **headers).status_code == 400
