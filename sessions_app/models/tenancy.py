from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from sessions_app.context_policy_limits import (
    KEEP_LAST_TURNS_MAX,
    MEMORY_LIMIT_MAX,
    PREDECESSOR_DEPTH_MAX,
)
from sessions_app.models.fields import money_field


class Tenant(models.Model):
    """An organisation using Engram. Every other row carries its tenant (the Citus
    distribution key, should we ever shard)."""

    name = models.CharField(max_length=100, unique=True)
    default_budget_tokens = models.BigIntegerField(
        null=True, blank=True, help_text="Budget in tokens given to new sessions."
    )
    default_budget_usd = money_field(
        null=True, blank=True, help_text="Budget in USD given to new sessions."
    )
    capture_prompts = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Keep each step's prompt and completion (size-capped) for its sessions, "
        "unless a session says otherwise.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "tenant"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """A bearer key. Only a SHA-256 digest is stored: keys are 256-bit random secrets, so
    a slow password hash would add latency to every request without adding safety."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "api_key"
        ordering = ["-created_at"]
        verbose_name = "API key"
        verbose_name_plural = "API keys"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.tenant})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class TenantContextPolicy(models.Model):
    """A named context policy of one tenant (seed 004's A/B toggles), managed through
    the API and the admin. The settings' ENGRAM_CONTEXT_POLICIES are every tenant's
    defaults; a tenant's policy of the same name replaces that one for the tenant. A
    value left null takes the `default` policy's (the settings'). Kept with the tenant
    (sessions_app) because sessions name their policy and are validated against it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="context_policies")
    name = models.CharField(
        max_length=64,
        validators=[RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")],
        help_text="Letters, digits, '_', '.', '-'; `default` is reserved.",
    )
    keep_last_turns = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(KEEP_LAST_TURNS_MAX)],
        help_text="Turns kept verbatim as the window; null: default's.",
    )
    memory_limit = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(MEMORY_LIMIT_MAX)],
        help_text="Long-term memories searched (K); null: default's.",
    )
    compression = models.BooleanField(
        null=True,
        blank=True,
        help_text="Summaries and milestones stand in for compacted turns; off: the "
        "compacted turns are offered verbatim. Null: on (the default's).",
    )
    predecessor_depth = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(PREDECESSOR_DEPTH_MAX)],
        help_text="Rotated sessions walked back for context; null: "
        "ENGRAM_CONTEXT_PREDECESSOR_DEPTH.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "tenant_context_policy"
        ordering = ["tenant", "name"]
        verbose_name = "context policy"
        verbose_name_plural = "context policies"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="tenant_context_policy_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.tenant})"

    def clean(self) -> None:
        if self.name == "default":
            raise ValidationError({"name": "`default` is the settings' policy."})
