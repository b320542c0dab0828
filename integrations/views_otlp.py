"""`POST /v1/traces`: the OTLP/HTTP trace receiver. Exporters point their traces endpoint
here with the API key in `Authorization: Bearer …`; GenAI spans become turns
(`integrations.otlp_ingest`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from integrations.otlp_decode import (
    JSON,
    PROTOBUF,
    OtlpError,
    decompress,
    encode_response,
    parse_request,
    spans_of,
)
from integrations.otlp_ingest import ingest_spans
from integrations.request_schemas import OTLP_TRACES_JSON
from sessions_app.api.exceptions import json_error
from sessions_app.api.tenancy import TenantAPIView

# The codings `decompress` takes, as HTTP sends them: any case, optional blanks around,
# an empty header being no coding.
CONTENT_ENCODING_PATTERN = (
    r"^[ \t]*"
    r"([Gg][Zz][Ii][Pp]|[Dd][Ee][Ff][Ll][Aa][Tt][Ee]|[Ii][Dd][Ee][Nn][Tt][Ii][Tt][Yy])?"
    r"[ \t]*$"
)


class RawBodyParser(BaseParser):
    """Leaves OTLP bodies to `otlp_decode` (protobuf, JSON, gzip); declared so DRF and
    the schema know the media types."""

    media_type = "*/*"

    def parse(  # type: ignore[override]  # the raw body, decoded by otlp_decode
        self, stream: Any, media_type: str | None = None, parser_context: Any = None
    ) -> bytes:
        return stream.read() if stream is not None else b""


class FirstRendererNegotiation(BaseContentNegotiation):
    """The view answers in the request's own encoding, not by `Accept`: an exporter
    asking for protobuf must not get a 406 from DRF's JSON-only renderer list."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser:
        return next(iter(parsers))

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class OtlpTracesView(TenantAPIView):
    parser_classes = [RawBodyParser]
    content_negotiation_class = FirstRendererNegotiation
    request_body_required = True  # an export always carries its ExportTraceServiceRequest

    @extend_schema(
        summary="OTLP/HTTP trace export: GenAI spans become turn steps",
        description=(
            "An OTLP `ExportTraceServiceRequest` as `application/x-protobuf` or "
            "`application/json`, optionally `Content-Encoding: gzip`. Spans with "
            "`gen_ai.operation.name` become steps; the spans of one trace one turn of the "
            "session named by `gen_ai.conversation.id` (created if missing). Other spans "
            "are ignored and counted. A replayed export counts nothing twice. Answers an "
            "`ExportTraceServiceResponse` in the request's encoding (JSON adds `engram` "
            "with the counts); spans that could not be stored are in "
            "`partialSuccess.rejectedSpans`."
        ),
        request={PROTOBUF: OpenApiTypes.BINARY, JSON: OTLP_TRACES_JSON},
        parameters=[
            OpenApiParameter(
                "Content-Encoding",
                {"type": "string", "pattern": CONTENT_ENCODING_PATTERN},
                OpenApiParameter.HEADER,
                description="gzip, deflate or identity, in any case; empty means identity.",
            )
        ],
        responses={
            200: OpenApiResponse(description="ExportTraceServiceResponse (protobuf or JSON)."),
            400: OpenApiResponse(
                description="invalid / malformed_json: the body cannot be decoded"
            ),
            401: OpenApiResponse(description="not_authenticated / authentication_failed"),
            413: OpenApiResponse(description="request_too_large (also once inflated)"),
            415: OpenApiResponse(description="unsupported_media_type"),
        },
    )
    def post(self, request: Request) -> HttpResponse:
        content_type = request.content_type or ""
        media = content_type.split(";")[0].strip().lower()
        try:
            raw = decompress(
                request.body,
                request.headers.get("Content-Encoding", ""),
                settings.ENGRAM_OTLP_MAX_INFLATED_BYTES,
            )
            spans = spans_of(parse_request(raw, content_type))
        except OtlpError as exc:
            return json_error(exc.status, exc.code, exc.message)
        report = ingest_spans(tenant=self.tenant, spans=spans)
        message = "; ".join(report.errors[:5])
        body, out_type = encode_response(media, report.rejected_spans, message, report.as_dict())
        return HttpResponse(body, content_type=out_type, status=200)
