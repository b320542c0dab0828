"""The request bodies of MCP and OTLP/JSON as JSON Schema, for the OpenAPI schema: what the
receivers take, so a client (or a fuzzer) reading the schema sends what is accepted.

- MCP: one JSON-RPC 2.0 message, as the MCP SDK parses it (`JSONRPCMessage`): `jsonrpc`
  "2.0" and either a `method` (a request with an `id`, or a notification without one;
  `params` an object) or a client's answer (`id` with `result` or `error`; an error's
  `id` may be null, as JSON-RPC allows when the request's id could not be read). A message
  that is an answer is read as one whatever else it holds (a `method`, `params` of any
  shape), so `method` and `params` are constrained in the first branch only. Other
  members are kept by the SDK, not refused. A message the SDK cannot parse is answered 400 with
  a JSON-RPC error; a well-formed call of an unknown method or with bad `params` is a 200
  carrying a JSON-RPC error, as JSON-RPC defines.
- OTLP/JSON: an `ExportTraceServiceRequest`, its members checked where they are known;
  unknown members are ignored, as the OTLP/JSON encoding requires of a receiver, and a
  known member may be null (protobuf's JSON mapping: the default value).
"""

from __future__ import annotations

from typing import Any

_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
_NULLABLE_OBJECT: dict[str, Any] = {**_OBJECT, "nullable": True}
_NULLABLE_STRING: dict[str, Any] = {"type": "string", "nullable": True}
_ID: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
_ERROR_ID: dict[str, Any] = {**_ID, "nullable": True}

MCP_MESSAGE: dict[str, Any] = {
    "type": "object",
    "required": ["jsonrpc"],
    "properties": {"jsonrpc": {"type": "string", "enum": ["2.0"]}},
    "anyOf": [
        {
            "required": ["method"],
            "properties": {"method": {"type": "string"}, "params": {**_OBJECT, "nullable": True}},
        },
        {
            "required": ["id", "result"],
            "properties": {"id": _ID, "result": _OBJECT},
        },
        {
            "required": ["id", "error"],
            "properties": {
                "id": _ERROR_ID,
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
                },
            },
        },
    ],
    "additionalProperties": True,
}

_SCOPE_SPANS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scope": _NULLABLE_OBJECT,
        "spans": {"type": "array", "items": _OBJECT, "nullable": True},
        "schemaUrl": _NULLABLE_STRING,
    },
    "additionalProperties": True,
}

OTLP_TRACES_JSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "resourceSpans": {
            "type": "array",
            "nullable": True,
            "items": {
                "type": "object",
                "properties": {
                    "resource": _NULLABLE_OBJECT,
                    "scopeSpans": {"type": "array", "items": _SCOPE_SPANS, "nullable": True},
                    "schemaUrl": _NULLABLE_STRING,
                },
                "additionalProperties": True,
            },
        }
    },
    "additionalProperties": True,
}
