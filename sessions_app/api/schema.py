"""drf-spectacular extensions: how authentication, errors and the per-key rate limit appear
in the OpenAPI schema.

`EngramAutoSchema` documents every operation's error responses from what the view is, so
that routes added later inherit them without a word: 400 (every route validates its query
and body; NUL in a query parameter is refused everywhere), 401 on authenticated views, 404
where the path names an object, 410 on writes to a session, 413/415 where there is a body,
429 where throttles apply, 503 when the database is down. Every error response, inherited
or declared by a view, gets the one error schema (`{"error": {"code", "message", "fields"}}`).

A view that makes an object says where its id is in the answer (`openapi_produces`), and
`add_links` links that answer to every operation taking the id in its path (OpenAPI
links): a client generator, Swagger UI or a stateful fuzzer can then follow "create a
session, then record a turn in it" without guessing.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import is_list_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from sessions_app.api.fields import (
    FREE_JSON_NOTE,
    NON_EMPTY_TEXT_PATTERN,
    NOT_BLANK_TEXT_PATTERN,
    TEXT_PATTERN,
)
from sessions_app.api.strict_types import decimal_pattern

BODY_METHODS = {"POST", "PUT", "PATCH"}
# An operation's `openapi_produces` while the schema is built: {path parameter: JSON
# pointer into the 2xx body}. Not in the published schema (add_links turns it into links).
PRODUCES_KEY = "x-engram-produces"
# Paths whose operations take an API key: the REST API, MCP over HTTP and the OTLP receiver.
API_PREFIXES = ("/api/v1", "/mcp/", "/v1/")
# Marks a parameter's schema as JSON text while the schema is built (`json_parameter`).
JSON_PARAMETER = "x-engram-json"


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]  # an untyped third-party function
    target_class = "sessions_app.api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An Engram API key."}


class ErrorDetailSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `invalid`.")
    message = serializers.CharField(help_text="A human-readable explanation.")
    fields = serializers.DictField(  # type: ignore[assignment]  # DRF moves declared fields off the class
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Field path (`steps.0.model`) to its problems; empty if none.",
    )
    request_id = serializers.CharField(
        required=False, help_text="On 500s: the id the failure is logged under."
    )


class ErrorSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    """Every 4xx/5xx body. Some errors add members to `error` (e.g. `candidates`)."""

    error = ErrorDetailSerializer()


_DESCRIPTIONS = {
    400: "`invalid` (with `error.fields` naming each bad field) or `malformed_json`.",
    401: "`not_authenticated` or `authentication_failed`: a valid API key is required.",
    404: "`not_found`: nothing of that id for this key's tenant.",
    410: "`session_expired`: the session may no longer change.",
    413: "`request_too_large`: the body exceeds ENGRAM_MAX_BODY_BYTES.",
    415: "`unsupported_media_type`: send application/json.",
    429: "`rate_limited` (with Retry-After).",
    503: "`dependency_unavailable`: the database is unavailable (with Retry-After).",
}


class EngramAutoSchema(AutoSchema):
    """Adds the error responses an operation can give from its view's traits, and states
    the limits the code enforces that drf-spectacular cannot see:

    - a serializer's `openapi_constraints` (e.g. "exactly one of mpn and ref" as `oneOf`)
      is merged into its request schema;
    - a list serializer's `min_length`/`max_length` become `minItems`/`maxItems`;
    - a decimal is a string of the pattern the strict parser enforces, or a number;
    - a request string without a pattern, enum or format of its own takes no NUL (the
      parser refuses it), and one that is trimmed and may not be blank must hold something
      besides whitespace (`text_pattern`); a free-form JSON value says in its description
      that no string or key inside takes NUL.
    """

    def _map_serializer(
        self, serializer: Any, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer(  # type: ignore[no-untyped-call]  # an untyped third-party function
            serializer, direction, bypass_extensions
        )
        if direction == "request" and "properties" in schema:
            # Unknown body fields answer 400 (sessions_app.api.strict_types).
            schema.setdefault("additionalProperties", False)
        constraints = getattr(serializer, "openapi_constraints", None)
        if constraints and direction == "request":
            schema.update(constraints)
        return schema

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation: dict[str, Any] | None = super().get_operation(*args, **kwargs)  # type: ignore[no-untyped-call]  # an untyped third-party function
        produces = getattr(self.view, "openapi_produces", {}).get(self.method.upper())
        if operation is not None and produces:
            operation[PRODUCES_KEY] = dict(produces)  # read, then removed, by add_links
        return operation

    def _get_request_for_media_type(
        self, serializer: Any, direction: str = "request"
    ) -> tuple[Any, bool]:
        schema, required = super()._get_request_for_media_type(  # type: ignore[no-untyped-call]  # an untyped third-party function
            serializer, direction
        )
        if getattr(serializer, "openapi_constraints", None):
            # A body that must name one field cannot be left out, even on PATCH.
            required = True
        return schema, bool(required)

    def _get_request_body(self, direction: str = "request") -> dict[str, Any] | None:
        body: dict[str, Any] | None = super()._get_request_body(direction)  # type: ignore[misc]  # a framework pattern the stubs cannot express
        if body is not None and getattr(self.view, "request_body_required", False):
            body["required"] = True  # e.g. a JSON-RPC message: there is no empty call
        return body

    def _unwrap_list_serializer(self, serializer: Any, direction: str) -> dict[str, Any] | None:
        schema: dict[str, Any] | None = super()._unwrap_list_serializer(  # type: ignore[no-untyped-call]  # an untyped third-party function
            serializer,
            direction,  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept
        )
        if schema and is_list_serializer(serializer):
            min_length = getattr(serializer, "min_length", None)
            max_length = getattr(serializer, "max_length", None)
            if min_length is not None:
                schema["minItems"] = min_length
            if max_length is not None:
                schema["maxItems"] = max_length
        return schema

    def _map_serializer_field(
        self, field: Any, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(  # type: ignore[no-untyped-call]  # an untyped third-party function
            field, direction, bypass_extensions
        )
        own_regex = any(isinstance(v, RegexValidator) for v in field.validators)
        if direction == "request" and isinstance(field, serializers.CharField) and not own_regex:
            pattern = text_pattern(schema, blank=not field.trim_whitespace)
            if pattern and field.allow_blank:
                pattern = NON_EMPTY_TEXT_PATTERN  # "" is the oneOf's other branch
            if pattern:
                schema["pattern"] = pattern
        if direction == "request" and isinstance(
            field, (serializers.DictField, serializers.JSONField)
        ):
            before = schema.get("description", "")
            schema["description"] = f"{before} {FREE_JSON_NOTE}".strip()
        if isinstance(field, serializers.DecimalField) and direction == "request":
            number: dict[str, Any] = {"type": "number"}
            if field.decimal_places is not None:
                number["multipleOf"] = float(Decimal(1).scaleb(-field.decimal_places))
            if field.min_value is not None:
                number["minimum"] = float(field.min_value)
            if field.max_value is not None:
                number["maximum"] = float(field.max_value)
            elif field.max_whole_digits is not None:
                number["maximum"] = float(10**field.max_whole_digits)
                number["exclusiveMaximum"] = True
            text = {"type": "string", "pattern": decimal_pattern(field)}
            keep = {k: v for k, v in schema.items() if k in ("description", "nullable")}
            schema = {"anyOf": [text, number], **keep}
        return schema

    def _inherited_errors(self) -> list[int]:
        method = self.method.upper()
        statuses = [400, 503]
        permissions = getattr(self.view, "permission_classes", [])
        if self.view.authentication_classes and not all(p is AllowAny for p in permissions):
            statuses.append(401)
        if "{" in self.path:
            statuses.append(404)
        if "{session_id}" in self.path and method != "GET":
            statuses.append(410)
        if method in BODY_METHODS:
            statuses += [413, 415]
        if self.view.get_throttles():
            statuses.append(429)
        return statuses

    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept
        if not self.path.startswith(API_PREFIXES):
            return responses
        for code in self._inherited_errors():
            responses.setdefault(str(code), {"description": _DESCRIPTIONS[code]})
        error_ref = self.resolve_serializer(ErrorSerializer, "response").ref
        for status, response in responses.items():
            if status.isdigit() and int(status) >= 400 and not response.get("content"):
                response["content"] = {"application/json": {"schema": error_ref}}
        return dict(sorted(responses.items()))


def text_pattern(schema: dict[str, Any], *, blank: bool = True) -> str | None:
    """The pattern a request string's schema lacks to say what the code refuses, or None
    when it has one already (a pattern, an enum, a format: none of them matches NUL)."""
    if schema.get("type") != "string" or {"pattern", "enum", "format"} & schema.keys():
        return None
    return TEXT_PATTERN if blank else NOT_BLANK_TEXT_PATTERN


def add_text_patterns(result: dict[str, Any], **kwargs: object) -> dict[str, Any]:
    """Postprocessing hook: a string parameter (query, path, header) without a pattern of
    its own says it takes no NUL, which the middleware refuses in every query string.
    Parameters written by django-filter or by hand do not pass `_map_serializer_field`."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                pattern = text_pattern(schema)
                if pattern:
                    schema["pattern"] = pattern
    return result


def json_parameter(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a query parameter whose value is JSON text (e.g. `metadata={"a": 1}`):
    `encode_json_parameters` publishes it as the parameter's `application/json` content,
    so the schema says the text must be JSON of that shape, not any string."""
    return {**schema, JSON_PARAMETER: True}


def encode_json_parameters(result: dict[str, Any], **kwargs: object) -> dict[str, Any]:
    """Postprocessing hook: a parameter marked by `json_parameter` gets `content:
    {application/json: {schema}}` instead of `schema` (OpenAPI's form for a parameter
    serialized as JSON)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if schema.pop(JSON_PARAMETER, False):
                    if "description" in schema:
                        parameter.setdefault("description", schema.pop("description"))
                    parameter["content"] = {"application/json": {"schema": parameter.pop("schema")}}
    return result


RATE_LIMITED_DESCRIPTION = (
    "rate_limited: this API key sent more than ENGRAM_RATE_LIMIT requests in the current "
    "window; retry after `Retry-After` seconds."
)
_RETRY_AFTER = {"schema": {"type": "integer"}, "description": "Seconds to wait."}
_ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "fields"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": True},
            },
        }
    },
}


def add_rate_limit_responses(result: dict[str, Any], **kwargs: object) -> dict[str, Any]:
    """Postprocessing hook: every operation that takes an API key may answer 429 (the
    per-key throttle runs on all of them). An operation that already documents a 429
    (budget/check's budget_exceeded) gets the rate-limit case added to its text."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or not any(
                "ApiKey" in requirement for requirement in operation.get("security", [])
            ):
                continue
            responses = operation.setdefault("responses", {})
            existing = responses.get("429")
            if existing is not None:
                before = existing.get("description", "")
                existing["description"] = f"{before}; or {RATE_LIMITED_DESCRIPTION}"
                existing.setdefault("headers", {})["Retry-After"] = _RETRY_AFTER
                continue
            responses["429"] = {
                "description": RATE_LIMITED_DESCRIPTION,
                "headers": {"Retry-After": _RETRY_AFTER},
                "content": {"application/json": {"schema": _ERROR_SCHEMA}},
            }
    return result


def add_links(result: dict[str, Any], **kwargs: object) -> dict[str, Any]:
    """Postprocessing hook: OpenAPI links from each operation that makes an object (its
    view's `openapi_produces`: parameter name -> JSON pointer into the 2xx body) to every
    operation whose path takes one of those parameters, when the target's other path
    parameters are the producer's own (`$request.path.…`): POST /sessions links to every
    /sessions/{session_id} route, POST …/turns to …/turns/{turn_number}. A produced name
    the target takes as a query parameter is passed too (the memory's user as
    `acting_user_id`, without which its private memory is a 404). A link is named by its
    target's operationId."""
    paths = result.get("paths", {})
    operations = [
        (set(_path_parameters(path)), operation)
        for path, methods in paths.items()
        for operation in methods.values()
        if isinstance(operation, dict) and "operationId" in operation
    ]
    for path, methods in paths.items():
        own = set(_path_parameters(path))
        for producer in methods.values():
            if not isinstance(producer, dict):
                continue
            produced: dict[str, str] = producer.pop(PRODUCES_KEY, None) or {}
            links = {
                target["operationId"]: _link(target, parameters, produced)
                for parameters, target in operations
                if target is not producer
                and parameters & produced.keys()
                and parameters <= own | produced.keys()
            }
            for status, response in producer.get("responses", {}).items():
                if status.startswith("2") and response.get("content") and links:
                    response["links"] = dict(sorted(links.items()))
    return result


def _link(
    target: dict[str, Any], path_parameters: set[str], produced: dict[str, str]
) -> dict[str, Any]:
    query = {p["name"] for p in target.get("parameters", []) if p.get("in") == "query"}
    names = sorted(path_parameters | (query & produced.keys()))
    return {
        "operationId": target["operationId"],
        "parameters": {
            name: f"$response.body#{produced[name]}"
            if name in produced
            else f"$request.path.{name}"
            for name in names
        },
    }


def _path_parameters(path: str) -> list[str]:
    return re.findall(r"\{([^}]+)\}", path)
