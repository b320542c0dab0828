"""Forms of the cockpit pages: what they accept, validated at the edge."""

from __future__ import annotations

from typing import Any

from django import forms

from analytics_app.selectors.dashboards import tenant_choices
from memory_app.api.serializers import MAX_CONTENT_CHARS, MAX_QUERY_CHARS
from memory_app.api.serializers_context import MAX_BUDGET
from memory_app.models import MemoryScope, MemoryType


class ContextPreviewForm(forms.Form):
    """The same limits as `GET /sessions/{id}/context`."""

    query = forms.CharField(
        required=False, max_length=MAX_QUERY_CHARS, help_text="What the next call is about."
    )
    budget = forms.IntegerField(required=False, min_value=50, max_value=MAX_BUDGET)


class MemoryExplorerForm(forms.Form):
    tenant = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    q = forms.CharField(
        required=False,
        max_length=MAX_QUERY_CHARS,
        label="Search",
        help_text="By meaning and words (hybrid search), or a memory id.",
    )
    user_id = forms.CharField(required=False, max_length=255, label="User")
    agent_id = forms.CharField(required=False, max_length=255, label="Agent")
    type = forms.ChoiceField(required=False, choices=[("", "any"), *MemoryType.choices])
    scope = forms.ChoiceField(required=False, choices=[("", "any"), *MemoryScope.choices])
    tag = forms.CharField(required=False, max_length=64)
    pinned = forms.TypedChoiceField(
        required=False,
        choices=[("", "any"), ("yes", "pinned"), ("no", "not pinned")],
        coerce=lambda value: value == "yes",
        empty_value=None,
    )
    decay_below = forms.FloatField(
        required=False, min_value=0, max_value=1, label="Decay below", help_text="0..1"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tenant = self.fields["tenant"]
        assert isinstance(tenant, forms.TypedChoiceField)
        tenant.choices = tenant_choices()


class MemoryEditForm(forms.Form):
    content = forms.CharField(
        max_length=MAX_CONTENT_CHARS, widget=forms.Textarea(attrs={"rows": 4})
    )
    importance = forms.FloatField(min_value=0, max_value=1)
    confidence = forms.FloatField(min_value=0, max_value=1)
