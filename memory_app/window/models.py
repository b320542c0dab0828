"""The short-term window's own table: summaries and milestone notes of compacted spans.

Part of the `memory_app.window` package, which holds everything of the short-term
window; `memory_app/models.py` re-exports it so Django registers it with the app."""

from __future__ import annotations

from django.db import models

from sessions_app.models import ChatSession, Tenant
from sessions_app.models.fields import money_field


class SummaryMethod(models.TextChoices):
    EXTRACTIVE = "extractive", "extractive"
    LLM = "llm", "llm"


class SummaryKind(models.TextChoices):
    SPAN = "span", "span"  # the summary of one compacted span of turns
    CONDENSED = "condensed", "condensed"  # several older summaries merged into one


class ContextSummary(models.Model):
    """A summary and the milestone facts of turns `first_turn..last_turn` of a session.

    The turns themselves stay in `chat_turn` (flagged `compacted`), never deleted. A
    condensed summary supersedes the older summaries it merged; those are kept, pointing
    at it, so the record of what was said stays auditable. `(session, first_turn,
    last_turn)` is unique: a re-run or a retried task can never store a span twice."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(
        ChatSession, on_delete=models.CASCADE, related_name="context_summaries"
    )
    first_turn = models.IntegerField(help_text="Number of the first turn covered.")
    last_turn = models.IntegerField(help_text="Number of the last turn covered.")
    turn_count = models.IntegerField(help_text="Turns summarised (rolled-back ones excluded).")
    kind = models.CharField(max_length=16, choices=SummaryKind.choices, default=SummaryKind.SPAN)
    summary = models.TextField()
    milestones = models.JSONField(
        default=dict,
        blank=True,
        help_text="Items/mpns, selections, constraints, ids, decisions, commitments, "
        "open questions, each with the turn it came from.",
    )
    method = models.CharField(max_length=16, choices=SummaryMethod.choices)
    tokens = models.IntegerField(help_text="o200k_base tokens of `summary`.")
    source_tokens = models.IntegerField(
        default=0, help_text="Tokens of the text it replaces (turns or summaries)."
    )
    last_turn_at = models.DateTimeField(help_text="When the last covered turn was recorded.")
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="merged",
        help_text="The condensed summary that replaced this one in the context.",
    )
    # The service's own LLM call, when the summary is abstractive: its cost is visible.
    llm_model = models.CharField(max_length=200, blank=True, default="")
    llm_input_tokens = models.IntegerField(default=0)
    llm_output_tokens = models.IntegerField(default=0)
    llm_cost_usd = money_field(null=True, blank=True, help_text="Null when unpriced.")
    llm_duration_ms = models.IntegerField(default=0)
    llm_error = models.TextField(
        blank=True, default="", help_text="Why the LLM was not used although configured."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "context_summary"
        ordering = ["session", "first_turn", "last_turn"]
        verbose_name = "context summary"
        verbose_name_plural = "context summaries"
        constraints = [
            models.UniqueConstraint(
                fields=["session", "first_turn", "last_turn"], name="summary_span_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(first_turn__lte=models.F("last_turn")),
                name="summary_span_ordered",
            ),
        ]
        indexes = [
            models.Index(fields=["session", "superseded_by"], name="summary_session_active"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} turns {self.first_turn}-{self.last_turn} of {self.session_id}"

    @property
    def active(self) -> bool:
        return self.superseded_by_id is None


__all__ = ["ContextSummary", "SummaryKind", "SummaryMethod"]
