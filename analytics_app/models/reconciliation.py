"""What providers say a tenant used, per UTC day and model, imported from their usage and
cost exports (`analytics_app.provider_exports`), to reconcile with Engram's own count."""

from __future__ import annotations

from django.db import models

from sessions_app.models import Tenant


class ProviderUsage(models.Model):
    """Token columns come from a usage export, `cost_usd` from a cost export; a column
    is null until a file that carries it is imported. Importing a file again replaces
    the columns it carries for its days."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=32)
    day = models.DateField()
    model = models.CharField(max_length=200, help_text="Without a release date, lower case.")
    input_tokens = models.BigIntegerField(null=True)
    output_tokens = models.BigIntegerField(null=True)
    cached_tokens = models.BigIntegerField(null=True)
    cache_write_tokens = models.BigIntegerField(null=True)
    requests = models.BigIntegerField(null=True)
    cost_usd = models.DecimalField(max_digits=20, decimal_places=10, null=True)
    imported_at = models.DateTimeField()

    class Meta:
        db_table = "provider_usage"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "provider", "day", "model"], name="provider_usage_one_per_day"
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.model} {self.day}"
