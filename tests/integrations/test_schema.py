"""The new ways in are in the OpenAPI schema, which still validates without warnings."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client


@pytest.mark.django_db
def test_schema_lists_mcp_otlp_and_resume() -> None:
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json",
                 stdout=StringIO(), stderr=StringIO())  # fmt: skip
    paths = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    traces = paths["/v1/traces"]["post"]
    assert set(traces["requestBody"]["content"]) == {"application/x-protobuf", "application/json"}
    assert {"200", "400", "401", "413", "415"} <= set(traces["responses"])
    assert {"200", "401"} <= set(paths["/mcp/"]["post"]["responses"])
    assert "get" not in paths["/mcp/"]
    sessions = paths["/api/v1/sessions"]["post"]
    assert {"200", "201", "400"} <= set(sessions["responses"])
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    create = schema["components"]["schemas"]["SessionCreateRequest"]["properties"]
    assert "resume" in create and create["resume"]["description"]
