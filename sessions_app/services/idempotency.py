"""`Idempotency-Key` for POSTs, as Stripe and the IETF httpapi draft define it.

1. The key is claimed first, in its own committed statement
   (``INSERT … ON CONFLICT DO NOTHING``), so a concurrent duplicate sees the claim.
2. The work and the stored response commit together in one transaction: a response is
   stored if and only if its effects are.
3. If the work fails, the claim is deleted, so that a retry can proceed.

A second request with the key: another body (or route) → 422 `idempotency_key_reused`;
the first still running → 409 `idempotency_in_flight`; the first done → its response,
replayed. A claim older than `STALE_IN_FLIGHT` whose work never committed (a crashed
worker) may be taken over by a retry with the same body. Keys are per tenant and are
purged after `ENGRAM_IDEMPOTENCY_TTL_SECONDS`.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from sessions_app.errors import ApplicationError, IdempotencyInFlight, IdempotencyKeyReused
from sessions_app.models import IdempotencyRecord, Tenant

STALE_IN_FLIGHT = timedelta(minutes=2)
Status = IdempotencyRecord.Status


@dataclass(frozen=True)
class IdempotentOutcome:
    status: int
    body: dict[str, Any]
    replayed: bool


def request_fingerprint(data: Any) -> str:
    """SHA-256 of the parsed body in canonical JSON: key order and whitespace don't count."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _claim(
    *, tenant: Tenant, key: str, scope: str, request_hash: str, session_id: uuid.UUID | None
) -> int | None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO idempotency_record (tenant_id, key, scope, session_id, request_hash,
                                            status, created_at)
            VALUES (%s, %s, %s, %s, %s, %s, now())
            ON CONFLICT (tenant_id, key) DO NOTHING
            RETURNING id
            """,
            [tenant.pk, key, scope, session_id, request_hash, Status.IN_FLIGHT],
        )
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def _as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return None if value is None else uuid.UUID(str(value))
    except ValueError:
        return None


def _take_over_stale(*, record: IdempotencyRecord, now: datetime) -> bool:
    with transaction.atomic():
        return bool(
            IdempotencyRecord.objects.filter(
                pk=record.pk, status=Status.IN_FLIGHT, created_at__lt=now - STALE_IN_FLIGHT
            ).update(created_at=now)
        )


def _replay(record: IdempotencyRecord) -> IdempotentOutcome:
    """The stored answer of a completed record, as a retry receives it."""
    return IdempotentOutcome(
        status=record.response_status or 200,
        body=record.response_body or {},
        replayed=True,
    )


def idempotent_execute(
    *,
    tenant: Tenant,
    key: str | None,
    scope: str,
    request_hash: str,
    work: Callable[[], tuple[int, dict[str, Any]]],
    session_id: Any = None,
) -> IdempotentOutcome:
    """Run `work` (which returns status and a JSON-ready body) at most once per key.
    `session_id`, when the request is about a session, is stored with the key so that
    erasing the session's user finds it (an id that is not a UUID is not stored)."""
    if key is None:
        status, body = work()
        return IdempotentOutcome(status=status, body=body, replayed=False)
    claimed = _claim_or_replay(
        tenant=tenant, key=key, scope=scope, request_hash=request_hash, session_id=session_id
    )
    if isinstance(claimed, IdempotentOutcome):
        return claimed
    return _work_under_claim(record_id=claimed, work=work)


def _claim_or_replay(
    *, tenant: Tenant, key: str, scope: str, request_hash: str, session_id: Any
) -> int | IdempotentOutcome:
    """The id of the record claimed for this request (a new claim, or a stale one taken
    over), or the replay of the completed first request. Raises when the key was used
    with another body, or its first request is still in flight."""
    for _attempt in range(3):  # a claim deleted between our insert and read: try again
        record_id = _claim(
            tenant=tenant,
            key=key,
            scope=scope,
            request_hash=request_hash,
            session_id=_as_uuid(session_id),
        )
        if record_id is not None:
            return record_id
        record = IdempotencyRecord.objects.filter(tenant=tenant, key=key).first()
        if record is None:
            continue
        if record.scope != scope or record.request_hash != request_hash:
            raise IdempotencyKeyReused(fields={"Idempotency-Key": ["Used with another body."]})
        if record.status == Status.COMPLETED:
            return _replay(record)
        if _take_over_stale(record=record, now=timezone.now()):
            return record.pk
        raise IdempotencyInFlight(headers={"Retry-After": "1"})
    raise IdempotencyInFlight(headers={"Retry-After": "1"})


def _work_under_claim(
    *, record_id: int, work: Callable[[], tuple[int, dict[str, Any]]]
) -> IdempotentOutcome:
    """Run `work` and store its response on the claimed record in one transaction; if
    the work fails, delete the claim so that a retry can proceed."""
    try:
        with transaction.atomic():
            status, body = work()
            IdempotencyRecord.objects.filter(pk=record_id).update(
                status=Status.COMPLETED, response_status=status, response_body=body
            )
    except BaseException:
        IdempotencyRecord.objects.filter(pk=record_id, status=Status.IN_FLIGHT).delete()
        raise
    return IdempotentOutcome(status=status, body=body, replayed=False)


@dataclass(frozen=True)
class KeyedRequest:
    """One keyed item of a batch: its key, route scope and body fingerprint."""

    key: str
    scope: str
    request_hash: str


@dataclass(frozen=True)
class KeyClaim:
    """What a batch may do with one key: work under `record_id`, or answer `replay`, or
    answer `error` (reused with another body, or still in flight)."""

    record_id: int | None = None
    replay: IdempotentOutcome | None = None
    error: ApplicationError | None = None


def idempotency_claim_many(*, tenant: Tenant, requests: list[KeyedRequest]) -> dict[str, KeyClaim]:
    """`idempotent_execute`'s claim step for many keys at once: one committed
    ``INSERT … SELECT FROM unnest … ON CONFLICT DO NOTHING`` claims every free key, one
    SELECT reads the others, which answer exactly as on the single route. Keys must be
    distinct (the caller settles duplicates inside its batch)."""
    if not requests:
        return {}
    claims = _claim_free_keys(tenant=tenant, requests=requests)
    taken = [r for r in requests if r.key not in claims]
    if not taken:
        return claims
    records = {
        record.key: record
        for record in IdempotencyRecord.objects.filter(
            tenant=tenant, key__in=[r.key for r in taken]
        )
    }
    now = timezone.now()
    for request in taken:
        claims[request.key] = _claim_taken_key(
            request=request, record=records.get(request.key), now=now
        )
    return claims


def _claim_free_keys(*, tenant: Tenant, requests: list[KeyedRequest]) -> dict[str, KeyClaim]:
    """Claim every key of `requests` that no record holds, in one committed statement;
    the claims by key."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO idempotency_record (tenant_id, key, scope, request_hash, status,
                                            created_at)
            SELECT %s, k, s, h, %s, now() FROM unnest(%s::text[], %s::text[], %s::text[])
                AS t(k, s, h)
            ON CONFLICT (tenant_id, key) DO NOTHING
            RETURNING key, id
            """,
            [
                tenant.pk,
                Status.IN_FLIGHT,
                [r.key for r in requests],
                [r.scope for r in requests],
                [r.request_hash for r in requests],
            ],
        )
        return {key: KeyClaim(record_id=int(pk)) for key, pk in cursor.fetchall()}


def _claim_taken_key(
    *, request: KeyedRequest, record: IdempotencyRecord | None, now: datetime
) -> KeyClaim:
    """What a batch may do with a key a record already held when it was claimed."""
    if record is None:  # released between our insert and read: the retry will do
        return KeyClaim(error=IdempotencyInFlight(headers={"Retry-After": "1"}))
    if record.scope != request.scope or record.request_hash != request.request_hash:
        return KeyClaim(
            error=IdempotencyKeyReused(fields={"idempotency_key": ["Used with another body."]})
        )
    if record.status == Status.COMPLETED:
        return KeyClaim(replay=_replay(record))
    if _take_over_stale(record=record, now=now):
        return KeyClaim(record_id=record.pk)
    return KeyClaim(error=IdempotencyInFlight())


def idempotency_complete_many(*, responses: dict[int, tuple[int, dict[str, Any]]]) -> None:
    """Store the responses of claimed records (record id -> status, JSON-ready body) in
    one UPDATE. Call it inside the transaction of the work, as `idempotent_execute`
    does, so a response is stored if and only if its effects are."""
    if not responses:
        return
    rows = [{"id": pk, "status": status, "body": body} for pk, (status, body) in responses.items()]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE idempotency_record AS r
               SET status = %s, response_status = v.status, response_body = v.body
              FROM jsonb_to_recordset(%s::jsonb) AS v(id bigint, status int, body jsonb)
             WHERE r.id = v.id
            """,
            [Status.COMPLETED, json.dumps(rows)],
        )


def idempotency_release_many(*, record_ids: list[int]) -> None:
    """The work failed: free the claims for a retry (as `idempotent_execute` does)."""
    if record_ids:
        IdempotencyRecord.objects.filter(pk__in=record_ids, status=Status.IN_FLIGHT).delete()


def idempotency_purge(
    *, now: datetime | None = None, ttl_seconds: int | None = None, batch_size: int = 5000
) -> int:
    """Delete records older than the TTL, a batch per statement; returns how many."""
    now = now or timezone.now()
    ttl = settings.ENGRAM_IDEMPOTENCY_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    cutoff = now - timedelta(seconds=ttl)
    total = 0
    while True:
        ids = list(
            IdempotencyRecord.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)[
                :batch_size
            ]
        )
        if not ids:
            return total
        total += IdempotencyRecord.objects.filter(pk__in=ids).delete()[0]
