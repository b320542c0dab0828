"""A session's workspace: the items it fetched (components) and its cart (selections)."""

from __future__ import annotations

from django.db import models

from sessions_app.models.sessions import ChatSession
from sessions_app.models.tenancy import Tenant


class SessionComponent(models.Model):
    """An item the agent fetched in this session (a product, a document, a ticket)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="components")
    mpn = models.CharField(max_length=255)
    component_type = models.CharField(max_length=100, blank=True, default="")
    name = models.CharField(max_length=500, blank=True, default="")
    summary = models.TextField(blank=True, default="")
    full_data = models.JSONField(default=dict, blank=True)
    position = models.IntegerField(
        null=True, blank=True, help_text="1-based position in the last results; null if not there."
    )
    fetched_at = models.DateTimeField()

    class Meta:
        db_table = "session_component"
        ordering = ["session", "position", "-fetched_at"]
        constraints = [
            models.UniqueConstraint(fields=["session", "mpn"], name="component_mpn_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.mpn} {self.name}"


class SessionSelection(models.Model):
    """The cart: ordered, contiguous positions 1..n, one row per MPN."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="selections")
    mpn = models.CharField(max_length=255)
    position = models.IntegerField()
    quantity = models.IntegerField(default=1)
    note = models.TextField(blank=True, default="")
    selected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "session_selection"
        ordering = ["session", "position"]
        constraints = [
            models.UniqueConstraint(fields=["session", "mpn"], name="selection_mpn_unique"),
            models.UniqueConstraint(
                fields=["session", "position"],
                name="selection_position_unique",
                deferrable=models.Deferrable.DEFERRED,
            ),
            models.CheckConstraint(condition=models.Q(quantity__gte=1), name="selection_qty_pos"),
        ]

    def __str__(self) -> str:
        return f"{self.position}. {self.mpn} x{self.quantity}"
