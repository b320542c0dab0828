"""The OpenAPI schema states what the code does, for every operation (present and future):
its error responses with the error schema, 401 where a key is needed, and limits on the
integers a body may carry. Also: `make run`'s secret key is per checkout."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from config.settings.env import stored_secret_key

pytestmark = pytest.mark.django_db
BIGINT_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return Client().get("/api/schema/?format=json").json()  # type: ignore[no-any-return]


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "responses" in operation:
                yield method.upper(), path, operation


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return schema["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else node


def test_every_operation_documents_its_errors_with_the_error_schema(
    schema: dict[str, Any],
) -> None:
    operations = list(_operations(schema))
    assert len(operations) > 25
    for method, path, operation in operations:
        responses = operation["responses"]
        assert "400" in responses and "503" in responses, (method, path)
        if operation.get("security") and {"ApiKey": []} in operation["security"]:
            assert "401" in responses, (method, path)
        if "{" in path:
            assert "404" in responses, (method, path)
        for status, response in responses.items():
            if int(status) >= 400:
                body = response["content"]["application/json"]["schema"]
                error = _resolve(schema, body)
                assert "error" in error["properties"], (method, path, status)


def test_integers_in_request_bodies_state_a_bigint_maximum(schema: dict[str, Any]) -> None:
    checked = 0
    for name, component in schema["components"]["schemas"].items():
        if not name.endswith("Request"):
            continue
        for field, prop in component.get("properties", {}).items():
            if prop.get("type") == "integer" and not prop.get("readOnly"):
                assert prop.get("maximum", BIGINT_MAX + 1) <= BIGINT_MAX, (name, field)
                checked += 1
    assert checked >= 5


def test_documented_limits(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    context = next(
        p for p in schema["paths"]["/api/v1/sessions/{session_id}/context"]["get"]["parameters"]
        if p["name"] == "budget"
    )  # fmt: skip
    assert (context["schema"]["minimum"], context["schema"]["maximum"]) == (50, 200000)
    assert components["SelectionAddRequest"]["oneOf"] == [
        {"required": ["mpn"]}, {"required": ["ref"]}
    ]  # fmt: skip
    bulk = schema["paths"]["/api/v1/memories/bulk"]["post"]["requestBody"]["content"]
    assert bulk["application/json"]["schema"]["minItems"] == 1
    budget_usd = components["SessionCreateRequest"]["properties"]["budget_usd"]["anyOf"]
    assert budget_usd[1]["minimum"] == 0 and "-" not in budget_usd[0]["pattern"]
    erase = schema["paths"]["/api/v1/users/{user_id}"]["delete"]["responses"]
    assert "200" in erase and "204" not in erase


def test_secret_key_is_generated_once_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "engram" / "secret_key"
    first = stored_secret_key(path)
    assert len(first) >= 50 and first != "dev-insecure-secret-key-change-me"
    assert stored_secret_key(path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stored_secret_key(tmp_path / "other" / "secret_key") != first


def test_the_schema_is_valid_openapi_without_warnings(tmp_path: Path) -> None:
    """drf-spectacular's own check against the OpenAPI 3.0 specification's JSON Schema
    (links, parameters, responses), failing on any warning it raised while building."""
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    assert target.stat().st_size > 10_000
