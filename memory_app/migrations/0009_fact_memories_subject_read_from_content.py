"""A fact, preference or profile memory stored without a subject gets the one the rules
read from its content (`supersession.rule_subject`, what a memory written now is stored
with), so that a newer statement of its occupation, diet, home or budget supersedes it
and a sentence saying it has ended ends it. Conversation turns, episodes and memories the
rules read no subject from stay blank; a subject already stored is kept. Backwards:
nothing to undo (a blank subject and a read one are both valid states).

Batched by primary key, each batch committed by itself (the migration is not atomic):
on a large table it reads BATCH rows at a time and rewrites only those that gain a
subject, so it holds no long transaction and, if interrupted, a re-run resumes with the
rows still blank."""

from typing import Any

from django.db import migrations, transaction

from memory_app.services.supersession import STATING_TYPES, VERBATIM_SOURCES, rule_subject

BATCH = 1000


def backfill_subjects(apps: Any, schema_editor: Any) -> int:
    """Give each blank-subject memory the subject the rules read; returns how many."""
    Memory = apps.get_model("memory_app", "Memory")
    blank = (
        Memory.objects.filter(subject="", type__in=[str(t) for t in STATING_TYPES])
        .exclude(source__in=[str(s) for s in VERBATIM_SOURCES])
        .only("pk", "type", "source", "content")
        .order_by("pk")
    )
    written, last = 0, None
    while True:
        rows = list((blank if last is None else blank.filter(pk__gt=last))[:BATCH])
        if not rows:
            return written
        last = rows[-1].pk
        by_subject: dict[str, list[Any]] = {}
        for row in rows:
            subject = rule_subject(memory_type=row.type, source=row.source, content=row.content)
            if subject:
                by_subject.setdefault(subject, []).append(row.pk)
        with transaction.atomic():  # a subject set meanwhile (PATCH) is not overwritten
            for subject, pks in by_subject.items():
                written += Memory.objects.filter(pk__in=pks, subject="").update(subject=subject)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("memory_app", "0008_compaction_episodes_summary_is_no_label")]

    operations = [migrations.RunPython(backfill_subjects, migrations.RunPython.noop)]
