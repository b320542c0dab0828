"""Model prices.

A step's cost is computed once, when it is recorded, from the price valid
at the step's time, and stored with the step: later price changes never rewrite history."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models


def _usd_per_million(**kwargs: object) -> models.DecimalField:
    options: dict[str, object] = {"max_digits": 14, "decimal_places": 6}
    options.update(kwargs)
    return models.DecimalField(**options)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept


class ModelPrice(models.Model):
    """USD per million tokens for one model from `valid_from` on. A later row for the same
    model supersedes it from its own `valid_from`.

    A step's model name is matched, case-insensitively, first against `model` and
    `aliases` exactly, then against `pattern` (a Python regular expression searched in
    the name); among pattern matches the longest `model` name wins, the most specific."""

    model = models.CharField(max_length=200, help_text="Canonical model name, lower case.")
    provider = models.CharField(max_length=64, blank=True, default="")
    aliases = ArrayField(
        models.CharField(max_length=200),
        default=list,
        blank=True,
        help_text="Other exact names of this model (lower case), e.g. dated snapshots.",
    )
    pattern = models.CharField(
        max_length=1000,
        blank=True,
        default="",
        help_text="Regular expression searched (case-insensitively) in a step's model name.",
    )
    input_per_million = _usd_per_million(help_text="USD per million uncached input tokens.")
    cached_input_per_million = _usd_per_million(
        null=True, blank=True, help_text="USD per million cache-read tokens; null: input price."
    )
    cache_write_per_million = _usd_per_million(
        null=True, blank=True, help_text="USD per million cache-write tokens; null: input price."
    )
    output_per_million = _usd_per_million(help_text="USD per million output tokens.")
    context_window = models.IntegerField(
        null=True,
        blank=True,
        help_text="The model's context window in tokens; compaction thresholds can be a share "
        "of it. Null: unknown.",
    )
    valid_from = models.DateTimeField(help_text="The price applies to steps from this time on.")
    source = models.CharField(
        max_length=200, help_text="Where the price comes from: 'genai-prices 0.2.3', 'admin'…"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "model_price"
        ordering = ["model", "-valid_from"]
        constraints = [
            models.UniqueConstraint(fields=["model", "valid_from"], name="model_price_unique"),
            models.CheckConstraint(
                condition=models.Q(input_per_million__gte=0) & models.Q(output_per_million__gte=0),
                name="model_price_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} from {self.valid_from:%Y-%m-%d}"
