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
- `turns_withdrawn` is sent *inside the transaction* that takes turns out of the
  conversation, with `tenant_id`, `session_ids` and `turn_numbers`: a rollback (the
  session's turns from n on; `turn_numbers` lists them) or the deletion of sessions
  (directly or by retention; `turn_numbers` is None: all of them). Receivers delete what
  they derived from those turns verbatim, atomically with the change; one that raises
  rolls it back.
- `sessions_ended` is sent *after the transaction commits*, with `tenant_id`,
  `session_ids` and `reason` (`rotated`, `expired`, `archived`, `imported`), when sessions
  stop taking turns, so other apps can write what outlives them (memory_app: an episode
  per session). Receivers enqueue tasks; they must be quick and must not raise.
- `budget_threshold_crossed` is sent after commit with `crossed`: the
  `ThresholdCrossed` items of period budgets whose spend a turn moved past an alert
  threshold (once per budget, period and threshold); analytics_app sends the webhook.
- `demo_loaded` is sent by `load_demo` with `tenant`, so other apps add their demo data.
- `user_erased` is sent by `services.erasure.user_erase` inside the erasure transaction,
  after our own rows are gone, with `tenant_id`, `user_id` and `session_ids` (the user's
  sessions, deleted), so other apps delete what they hold about the user atomically with
  ours. A receiver may answer a dict of row counts per kind; they join the erasure's
  answer. A receiver that raises rolls the whole erasure back. The user's steps stay as
  anonymous spend with user id `ERASED_USER_ID` (no session, no turn): a receiver that
  keeps spend per user moves the user's to that id rather than dropping it.
- `step_pricer` is the function that prices a step when it is recorded; analytics_app
  registers the model-price table. Without one, steps are recorded unpriced.
- `user_exporters` add sections to `GET /users/{id}/export` (the counterpart of
  erasure): each registered function takes (tenant_id, user_id) and answers a dict of
  JSON-ready sections (memory_app: memories, versions, relations, summaries).
- `context_window_lookup` tells a model's context window in tokens; analytics_app
  registers the same table (the sizes are kept with the prices). Without one, or for an
  unknown model, it answers None and only absolute thresholds apply.
- `step_retention_guards` say up to which step id the steps may be dropped: step
  retention (`services.step_partitions`) drops a month's partition only when every
  registered guard has finished with all of its steps (analytics_app: every spend
  rollup has counted them, so the history survives the raw rows).
- `turn_runaway_sign` says which runaway sign a turn's own steps already show (a retry
  loop, counting the same failures earlier in the window when the caller read them;
  tokens or dollars past the window's ceiling), judged in memory
  while the turn is drafted, so its answer can warn before the per-turn check (a task)
  flags the session; analytics_app registers its judge. Without one: None.
- `register_session_admin_action` adds an admin action of another app (e.g. memory_app's
  "compact now") to the sessions list in the admin, which lists them after its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.dispatch import Signal

from sessions_app.usage import TokenCounts

# The user id of an erased user's steps: empty, which no user id can be (one needs a
# visible character), so it never merges with a real user's spend.
ERASED_USER_ID = ""

turn_recorded = Signal()
turns_withdrawn = Signal()
sessions_ended = Signal()
demo_loaded = Signal()
user_erased = Signal()
budget_threshold_crossed = Signal()


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


ContextWindowLookup = Callable[[str], int | None]
_context_window_lookup: ContextWindowLookup | None = None


def register_context_window_lookup(lookup: ContextWindowLookup) -> None:
    global _context_window_lookup
    _context_window_lookup = lookup


def model_context_window(model: str) -> int | None:
    """The model's context window in tokens, or None when unknown."""
    if _context_window_lookup is None or not model:
        return None
    return _context_window_lookup(model)


UserExporter = Callable[[int, str], dict[str, Any]]
_user_exporters: dict[str, UserExporter] = {}


def register_user_exporter(name: str, exporter: UserExporter) -> None:
    """Register (or replace, by name: `ready()` may run twice) an export section maker."""
    _user_exporters[name] = exporter


def user_export_sections(tenant_id: int, user_id: str) -> dict[str, Any]:
    sections: dict[str, Any] = {}
    for name in sorted(_user_exporters):
        sections.update(_user_exporters[name](tenant_id, user_id))
    return sections


StepRetentionGuard = Callable[[], int]
_step_retention_guards: dict[str, StepRetentionGuard] = {}


def register_step_retention_guard(name: str, guard: StepRetentionGuard) -> None:
    """Register (or replace, by name) a function answering the highest step id its app
    is done with; steps above it are kept whatever their age."""
    _step_retention_guards[name] = guard


def step_retention_horizon() -> int | None:
    """The highest step id every guard is done with; None when no app asked to be
    waited for."""
    if not _step_retention_guards:
        return None
    return min(guard() for guard in _step_retention_guards.values())


def announce_sessions_ended(*, tenant_id: int, session_ids: list[Any], reason: str) -> None:
    """`sessions_ended`, after the caller's transaction commits (at once outside one)."""
    if not session_ids:
        return
    ids = list(session_ids)
    transaction.on_commit(
        lambda: sessions_ended.send(
            sender=None, tenant_id=tenant_id, session_ids=ids, reason=reason
        )
    )


# (steps, earlier failures by (step_type, model, error)) -> (reason, detail) or None
TurnRunawayJudge = Callable[
    [list[Any], dict[tuple[str, str, str], int]], tuple[str, dict[str, Any]] | None
]
_turn_runaway_judge: TurnRunawayJudge | None = None


def register_turn_runaway_judge(judge: TurnRunawayJudge) -> None:
    global _turn_runaway_judge
    _turn_runaway_judge = judge


def turn_runaway_sign(
    steps: list[Any], earlier_failures: dict[tuple[str, str, str], int] | None = None
) -> tuple[str, dict[str, Any]] | None:
    """(reason, detail) of the runaway sign the turn's priced steps show, counted with
    `earlier_failures` (how often each of their failures, by (step_type, model, error),
    failed earlier in the runaway window), or None (also without a registered judge)."""
    if _turn_runaway_judge is None or not steps:
        return None
    return _turn_runaway_judge(steps, earlier_failures or {})
