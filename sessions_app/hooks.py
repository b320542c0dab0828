"""The one way sessions_app tells the rest of Engram that something happened.

sessions_app imports no other local app. Work that must follow a write here
(embedding, memory extraction, compaction, rollups, runaway checks, pricing) is
attached by the other apps in their `AppConfig.ready()`:

- `turn_recorded` is sent *after the transaction commits*, with `turn_id`, `session_id`
  and `tenant_id`, and (from `turn_record`) `turn` and `session`: the instances as
  committed, so that a receiver can decide without a query whether it has work to
  enqueue (read them, never save them; other senders may omit them). Receivers enqueue
  Celery tasks; they must be quick and must not raise.
- `demo_loaded` is sent by `load_demo` with `tenant`, so other apps add their demo data.
- `user_erased` is sent by `services.erasure.user_erase` inside the erasure transaction,
  after our own rows are gone, with `tenant_id`, `user_id` and `session_ids` (the user's
  sessions, deleted), so other apps delete what they hold about the user atomically with
  ours. A receiver may answer a dict of row counts per kind; they join the erasure's
  answer. A receiver that raises rolls the whole erasure back.
- `step_pricer` is the function that prices a step when it is recorded; analytics_app
  registers the model-price table. Without one, steps are recorded unpriced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.dispatch import Signal

turn_recorded = Signal()
demo_loaded = Signal()
user_erased = Signal()


@dataclass(frozen=True)
class StepUsage:
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    at: datetime


StepPricer = Callable[[StepUsage], Decimal | None]
_step_pricer: StepPricer | None = None


def register_step_pricer(pricer: StepPricer) -> None:
    global _step_pricer
    _step_pricer = pricer


def price_step(usage: StepUsage) -> Decimal | None:
    """The step's cost in USD, or None when no price is known for its model."""
    if _step_pricer is None or not usage.model:
        return None
    return _step_pricer(usage)
