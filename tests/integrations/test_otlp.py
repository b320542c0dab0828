"""OTLP/HTTP GenAI ingest, fed by the real OpenTelemetry SDK and its OTLP/HTTP exporter
(protobuf, gzip) against the live server; JSON and malformed bodies by hand."""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

import httpx
import pytest
from django.db import connection
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rest_framework.test import APIClient

from integrations.otlp_decode import parse_request, spans_of
from integrations.otlp_ingest import ANONYMOUS_USER, ingest_spans
from sessions_app.models import ChatSession, ChatTurn, Tenant
from sessions_app.services.api_keys import IssuedKey
from tests.integrations.otlp_spans import CALLS, emit, expected, otlp_json

TOKENS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")


def api(live_server: Any, key: IssuedKey) -> httpx.Client:
    return httpx.Client(
        base_url=live_server.url, headers={"Authorization": f"Bearer {key.secret}"}, timeout=30
    )


def usage_totals(client: httpx.Client) -> dict[str, Any]:
    report = client.get("/api/v1/usage", params={"group_by": "session"})
    assert report.status_code == 200, report.text
    return report.json()["totals"]


def sdk_exporter(live_server: Any, key: IssuedKey) -> OTLPSpanExporter:
    """The SDK's OTLP/HTTP exporter (protobuf, gzip) pointed at the live server."""
    return OTLPSpanExporter(
        endpoint=f"{live_server.url}/v1/traces",
        headers={"Authorization": f"Bearer {key.secret}"},
        compression=Compression.Gzip,
    )


def assert_totals_count_every_call(totals: dict[str, Any]) -> None:
    assert {k: totals[k] for k in TOKENS} == expected()
    assert totals["errors"] == 1
    assert totals["calls"] == len(CALLS) + 2  # every chat plus one tool call per trace


def conversation_a_with_its_steps(client: httpx.Client) -> ChatSession:
    sessions = {s.external_session_id: s for s in ChatSession.objects.all()}
    assert set(sessions) == {"conv-a", "conv-b"}  # the orphan trace made none
    conv_a = sessions["conv-a"]
    assert (conv_a.agent_id, conv_a.user_id) == ("shop-agent", "maria")
    turns = client.get(f"/api/v1/sessions/{conv_a.pk}/turns").json()["results"]
    assert len(turns) == 1
    steps = turns[0]["steps"]
    assert [s["step_type"] for s in steps] == ["chat", "chat", "chat", "execute_tool"]
    assert steps[0]["model"] == "gpt-4o-mini-2024" and steps[0]["cached_tokens"] == 400
    assert steps[2]["success"] is False and steps[2]["error"] == "529 overloaded"
    assert all(s["duration_ms"] >= 0 for s in steps)
    return conv_a


def assert_replays_count_nothing_twice(
    exporter: OTLPSpanExporter, spans: Any, client: httpx.Client, totals: dict[str, Any]
) -> None:
    """Replays: the whole export, then a part of it, count nothing twice."""
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    assert exporter.export(spans[: len(spans) // 2]) == SpanExportResult.SUCCESS
    again = usage_totals(client)
    assert {k: again[k] for k in TOKENS} == expected() and again["cost_usd"] == totals["cost_usd"]
    assert ChatTurn.objects.count() == 2


def emit_follow_up_chat(provider: TracerProvider) -> None:
    """A later trace of conversation conv-a: one chat span, naming its user (a trace that
    names none is the anonymous user's and would not continue maria's session)."""
    tracer = provider.get_tracer("engram-test")
    with tracer.start_as_current_span("chat follow-up") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.conversation.id", "conv-a")
        span.set_attribute("gen_ai.agent.name", "shop-agent")
        span.set_attribute("user.id", "maria")
        span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
        span.set_attribute("gen_ai.usage.input_tokens", 10)
        span.set_attribute("gen_ai.usage.output_tokens", 2)


def test_genai_spans_from_the_otel_sdk_become_turns(live_server: Any, live_key: IssuedKey) -> None:
    exporter = sdk_exporter(live_server, live_key)
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-service"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    emit(provider.get_tracer("engram-test"))
    spans = memory.get_finished_spans()
    assert exporter.export(spans) == SpanExportResult.SUCCESS

    client = api(live_server, live_key)
    totals = usage_totals(client)
    assert_totals_count_every_call(totals)
    conv_a = conversation_a_with_its_steps(client)
    assert_replays_count_nothing_twice(exporter, spans, client, totals)

    # A later trace of the same conversation is a new turn of the same session.
    memory.clear()
    emit_follow_up_chat(provider)
    assert exporter.export(memory.get_finished_spans()) == SpanExportResult.SUCCESS
    assert ChatTurn.objects.filter(session=conv_a).count() == 2
    exporter.shutdown()


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == code


def assert_bad_bodies_refused(client: httpx.Client) -> None:
    """Garbage protobuf, bad gzip, malformed JSON, a bad trace id, another media type and
    a gzip bomb: each refused with its code."""
    proto = {"Content-Type": "application/x-protobuf"}
    assert_error(
        client.post("/v1/traces", content=b"\xff\xff\xff\x0f garbage", headers=proto),
        400,
        "invalid",
    )
    assert_error(
        client.post("/v1/traces", content=b"\x0a\x05\x0a\x03", headers=proto), 400, "invalid"
    )
    assert_error(
        client.post(
            "/v1/traces", content=b"not gzip", headers={**proto, "Content-Encoding": "gzip"}
        ),
        400,
        "invalid",
    )
    assert_error(
        client.post("/v1/traces", content=b"{nope", headers={"Content-Type": "application/json"}),
        400,
        "malformed_json",
    )
    bad_id = json.dumps(otlp_json("zz", "eee19b7ec3c1b174", 1)).encode()
    assert_error(
        client.post("/v1/traces", content=bad_id, headers={"Content-Type": "application/json"}),
        400,
        "invalid",
    )
    assert_error(
        client.post("/v1/traces", content=b"x", headers={"Content-Type": "text/plain"}),
        415,
        "unsupported_media_type",
    )
    bomb = gzip.compress(b"\0" * (17 * 1024 * 1024))
    assert_error(
        client.post("/v1/traces", content=bomb, headers={**proto, "Content-Encoding": "gzip"}),
        413,
        "request_too_large",
    )


def test_otlp_json_gzip_and_bad_bodies(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey
) -> None:
    client = api(live_server, live_key)
    body = gzip.compress(
        json.dumps(otlp_json("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", 321)).encode()
    )
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    ok = client.post("/v1/traces", content=body, headers=headers)
    assert ok.status_code == 200, ok.text
    assert ok.json()["engram"]["turns_recorded"] == 1
    replay = client.post("/v1/traces", content=body, headers=headers)
    assert replay.json()["engram"]["turns_recorded"] == 0
    assert replay.json()["engram"]["duplicate_spans"] == 1
    assert usage_totals(client)["input_tokens"] == 321
    assert usage_totals(api(live_server, other_live_key))["input_tokens"] == 0

    assert_bad_bodies_refused(client)
    anonymous = httpx.post(f"{live_server.url}/v1/traces", content=body, headers=headers)
    assert_error(anonymous, 401, "not_authenticated")
    assert usage_totals(client)["input_tokens"] == 321


@pytest.mark.parametrize("tokens", [{"in": 10, "cached": 50}, {"in": -1, "cached": 0}])
def test_spans_with_impossible_counts_are_rejected_not_stored(
    live_server: Any, live_key: IssuedKey, tokens: dict[str, int]
) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("chat") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.conversation.id", "bad")
        span.set_attribute("gen_ai.usage.input_tokens", tokens["in"])
        span.set_attribute("gen_ai.usage.output_tokens", 1)
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", tokens["cached"])
    client = api(live_server, live_key)
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    response = client.post(
        "/v1/traces",
        content=encode_spans(memory.get_finished_spans()).SerializeToString(),
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert response.status_code == 200
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1
    assert answer.partial_success.error_message
    assert ChatTurn.objects.count() == 0


def test_an_export_is_recorded_by_the_batch_service(tenant: Tenant) -> None:
    """The receiver records an export's turns through the batch service (one
    COPY of the turns), not a turn at a time (the single route's INSERT per turn); the
    totals, numbering and replays stay exact."""
    exports = [otlp_json(f"{n:032x}", f"{n:016x}", 100 + n) for n in range(1, 4)]
    body = {"resourceSpans": [part for export in exports for part in export["resourceSpans"]]}
    spans = spans_of(parse_request(json.dumps(body).encode(), "application/json"))
    statements: list[str] = []

    def seen(execute: Any, sql: Any, params: Any, many: bool, context: Any) -> Any:
        # A statement composed with psycopg.sql arrives as a Composable: read its text.
        text = sql if isinstance(sql, str) else sql.as_string(connection.connection)
        statements.append(text)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(seen):
        report = ingest_spans(tenant=tenant, spans=spans)
    assert report.turns_recorded == 3 and not report.errors
    assert not [sql for sql in statements if re.search(r'INSERT INTO "?chat_turn"? ', sql)]
    session = ChatSession.objects.get(tenant=tenant, external_session_id="json-conv")
    assert session.total_input_tokens == 101 + 102 + 103
    numbers = ChatTurn.objects.filter(session=session).values_list("turn_number", flat=True)
    assert sorted(numbers) == [1, 2, 3]
    again = ingest_spans(tenant=tenant, spans=spans)
    assert again.turns_recorded == 0 and again.duplicate_spans == 3
    session.refresh_from_db()
    assert session.turn_count == 3 and session.total_input_tokens == 306


def _export_of(trace: int, user: str | None) -> list[Any]:
    body = otlp_json(f"{trace:032x}", f"{trace:016x}", 10)
    if user is not None:
        span = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        span["attributes"].append({"key": "user.id", "value": {"stringValue": user}})
    return spans_of(parse_request(json.dumps(body).encode(), "application/json"))


def test_a_conversation_id_is_one_session_per_user(tenant: Tenant) -> None:
    """Two users' traces with the same `gen_ai.conversation.id` (an agent numbering its
    conversations per user) are two sessions, neither sees the other's turns; a trace
    that names no user is the anonymous user's, in a session of its own."""
    ingest_spans(tenant=tenant, spans=_export_of(1, "maria"))
    ingest_spans(tenant=tenant, spans=_export_of(2, "ivan"))
    sessions = {
        s.user_id: s
        for s in ChatSession.objects.filter(tenant=tenant, external_session_id="json-conv")
    }
    assert set(sessions) == {"maria", "ivan"}
    assert [s.turn_count for s in sessions.values()] == [1, 1]
    ingest_spans(tenant=tenant, spans=_export_of(3, None))
    ingest_spans(tenant=tenant, spans=_export_of(4, "maria"))
    counts = dict(
        ChatSession.objects.filter(tenant=tenant, external_session_id="json-conv").values_list(
            "user_id", "turn_count"
        )
    )
    assert counts == {"maria": 2, "ivan": 1, ANONYMOUS_USER: 1}


def test_a_trace_without_a_user_never_joins_a_users_session(api: APIClient, tenant: Tenant) -> None:
    """A user's session resumable by external id "x" stays theirs: a trace of
    conversation "x" from the same agent that names no user is recorded in the anonymous
    user's session of "x", and the next such trace continues that one."""
    made = api.post(
        "/api/v1/sessions",
        {"user_id": "maria", "agent_id": "js-agent", "external_session_id": "x"},
        format="json",
    )
    assert made.status_code == 201, made.content
    for trace in (1, 2):
        body = otlp_json(f"{trace:032x}", f"{trace:016x}", 10)
        attributes = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
        attributes[1] = {"key": "gen_ai.conversation.id", "value": {"stringValue": "x"}}
        sent = api.post("/v1/traces", json.dumps(body), content_type="application/json")
        assert sent.status_code == 200, sent.content
        assert sent.json()["engram"]["turns_recorded"] == 1
    sessions = ChatSession.objects.filter(tenant=tenant, external_session_id="x")
    assert dict(sessions.values_list("user_id", "turn_count")) == {
        "maria": 0,
        ANONYMOUS_USER: 2,
    }
    assert api.get(f"/api/v1/sessions/{made.json()['id']}/turns").json()["results"] == []


def _span_doc(number: int, attributes: dict[str, Any]) -> dict[str, Any]:
    """One OTLP/JSON span of trace `number`, with these attributes (OTLP AnyValues)."""
    base = {
        "gen_ai.operation.name": {"stringValue": "chat"},
        "gen_ai.conversation.id": {"stringValue": "hostile"},
        "gen_ai.usage.input_tokens": {"intValue": "5"},
    }
    span = {
        "traceId": f"{number:032x}", "spanId": f"{number:016x}", "name": "chat", "kind": 3,
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000250000000",
        "attributes": [{"key": k, "value": v} for k, v in (base | attributes).items()],
    }  # fmt: skip
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}


def test_hostile_span_attributes_are_kept_or_refused_span_by_span(
    api: APIClient, tenant: Tenant
) -> None:
    """What an exporter may send that PostgreSQL or the REST rules would not take: NUL
    in a string (kept as U+FFFD: one odd attribute must not lose the export, which was a
    400 for the whole export or a 500), a blank or non-string identifier (as if absent),
    a token count that is not an integer (that span refused, the others kept; NaN was a
    500), JSON nested past the parser's recursion (400, was a 500 as HTML)."""
    nul = "\u0000"
    cases = [
        {"gen_ai.conversation.id": {"stringValue": f"a{nul}b"}},
        {"gen_ai.request.model": {"stringValue": f"m{nul}"}, "user.id": {"stringValue": nul}},
        {"gen_ai.agent.name": {"stringValue": f"{nul}x"}, "user.id": {"stringValue": "\u001f"}},
        {"gen_ai.request.model": {"kvlistValue": {"values": []}}},
        {"gen_ai.conversation.id": {"stringValue": " "}},
        {"gen_ai.conversation.id": {"arrayValue": {"values": [{"stringValue": "x"}]}}},
        {"gen_ai.usage.input_tokens": {"doubleValue": "NaN"}},
        {"gen_ai.usage.input_tokens": {"doubleValue": 12.5}},
        {"gen_ai.usage.input_tokens": {"doubleValue": 12.0}},
    ]
    spans = [_span_doc(n, attrs)["resourceSpans"][0] for n, attrs in enumerate(cases, 1)]
    response = api.post(
        "/v1/traces", json.dumps({"resourceSpans": spans}), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    # Two traces without a usable conversation id are ignored; NaN and 12.5 are refused.
    assert body["engram"]["turns_recorded"] == 5
    assert body["partialSuccess"]["rejectedSpans"] == "2"
    assert body["partialSuccess"]["errorMessage"].count("Must be an integer") == 2
    sessions = ChatSession.objects.filter(tenant=tenant)
    assert set(sessions.values_list("external_session_id", flat=True)) == {"a\ufffdb", "hostile"}
    # A NUL user is the visible U+FFFD; a blank one ("\u001f") is no user at all.
    assert set(sessions.values_list("user_id", flat=True)) == {"otel", "\ufffd"}
    assert set(sessions.values_list("agent_id", flat=True)) == {"otel", "\ufffdx"}
    steps = ChatTurn.objects.filter(session__tenant=tenant).values_list(
        "steps__model", "steps__input_tokens"
    )
    assert sorted(steps) == sorted([("", 5), ("m\ufffd", 5), ("", 5), ("", 5), ("", 12)])

    deep = b'{"resourceSpans":' + b"[" * 5000 + b"]" * 5000 + b"}"
    response = api.post("/v1/traces", deep, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


def test_an_exception_in_the_receiver_is_a_json_500(
    api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from integrations import views_otlp

    def explode(**kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(views_otlp, "ingest_spans", explode)
    api.raise_request_exception = False
    body = json.dumps(_span_doc(1, {}))
    response = api.post("/v1/traces", body, content_type="application/json")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["code"] == "server_error"
