"""A model budget's model is stored as its `model_key` (without a gateway's routing
prefix or a release date), the form each step's model is compared in: a budget stored
as `openai/gpt-4o-mini` or `gpt-4o-mini-2024-07-18` becomes the gpt-4o-mini budget, and
from now on counts the steps of gpt-4o-mini under any known route or snapshot. Its spend
so far stays as counted. Reversing keeps the keys: the spelling given at creation is not
kept anywhere."""

from typing import Any

from django.db import migrations

from sessions_app.model_names import model_key


def key_budget_models(apps: Any, schema_editor: Any) -> None:
    SpendBudget = apps.get_model("sessions_app", "SpendBudget")
    for budget in SpendBudget.objects.exclude(model="").only("pk", "model"):
        key = model_key(budget.model)
        if key != budget.model:
            SpendBudget.objects.filter(pk=budget.pk).update(model=key)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0003_budget_spend_shards"),
    ]

    operations = [migrations.RunPython(key_budget_models, migrations.RunPython.noop)]
