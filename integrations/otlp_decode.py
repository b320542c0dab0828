"""OTLP/HTTP trace export bodies (protobuf or JSON, optionally gzip) as plain span records.

OTLP/JSON is the protobuf JSON mapping with one twist: trace and span ids are hex
strings, not base64. They are turned into base64 before `json_format` parses the rest,
so both encodings go through the same generated message class."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR


class OtlpError(ValueError):
    """The body cannot be read: `status` is 400, 413 or 415."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class SpanRecord:
    trace_id: str  # hex
    span_id: str  # hex
    parent_span_id: str  # hex, "" for a root
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int
    status_message: str

    @property
    def duration_ms(self) -> int:
        return max(0, (self.end_ns - self.start_ns) // 1_000_000)

    @property
    def failed(self) -> bool:
        return self.status_code == STATUS_ERROR


def _text(value: str) -> str:
    """A string of the export as PostgreSQL can store it: NUL, which protobuf strings may
    hold and text columns cannot, becomes U+FFFD. Telemetry is kept, not refused: one
    span's odd attribute must not lose the export's other spans."""
    return value.replace("\x00", "\ufffd")


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {_text(kv.key): _value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    if kind == "string_value":
        return _text(value.string_value)
    return getattr(value, kind)


def _attributes(items: Any) -> dict[str, Any]:
    return {_text(kv.key): _value(kv.value) for kv in items}


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """gzip (or deflate) bodies, inflated at most to `limit` bytes: a small body must not
    become a large one in memory."""
    encoding = encoding.strip(" \t").lower()  # HTTP's optional whitespace; codings ignore case
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise OtlpError(
            415, "unsupported_media_type", f"Content-Encoding {encoding!r} is not supported."
        )
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise OtlpError(400, "invalid", f"The body is not valid {encoding}: {exc}") from exc
    if len(out) > limit:
        raise OtlpError(413, "request_too_large", f"The inflated body exceeds {limit} bytes.")
    return out


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP/JSON's hex ids, as the protobuf JSON mapping's base64."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in (
                "traceId",
                "spanId",
                "parentSpanId",
                "trace_id",
                "span_id",
                "parent_span_id",
            ) and isinstance(value, str):
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError as exc:
                    raise OtlpError(400, "invalid", f"{key} must be a hex string.") from exc
            out[key] = _hex_ids_to_base64(value)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(item) for item in node]
    return node


def parse_request(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    media = content_type.split(";")[0].strip().lower()
    message = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, ValueError, RuntimeError) as exc:
            raise OtlpError(
                400, "invalid", f"The body is not a valid OTLP protobuf message: {exc}"
            ) from exc
        return message
    if media == JSON:
        try:
            document = json.loads(body)
        except RecursionError as exc:
            raise OtlpError(400, "malformed_json", "The body's JSON is nested too deeply.") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise OtlpError(400, "malformed_json", f"The body is not valid JSON: {exc}") from exc
        if not isinstance(document, dict):
            raise OtlpError(400, "invalid", "The body must be an ExportTraceServiceRequest object.")
        try:
            json_format.ParseDict(_hex_ids_to_base64(document), message, ignore_unknown_fields=True)
        except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
            raise OtlpError(
                400, "invalid", f"The body is not a valid OTLP JSON message: {exc}"
            ) from exc
        return message
    raise OtlpError(415, "unsupported_media_type", f"Send {PROTOBUF} or {JSON}.")


def spans_of(message: ExportTraceServiceRequest) -> list[SpanRecord]:
    spans = []
    for resource_spans in message.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    SpanRecord(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        name=_text(span.name),
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes=_attributes(span.attributes),
                        resource=resource,
                        status_code=span.status.code,
                        status_message=_text(span.status.message),
                    )
                )
    return spans


def encode_response(
    media: str, rejected: int, message: str, extra: dict[str, Any]
) -> tuple[bytes, str]:
    """The ExportTraceServiceResponse in the request's encoding; JSON also carries Engram's
    own counts beside the standard fields."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if media == PROTOBUF:
        return response.SerializeToString(), PROTOBUF
    body = json_format.MessageToDict(response)
    body["engram"] = extra
    return json.dumps(body).encode(), JSON
