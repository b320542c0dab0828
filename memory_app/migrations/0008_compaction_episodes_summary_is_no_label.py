"""A compacted span's episodic memory stored with the span's label as its summary
("Turns 6-10 of a session with travel"): the label moves to `structured.span_label`
and the summary is emptied, so the context's line of the episode is the passage of its
content (the span's summary) that best answers the query, not a label without content.
New episodes are written so (`memories_extract_from_span`). The search vectors are
generated columns and the lexicon sums follow updates by trigger; the embedding is of
the content alone, so nothing else changes."""

import re
from typing import Any

from django.db import migrations

BATCH = 500
LABEL = re.compile(r"Turns \d+-\d+ of a session with .*", re.DOTALL)


def summary_to_span_label(apps: Any, schema_editor: Any) -> None:
    Memory = apps.get_model("memory_app", "Memory")
    labelled = Memory.objects.filter(
        source="system_generated", type="episodic", summary__startswith="Turns "
    ).exclude(structured__extracted_from__summary_id=None)
    for memory in labelled.only("pk", "summary", "structured").iterator(chunk_size=BATCH):
        if not LABEL.fullmatch(memory.summary):
            continue
        structured = {**memory.structured, "span_label": memory.summary}
        Memory.objects.filter(pk=memory.pk).update(summary="", structured=structured)


def span_label_to_summary(apps: Any, schema_editor: Any) -> None:
    Memory = apps.get_model("memory_app", "Memory")
    labelled = Memory.objects.filter(
        source="system_generated", type="episodic", summary="", structured__has_key="span_label"
    )
    for memory in labelled.only("pk", "structured").iterator(chunk_size=BATCH):
        structured = dict(memory.structured)
        label = structured.pop("span_label")
        Memory.objects.filter(pk=memory.pk).update(summary=label, structured=structured)


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0007_compaction_episodes_dated_by_their_turns")]

    operations = [migrations.RunPython(summary_to_span_label, span_label_to_summary)]
