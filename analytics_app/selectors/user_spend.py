"""One user's spend, for the cockpit's user page: daily totals from the user rollup
(one row a day), and a breakdown by model over the user's newest sessions (the rollups
do not key models by user; those sessions' steps are read through the
`step_session_created` index, so the cost follows the user, not the table)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, Sum

from analytics_app.models import UserSpendRollup
from sessions_app.selectors.turns import steps_of_sessions


def user_spend_over_time(
    *, tenant_id: int, user_id: str, start: datetime, end: datetime
) -> list[dict[str, Any]]:
    """Daily rows [start, end), oldest first, with the rollup's pk for the admin link."""
    rows = (
        UserSpendRollup.objects.filter(
            tenant_id=tenant_id, user_id=user_id, bucket_start__gte=start, bucket_start__lt=end
        )
        .order_by("bucket_start")
        .values(
            "pk", "bucket_start", "input_tokens", "output_tokens", "cost_usd", "calls", "errors"
        )
    )
    return [
        {**row, "tokens": (row["input_tokens"] or 0) + (row["output_tokens"] or 0)} for row in rows
    ]


def spend_by_model(*, session_ids: Sequence[uuid.UUID], limit: int = 15) -> list[dict[str, Any]]:
    """Tokens, cost, calls and errors by model over these sessions' steps, costliest first."""
    if not session_ids:
        return []
    rows = (
        steps_of_sessions(session_ids=session_ids)
        .values("model")
        .annotate(
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cost_usd=Sum("cost_usd"),
            calls=Count("pk"),
            errors=Count("pk", filter=Q(success=False)),
        )
        .order_by("-cost_usd", "-calls")[:limit]
    )
    return [
        {
            **row,
            "key": row["model"] or "(none)",
            "tokens": (row["input_tokens"] or 0) + (row["output_tokens"] or 0),
        }
        for row in rows
    ]
