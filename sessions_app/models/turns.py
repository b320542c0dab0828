from __future__ import annotations

from django.db import models
from django.utils import timezone

from sessions_app.models.fields import money_field, token_field
from sessions_app.models.sessions import ChatSession
from sessions_app.models.tenancy import Tenant


class TurnKind(models.TextChoices):
    EXCHANGE = "exchange", "exchange"
    STATE_CHANGE = "state_change", "state change"


class ChatTurn(models.Model):
    """One exchange: the user's message, the agent's answer, and what it cost. A change
    of the session's state made outside a turn (PATCH) is logged as a turn too, of kind
    `state_change`, so that it can be audited and rolled back like any other."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="turns")
    turn_number = models.IntegerField()
    kind = models.CharField(
        max_length=16, choices=TurnKind.choices, default=TurnKind.EXCHANGE, db_default="exchange"
    )
    changed_by = models.CharField(
        max_length=255,
        blank=True,
        default="",
        db_default="",
        help_text="Who made a state change (an agent, an operator); blank for exchanges.",
    )
    user_message = models.TextField(blank=True, default="")
    assistant_response = models.TextField(blank=True, default="")
    intent_data = models.JSONField(default=dict, blank=True)
    reasoning = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    state_before = models.JSONField(default=dict, blank=True)
    state_after = models.JSONField(default=dict, blank=True)
    context_after = models.JSONField(
        default=dict,
        blank=True,
        help_text="Focus, last results, query and cart when this turn was recorded: what "
        "rolling back the next turn restores.",
    )

    input_tokens = token_field()
    output_tokens = token_field()
    cached_tokens = token_field()
    reasoning_tokens = token_field()
    cost_usd = money_field(default=0)
    call_count = models.IntegerField(default=0)
    error_count = models.IntegerField(default=0)
    unpriced_calls = models.IntegerField(default=0)
    duration_ms = models.IntegerField(default=0)

    idempotency_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 - null: none sent
    compacted = models.BooleanField(default=False)
    rolled_back = models.BooleanField(default=False)
    rolled_back_at = models.DateTimeField(null=True, blank=True)
    over_limit = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="Which per-turn ceiling the steps passed (`tokens`, `cost`, both); blank: none.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    occurred_at = models.DateTimeField(
        default=timezone.now,
        help_text="When the exchange happened: the caller's time for imported history, "
        "else when it was recorded. Recall and search order and label turns by it.",
    )

    class Meta:
        db_table = "chat_turn"
        ordering = ["session", "turn_number"]
        constraints = [
            models.UniqueConstraint(fields=["session", "turn_number"], name="turn_number_unique"),
        ]
        indexes = [
            models.Index(fields=["tenant", "-created_at"], name="turn_tenant_created"),
        ]

    def __str__(self) -> str:
        return f"turn {self.turn_number} of {self.session_id}"


class TurnStep(models.Model):
    """One LLM (or tool) call inside a turn. Session, user and agent are copied here at
    write time: they never change, and spend rollups over millions of steps then need
    no join.

    The table is partitioned by month on `created_at` (migration 0002; partitions are
    made ahead and dropped by `services.step_partitions`). In the database the primary
    key is (id, created_at), since PostgreSQL wants the partition key in every unique
    index; Django keeps `id` as the primary key because `id` is unique (one sequence
    hands it out) and a `CompositePrimaryKey` would make `pk` a tuple everywhere and,
    in Django 5.2, keep the model out of the admin. For the same reason (turn,
    step_order) is an index, not a constraint: the services number a turn's steps
    under the session's row lock."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # Null only on the steps of an erased user (services.erasure): their spend stays,
    # without the turn, session and user it belonged to.
    turn = models.ForeignKey(ChatTurn, on_delete=models.CASCADE, null=True, related_name="steps")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, null=True, related_name="+")
    user_id = models.CharField(max_length=255, help_text='"" on the steps of an erased user.')
    agent_id = models.CharField(max_length=255)
    step_order = models.IntegerField()
    step_type = models.CharField(max_length=64)
    model = models.CharField(max_length=200, blank=True, default="")
    input_tokens = token_field(help_text="All input tokens, cached ones included.")
    output_tokens = token_field(help_text="All output tokens, reasoning ones included.")
    cached_tokens = token_field(help_text="Input tokens read from the provider's cache.")
    cache_write_tokens = token_field(help_text="Input tokens written to the provider's cache.")
    reasoning_tokens = token_field(help_text="Output tokens spent on hidden reasoning.")
    cost_usd = money_field(null=True, blank=True, help_text="Null when the model has no price.")
    price_missing = models.BooleanField(default=False)
    duration_ms = models.IntegerField(default=0)
    success = models.BooleanField(default=True)
    error = models.TextField(null=True, blank=True)  # noqa: DJ001 - the API says error: null
    usage_raw = models.JSONField(null=True, blank=True, help_text="The provider's usage object.")
    prompt = models.JSONField(
        null=True,
        blank=True,
        help_text="The chat messages sent, when prompt capture is on (size-capped).",
    )
    completion = models.TextField(
        blank=True,
        default="",
        db_default="",
        help_text="The model's answer, when prompt capture is on (size-capped).",
    )
    tool_output = models.TextField(
        blank=True,
        default="",
        db_default="",
        help_text="A tool call's output, short or summarised: a context candidate (seed 004).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "turn_step"
        ordering = ["turn", "step_order"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(input_tokens__gte=0)
                & models.Q(output_tokens__gte=0)
                & models.Q(cached_tokens__gte=0)
                & models.Q(cache_write_tokens__gte=0)
                & models.Q(reasoning_tokens__gte=0),
                name="step_tokens_non_negative",
            ),
        ]
        indexes = [
            models.Index(fields=["turn", "step_order"], name="step_turn_order"),
            models.Index(fields=["tenant", "created_at"], name="step_tenant_created"),
            models.Index(fields=["created_at", "id"], name="step_created_id"),
            models.Index(fields=["session", "created_at"], name="step_session_created"),
        ]

    def __str__(self) -> str:
        return f"{self.step_type} #{self.step_order} ({self.model})"

    @property
    def turn_number(self) -> int:
        """The number of the step's turn. Steps read by their session have a turn; only an
        erased user's steps, which have no session either, have none."""
        if self.turn is None:
            raise ValueError(f"step {self.pk} belongs to no turn (its user was erased)")
        return self.turn.turn_number
