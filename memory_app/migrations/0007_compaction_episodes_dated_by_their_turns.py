"""A compacted span's episodic memory happened when its turns did: each one stored
without a time gets `occurred_at` = the latest `occurred_at` of its span's live turns
(the summary it was extracted from names the span). New ones get it when written
(`memories_extract_from_span`)."""

from typing import Any

from django.db import migrations
from django.db.models import Max

BATCH = 500


def date_episodes(apps: Any, schema_editor: Any) -> None:
    Memory = apps.get_model("memory_app", "Memory")
    ContextSummary = apps.get_model("memory_app", "ContextSummary")
    ChatTurn = apps.get_model("sessions_app", "ChatTurn")
    undated = Memory.objects.filter(
        source="system_generated", type="episodic", occurred_at__isnull=True
    ).exclude(structured__extracted_from__summary_id=None)
    for memory in undated.only("pk", "structured").iterator(chunk_size=BATCH):
        span = ContextSummary.objects.filter(
            pk=memory.structured["extracted_from"]["summary_id"]
        ).first()
        if span is None:
            continue
        end = ChatTurn.objects.filter(
            session_id=span.session_id,
            turn_number__range=(span.first_turn, span.last_turn),
            rolled_back=False,
        ).aggregate(end=Max("occurred_at"))["end"]
        if end is not None:
            Memory.objects.filter(pk=memory.pk).update(occurred_at=end)


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0006_tenant_lexicon_sums"),
        ("sessions_app", "0003_budget_spend_shards"),
    ]

    operations = [migrations.RunPython(date_episodes, migrations.RunPython.noop)]
