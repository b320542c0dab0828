"""GenAI spans (OpenTelemetry semantic conventions, `gen_ai.*`) as Engram turns.

- A span is a GenAI span if it has `gen_ai.operation.name`. Others are ignored and counted.
- The spans of one trace become one turn of the session named by `gen_ai.conversation.id`
  (found on any span of the trace), resumed or created by (user, agent, conversation id):
  the user is `user.id`, `enduser.id`, else ANONYMOUS_USER; the agent is
  `gen_ai.agent.id`, `gen_ai.agent.name`, else the resource's `service.name`.
- Each GenAI span is one step, in start order: `gen_ai.operation.name` is the step type,
  the response model (else the request model) the model, `gen_ai.usage.*` the counts
  (input includes cached, as the conventions say and Engram counts), the span's status
  and duration its success and time. A GenAI span whose children in the export are GenAI
  spans (an `invoke_agent` around its `chat` calls) is a container: it is not a step, so
  usage an instrumentation also rolls up onto it is not counted twice.
- Replays never double count: each turn carries the ids of its spans; spans already stored
  for that trace in the session are dropped before recording, and the Idempotency-Key is
  derived from the trace id and the span ids, so an export retried while the first is
  still being stored is answered from the same key.

All recording goes through `record_turns`: the whole export in one call to the batch
service (`sessions_app.services.turn_batches`), set-based SQL in one transaction."""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from integrations.otlp_decode import SpanRecord
from sessions_app.api.fields import IDENTIFIER_MAX_LENGTH, checked_identifier
from sessions_app.errors import ApplicationError
from sessions_app.selectors.turns import turn_metadata_values
from sessions_app.services.idempotency import request_fingerprint
from sessions_app.services.sessions import session_resume_or_create
from sessions_app.services.turn_batches import BatchOutcome, BatchTurn, turns_record_batch
from sessions_app.services.turn_drafts import TurnFields
from sessions_app.services.turn_recording import TurnRecorded
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts, UsageError

if TYPE_CHECKING:
    from sessions_app.models import ChatSession, Tenant

OPERATION = "gen_ai.operation.name"
CONVERSATION = "gen_ai.conversation.id"
SPAN_IDS_KEY = "otel_span_ids"
TRACE_KEY = "otel_trace_id"
# The user of a session started by a trace that names none.
ANONYMOUS_USER = "otel"

# Attribute names, newest convention first; older instrumentations still send the others.
INPUT = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
OUTPUT = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
CACHED = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
    "gen_ai.usage.cached_tokens",
)
CACHE_WRITE = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
)
REASONING = ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens")


@dataclass
class IngestReport:
    spans: int = 0
    genai_spans: int = 0
    ignored_spans: int = 0  # not GenAI, or a GenAI trace without a conversation id
    container_spans: int = 0
    duplicate_spans: int = 0
    rejected_spans: int = 0
    turns_recorded: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "errors"} | {
            "errors": self.errors[:20]
        }


@dataclass(frozen=True)
class TurnItem:
    """One turn to record: the batch route's item shape, as the service takes it."""

    session_id: str
    idempotency_key: str
    steps: list[StepInput]
    metadata: dict[str, Any]
    duration_ms: int
    span_count: int


def _first(attributes: dict[str, Any], names: Iterable[str]) -> Any:
    for name in names:
        if attributes.get(name) is not None:
            return attributes[name]
    return None


def _count(attributes: dict[str, Any], names: tuple[str, ...]) -> int:
    value = _first(attributes, names)
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():  # a JSON exporter's 12.0
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):  # also NaN, inf, 12.5
        raise UsageError(names[0], "Must be an integer.")
    return value


def _step(span: SpanRecord) -> StepInput:
    a = span.attributes
    counts = TokenCounts(
        input_tokens=_count(a, INPUT),
        output_tokens=_count(a, OUTPUT),
        cached_tokens=_count(a, CACHED),
        cache_write_tokens=_count(a, CACHE_WRITE),
        reasoning_tokens=_count(a, REASONING),
    ).validate(prefix="attributes.")
    model = next(
        (m for m in (a.get("gen_ai.response.model"), a.get("gen_ai.request.model")) if m),
        "",
    )
    if not isinstance(model, str):  # a list or a map is not a model's name
        model = ""
    error = None
    if span.failed:
        error = span.status_message or str(a.get("error.type") or "error")
    return StepInput(
        step_type=str(a[OPERATION])[:64],
        model=str(model)[:200],
        counts=counts,
        duration_ms=span.duration_ms,
        success=not span.failed,
        error=error,
        usage_raw={k: v for k, v in a.items() if k.startswith("gen_ai.usage.")} or None,
    )


def _identity(spans: list[SpanRecord]) -> tuple[str, str, str | None] | None:
    """(conversation id, agent id, user id or None) of a trace, or None without a
    conversation. Each is an attribute that makes an identifier by the REST API's rule
    (`_identifier`); one that does not (blank, a list, a map) is as good as absent."""
    conversation = agent = user = None
    for span in spans:
        a = span.attributes
        conversation = conversation or _identifier(a.get(CONVERSATION))
        agent = (
            agent
            or _identifier(a.get("gen_ai.agent.id"))
            or _identifier(a.get("gen_ai.agent.name"))
        )
        user = user or _identifier(a.get("user.id")) or _identifier(a.get("enduser.id"))
    if not conversation:
        return None
    agent = agent or _identifier(spans[0].resource.get("service.name")) or "otel"
    return conversation, agent, user


def _identifier(value: Any) -> str | None:
    """A string (or integer) attribute as an identifier: trimmed, cut to the REST API's
    IDENTIFIER_MAX_LENGTH, with a visible character (checked_identifier), else None."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return checked_identifier(str(value).strip()[:IDENTIFIER_MAX_LENGTH])


def _session_of(*, tenant: Tenant, conversation: str, agent: str, user: str | None) -> ChatSession:
    """The session of a trace: resumed or made for its user, conversation and agent, as
    `POST /sessions` with `resume: true` does. A trace that names no user is
    ANONYMOUS_USER's: it continues only a session of ANONYMOUS_USER, never another user's
    session of the same conversation id (whose state and turns it would otherwise join)."""
    session, _ = session_resume_or_create(
        tenant=tenant,
        user_id=user or ANONYMOUS_USER,
        agent_id=agent,
        external_session_id=conversation,
    )
    return session


def _key(trace_id: str, span_ids: list[str]) -> str:
    digest = hashlib.sha256(",".join(sorted(span_ids)).encode()).hexdigest()[:32]
    return f"otlp:{trace_id}:{digest}"


def record_turns(*, tenant: Tenant, items: list[TurnItem]) -> list[ApplicationError | None]:
    """Every turn of the export in one call to the batch service (`POST /turns/batch`'s
    code): one lock of the sessions, one COPY of the turns and one of the steps, with the
    single route's pricing, budget flags and idempotency, and one bad turn never loses
    the others. A key's scope is the single route's, so a replay of the export, or of
    one trace of it, is answered from the key and never counted twice."""
    batch: list[BatchTurn | None] = [
        BatchTurn(
            session_id=uuid.UUID(item.session_id),
            fields=TurnFields(
                steps=item.steps, metadata=item.metadata, duration_ms=item.duration_ms
            ),
            idempotency_key=item.idempotency_key,
            request_hash=request_fingerprint(
                {
                    "steps": [asdict(step) for step in item.steps],
                    "metadata": item.metadata,
                    "duration_ms": item.duration_ms,
                }
            ),
        )
        for item in items
    ]
    outcomes = turns_record_batch(tenant=tenant, items=batch, render=_turn_body)
    return [
        None if outcome is not None and outcome.status == 201 else _error_of(outcome)
        for outcome in outcomes
    ]


def _turn_body(recorded: TurnRecorded, keyed: bool) -> dict[str, Any]:
    """What a key stores for a replay: the turn it recorded."""
    return {"turn_id": str(recorded.turn.pk), "turn_number": recorded.turn.turn_number}


def _error_of(outcome: BatchOutcome | None) -> ApplicationError:
    if outcome is None or outcome.error is None:  # every item is given, so never None
        raise RuntimeError("the batch service answered an item without a result")
    return outcome.error


def ingest_spans(*, tenant: Tenant, spans: list[SpanRecord]) -> IngestReport:
    report = IngestReport(spans=len(spans))
    genai = [s for s in spans if s.attributes.get(OPERATION)]
    report.genai_spans = len(genai)
    report.ignored_spans = len(spans) - len(genai)
    parents = {s.parent_span_id for s in genai if s.parent_span_id}
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in genai:
        by_trace[span.trace_id].append(span)
    items: list[TurnItem] = []
    for trace_id, trace_spans in by_trace.items():
        item = _trace_turn(
            tenant=tenant, trace_id=trace_id, spans=trace_spans, parents=parents, report=report
        )
        if item is not None:
            items.append(item)
    _count_outcomes(report, items, record_turns(tenant=tenant, items=items))
    return report


def _trace_turn(
    *,
    tenant: Tenant,
    trace_id: str,
    spans: list[SpanRecord],
    parents: set[str],
    report: IngestReport,
) -> TurnItem | None:
    """The turn of one trace, in the session its conversation names; None when the trace
    names no conversation or has no new step (counted in the report)."""
    identity = _identity(spans)
    if identity is None:
        report.ignored_spans += len(spans)
        report.errors.append(f"trace {trace_id}: no {CONVERSATION}")
        return None
    conversation, agent, user = identity
    session = _session_of(tenant=tenant, conversation=conversation, agent=agent, user=user)
    stored = set(
        turn_metadata_values(session=session, match={TRACE_KEY: trace_id}, key=SPAN_IDS_KEY)
    )
    steps, span_ids = _new_steps(spans, parents=parents, stored=stored, report=report)
    if not steps:
        return None
    start = min(s.start_ns for s in spans)
    end = max(s.end_ns for s in spans)
    return TurnItem(
        session_id=str(session.pk),
        idempotency_key=_key(trace_id, span_ids),
        steps=steps,
        metadata={"source": "otlp", TRACE_KEY: trace_id, SPAN_IDS_KEY: span_ids},
        duration_ms=max(0, (end - start) // 1_000_000),
        span_count=len(span_ids),
    )


def _new_steps(
    spans: list[SpanRecord], *, parents: set[str], stored: set[str], report: IngestReport
) -> tuple[list[StepInput], list[str]]:
    """The steps of a trace's spans in start order, with their span ids: containers,
    spans already stored and spans with unusable usage are left out and counted."""
    steps: list[StepInput] = []
    span_ids: list[str] = []
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        if span.span_id in parents:
            report.container_spans += 1
            continue
        if span.span_id in stored:
            report.duplicate_spans += 1
            continue
        try:
            steps.append(_step(span))
        except UsageError as exc:
            report.rejected_spans += 1
            report.errors.append(f"span {span.span_id}: {exc.field}: {exc.message}")
            continue
        span_ids.append(span.span_id)
    return steps, span_ids


def _count_outcomes(
    report: IngestReport, items: list[TurnItem], errors: list[ApplicationError | None]
) -> None:
    """Each recorded turn counted; each refused one's spans counted as rejected, with why."""
    for item, error in zip(items, errors, strict=True):
        if error is None:
            report.turns_recorded += 1
        else:
            report.rejected_spans += item.span_count
            report.errors.append(f"session {item.session_id}: {error.code}: {error.message}")
