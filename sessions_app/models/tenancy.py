from __future__ import annotations

from django.db import models

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
