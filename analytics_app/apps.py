from __future__ import annotations

import logging
from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save

logger = logging.getLogger(__name__)


def on_turn_recorded(
    sender: Any,
    *,
    session_id: Any,
    session: Any = None,
    turn: Any = None,
    session_turns_follow: bool = False,
    **kwargs: Any,
) -> None:
    """Per-turn runaway check, enqueued: the hook runs in the request that recorded the
    turn, so it must be quick and must never fail it. When the sender passes the committed
    session and turn, a session that cannot be runaway yet costs no broker publish. A lost
    enqueue (broker down) is caught by the minute scan. In a batch, the session is
    checked once, at its last turn (`session_turns_follow` is False there)."""
    from analytics_app.services.runaway import Thresholds, runaway_ruled_out
    from analytics_app.tasks import runaway_check_session_task
    from sessions_app.services.outbox import task_publish

    if session_turns_follow:
        return
    try:
        if (
            session is not None
            and turn is not None
            and runaway_ruled_out(session=session, turn=turn, t=Thresholds.from_settings())
        ):
            return
        task_publish(runaway_check_session_task, str(session_id))
    except Exception:
        logger.exception("runaway check not enqueued for session %s", session_id)


def on_user_erased(sender: Any, *, tenant_id: int, user_id: str, **kwargs: Any) -> dict[str, int]:
    """Inside the erasure transaction: per-user rollups move to the erased users' rows
    and the alerts sent about the user's budgets (their payload names the user) go;
    answers their counts."""
    from analytics_app.services.budget_alerts import budget_alerts_erase_user
    from analytics_app.services.rollups import rollups_erase_user

    return {
        "user_spend_rollups": rollups_erase_user(tenant_id=tenant_id, user_id=user_id),
        "budget_alerts": budget_alerts_erase_user(tenant_id=tenant_id, user_id=user_id),
    }


class AnalyticsAppConfig(AppConfig):
    name = "analytics_app"
    verbose_name = "Spend analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        _connect_pricing(self)
        _connect_session_hooks()
        _register_rollup_gauges()
        _connect_erasure_and_retention()


def _connect_pricing(app: AppConfig) -> None:
    """Steps are priced, runaway turns judged and context windows looked up from this
    app's tables; the price cache clears on every price change."""
    from analytics_app.models import ModelPrice
    from analytics_app.pricing import (
        context_window_for_model,
        price_step_from_table,
        price_table_clear,
    )
    from analytics_app.services.prices import prices_seed_if_empty
    from sessions_app.hooks import register_context_window_lookup, register_step_pricer

    register_step_pricer(price_step_from_table)
    from analytics_app.services.runaway import runaway_sign_of_turn
    from sessions_app.hooks import register_turn_runaway_judge

    register_turn_runaway_judge(runaway_sign_of_turn)
    register_context_window_lookup(context_window_for_model)
    for signal in (post_save, post_delete):
        signal.connect(price_table_clear, sender=ModelPrice, dispatch_uid="price_table")
    # A fresh database (and every test database, also after a flush) gets prices.
    post_migrate.connect(prices_seed_if_empty, sender=app, dispatch_uid="prices_seed")


def _connect_session_hooks() -> None:
    """A recorded turn is checked for runaway; a crossed budget threshold sends alerts."""
    from analytics_app.services.budget_alerts import on_budget_threshold_crossed
    from sessions_app.hooks import budget_threshold_crossed, turn_recorded

    turn_recorded.connect(on_turn_recorded, dispatch_uid="analytics.runaway_per_turn")
    budget_threshold_crossed.connect(
        on_budget_threshold_crossed, dispatch_uid="analytics.budget_alerts"
    )


def _register_rollup_gauges() -> None:
    """The rollups' lag, as gauges on the metrics scrape."""
    from analytics_app.selectors.usage_rollups import rollup_lag
    from sessions_app.metrics import scrape_gauge

    scrape_gauge(
        "engram_rollup_lag_seconds",
        "Seconds since the newest step all spend rollups have counted (absent before "
        "the first fill).",
        lambda: rollup_lag().seconds,
    )
    scrape_gauge(
        "engram_rollup_steps_behind",
        "Steps recorded that the slowest spend rollup has not counted yet.",
        lambda: float(rollup_lag().steps_behind),
    )


def _connect_erasure_and_retention() -> None:
    """A user's erasure moves their rollups to the erased users' row and removes their
    alerts; raw steps are dropped by month only once every rollup has counted them."""
    from analytics_app.services.rollups import rollups_counted_through
    from sessions_app.hooks import register_step_retention_guard, user_erased

    user_erased.connect(on_user_erased, dispatch_uid="analytics.erase_user_rollups")
    register_step_retention_guard("analytics.rollups", rollups_counted_through)
