"""The OpenAPI schema documents the turn, budget and usage routes without warnings."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client


@pytest.mark.django_db
def test_schema_validates_without_warnings_and_lists_new_routes() -> None:
    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json",
                 stdout=out, stderr=StringIO())  # fmt: skip
    paths = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    for path in (
        "/api/v1/sessions/{session_id}/turns",
        "/api/v1/sessions/{session_id}/turns/{turn_number}/rollback",
        "/api/v1/sessions/{session_id}/budget/check",
        "/api/v1/usage",
    ):
        assert path in paths, path
    post = paths["/api/v1/sessions/{session_id}/turns"]["post"]
    assert any(p["name"] == "Idempotency-Key" for p in post["parameters"])
