"""Importing a provider's usage or cost export for reconciliation: the whole file is read
and checked first, then written in one transaction, so a bad file imports nothing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from analytics_app.models import ProviderUsage
from analytics_app.provider_exports import (
    PROVIDER_OF,
    ExportError,
    ProviderDay,
    provider_export_read,
)
from sessions_app.errors import InvalidInput

if TYPE_CHECKING:
    from sessions_app.models import Tenant

TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens", "requests")


@dataclass(frozen=True)
class ImportResult:
    provider: str
    export_format: str
    rows: int
    first_day: date | None
    last_day: date | None


def _columns(rows: list[ProviderDay]) -> list[str]:
    """The columns this file carries: usage files the token ones, cost files the USD."""
    found = {
        name
        for row in rows
        for name in (*TOKEN_COLUMNS, "cost_usd")
        if getattr(row, name) is not None
    }
    return [name for name in (*TOKEN_COLUMNS, "cost_usd") if name in found]


@transaction.atomic
def provider_usage_import(*, tenant: Tenant, export_format: str, document: Any) -> ImportResult:
    """Replace, for every (day, model) of the file, the columns it carries. A day and
    model the file lists replaces what an earlier file of the same kind said of it."""
    try:
        rows = provider_export_read(export_format=export_format, document=document)
    except ExportError as exc:
        raise InvalidInput(
            "The export does not have the expected shape.", fields=exc.errors
        ) from exc
    provider = PROVIDER_OF[export_format]
    columns = _columns(rows)
    now = timezone.now()
    ProviderUsage.objects.bulk_create(
        [
            ProviderUsage(
                tenant=tenant,
                provider=provider,
                day=row.day,
                model=row.model,
                imported_at=now,
                **{name: getattr(row, name) for name in columns},
            )
            for row in rows
        ],
        update_conflicts=True,
        unique_fields=["tenant", "provider", "day", "model"],
        update_fields=[*columns, "imported_at"],
    )
    return ImportResult(
        provider=provider,
        export_format=export_format,
        rows=len(rows),
        first_day=rows[0].day if rows else None,
        last_day=rows[-1].day if rows else None,
    )
