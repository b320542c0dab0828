"""The one way sessions_app tells the rest of Engram that something happened.

sessions_app imports no other local app. Work that must follow a write here
(embedding, memory extraction, compaction, rollups, runaway checks, pricing) is
attached by the other apps in their `AppConfig.ready()`:

- `turn_recorded` is sent *after the transaction commits*, with `turn_id`, `session_id`
  and `tenant_id`, and (from `turn_record`) `turn` and `session`: the instances as
  committed, so that a receiver can decide without a query whether it has work to
  enqueue (read them, never save them; other senders may omit them). The batch route
  sends it once per turn, in order, with `session_turns_follow=True` on every turn but
  the session's last in that batch, so a receiver that judges the session as a whole may
  wait for the last. Receivers enqueue Celery tasks; they must be quick and must not raise.
- `demo_loaded` is sent by `load_demo` with `tenant`, so other apps add their demo data.
- `user_erased` is sent by `services.erasure.user_erase` inside the erasure transaction,
  after our own rows are gone, with `tenant_id`, `user_id` and `session_ids` (the user's
  sessions, deleted), so other apps delete what they hold about the user atomically with
  ours. A receiver may answer a dict of row counts per kind; they join the erasure's
  answer. A receiver that raises rolls the whole erasure back.
- `step_pricer` is the function that prices a step when it is recorded; analytics_app
  registers the model-price table. Without one, steps are recorded unpriced.
- `register_session_admin_action` adds an admin action of another app (e.g. memory_app's
  "compact now") to the sessions list in the admin, which lists them after its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.dispatch import Signal

from sessions_app.usage import TokenCounts

turn_recorded = Signal()
demo_loaded = Signal()
user_erased = Signal()


@dataclass(frozen=True)
class StepUsage:
    """What a pricer needs: the model, the step's normalised token counts, and when it ran
    (prices change over time)."""

    model: str
    tokens: TokenCounts
    at: datetime


StepPricer = Callable[[StepUsage], Decimal | None]
_step_pricer: StepPricer | None = None


def register_step_pricer(pricer: StepPricer) -> None:
    global _step_pricer
    _step_pricer = pricer


_session_admin_actions: list[Callable[..., Any]] = []


def register_session_admin_action(action: Callable[..., Any]) -> None:
    """Offer `action` (a function decorated with `django.contrib.admin.action`) on the
    admin's sessions list. Registering the same function twice keeps one."""
    if action not in _session_admin_actions:
        _session_admin_actions.append(action)


def session_admin_actions() -> list[Callable[..., Any]]:
    """The actions other apps registered, in registration order."""
    return list(_session_admin_actions)


def price_step(usage: StepUsage) -> Decimal | None:
    """The step's cost in USD, or None when no price is known for its model."""
    if _step_pricer is None or not usage.model:
        return None
    return _step_pricer(usage)
