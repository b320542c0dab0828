"""Period budgets in the admin: created and changed through the same services as the API
(`spend_budget_create` / `_update`), so the admin cannot store a budget the API would
refuse; each row shows its current period's use and forecast."""

from __future__ import annotations

import threading
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone

from sessions_app.models import SpendBudget
from sessions_app.selectors.spend_budgets import BudgetFigures, budget_forecast, budgets_figures
from sessions_app.services.spend_budgets import (
    EDITABLE_FIELDS,
    spend_budget_create,
    spend_budget_errors,
    spend_budget_normalised,
    spend_budget_update,
)

_page = threading.local()


class SpendBudgetForm(forms.ModelForm):  # type: ignore[type-arg]  # generic only in the stubs
    class Meta:
        model = SpendBudget
        fields = ["tenant", *EDITABLE_FIELDS]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        values = spend_budget_normalised({name: data.get(name) for name in EDITABLE_FIELDS})
        for name, errors in spend_budget_errors(values).items():
            if name in self.fields and name not in self.errors:
                self.add_error(name, errors)
        return data


@admin.register(SpendBudget)
class SpendBudgetAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in django-stubs only
    form = SpendBudgetForm
    list_display = [
        "__str__", "tenant", "scope", "user_id", "agent_id", "model", "period", "time_zone",
        "limit_tokens", "limit_usd", "action", "use", "forecast",
    ]  # fmt: skip
    list_filter = ["scope", "period", "action"]
    search_fields = ["name", "user_id__exact", "agent_id__exact", "model__exact"]
    raw_id_fields = ["tenant"]

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        """The page's figures in one query, kept for this thread's request (the admin
        instance is shared by every request)."""
        changelist = super().get_changelist_instance(request)
        now = timezone.now()
        rows = list(changelist.result_list)
        _page.figures = {f.budget.pk: f for f in budgets_figures(budgets=rows, at=now)}
        _page.now = now
        return changelist

    def _of(self, budget: SpendBudget) -> BudgetFigures | None:
        return getattr(_page, "figures", {}).get(budget.pk)

    @admin.display(description="spent this period")
    def use(self, budget: SpendBudget) -> str:
        figures = self._of(budget)
        if figures is None:
            return "—"
        return f"{figures.spent_tokens} tokens, ${figures.spent_usd:.4f}"

    @admin.display(description="forecast at period end")
    def forecast(self, budget: SpendBudget) -> str:
        figures = self._of(budget)
        if figures is None:
            return "—"
        forecast = budget_forecast(figures, at=_page.now)
        if forecast.tokens is None:
            return "no period"
        return f"{forecast.tokens} tokens, ${forecast.usd:.4f}"

    def save_model(self, request: HttpRequest, obj: SpendBudget, form: Any, change: bool) -> None:
        fields = {name: form.cleaned_data.get(name) for name in EDITABLE_FIELDS}
        if change:  # the form has already set the values on `obj`: update the stored row
            stored = SpendBudget.objects.get(pk=obj.pk)
            saved = spend_budget_update(budget=stored, **fields)
        else:
            saved = spend_budget_create(tenant=form.cleaned_data["tenant"], **fields)
        obj.pk = saved.pk
