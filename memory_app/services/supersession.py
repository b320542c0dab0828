"""The latest fact wins: validity intervals and supersession between memories.

A fact, preference or profile memory that states a subject of its user (`subject`,
memory_app.subjects) with another value than a current memory of the same user (any
agent, any of those three types) contradicts it. Of the two, the one whose fact started
later (memory_app.selectors.validity.validity_start: valid_from, else occurred_at, else
created_at) supersedes the
other: the older gets `superseded_by` = the newer and ends (`valid_to`) where the newer
starts; the newer starts (`valid_from`) there too, so that a search at a past instant
(`valid_at`) finds the older and not the newer. A fact told late, that started before
the current one, goes into the chain by valid time: the next one to start supersedes it,
and the one before it, if any, ends where it starts. Deleting a memory relinks the chain
around it (`supersession_relink`). The exact text of a superseded memory said again
after its chain's current memory began is the user changing their mind back: a new
memory that supersedes that current one (`changed_back_from`), the old keeping the
interval it held. A `supersedes` edge from the newer to the older (reason
`contradicted`) shows it in the relations, and the edges follow the chain: a fact told
late between two takes the later one's edge to the earlier, and a relink joins the two
it leaves adjacent, with the reason of the deleted memory's edge. The older stays
stored and searchable: a question about the current state ranks it below the newer
(memory_app.selectors.currency), any other finds it with its dates.

Conversation turns and session episodes are what was said, not what holds: they state
no subject. A sentence that says a value has ended ("I'm not vegetarian anymore", "I quit
nursing": memory_app.subject_endings) ends the user's current memories of a subject whose
value it names (`valid_to`), with no successor. A caller's own `supersedes` edge (POST
/memories `relations`, or POST …/relations) supersedes its target the same way.

Not a version: superseding changes no text, so it writes no history row (like pinning).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from memory_app.models import Memory, MemoryRelation, MemorySource, MemoryType, RelationType
from memory_app.selectors.memories import current_twin
from memory_app.selectors.validity import validity_start
from memory_app.subject_endings import Ceased
from memory_app.subjects import Statement, normalise_subject, statement_of, value_of
from sessions_app.errors import Conflict, InvalidInput
from sessions_app.locks import advisory_xact_lock

if TYPE_CHECKING:
    from memory_app.services.memory_drafts import MemoryDraft

STATING_TYPES = (MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.PROFILE)
VERBATIM_SOURCES = (MemorySource.CONVERSATION_TURN, MemorySource.SESSION_EPISODE)
VALIDITY_FIELDS = ("valid_from", "valid_to")
CONTRADICTED = "contradicted"  # the reason of the edge a contradiction writes


def draft_statement(draft: MemoryDraft) -> Statement | None:
    """The subject and value a draft states, or None when it states none (another type, a
    verbatim source, or no rule reads one). A subject the caller names wins over the
    rules'."""
    if not may_state(memory_type=draft.type, source=draft.source):
        return None
    if draft.subject.strip():
        subject = normalise_subject(draft.subject)
        return Statement(subject, value_of(draft.content, subject))
    return statement_of(draft.content)


def may_state(*, memory_type: str, source: str) -> bool:
    """Whether a memory of this type and source can state a subject at all."""
    return memory_type in STATING_TYPES and source not in VERBATIM_SOURCES


def rule_subject(*, memory_type: str, source: str, content: str) -> str:
    """The subject the rules read from a memory's text, as a memory written now without a
    caller's subject is stored with (`subject_of`); blank when it states none. Also what
    the backfill of memories stored before they had a subject reads (migration 0009)."""
    statement = statement_of(content) if may_state(memory_type=memory_type, source=source) else None
    return statement.subject if statement is not None else ""


def subject_of(draft: MemoryDraft) -> str:
    """The subject a new memory is stored with: `draft_statement`'s, or blank."""
    statement = draft_statement(draft)
    return statement.subject if statement is not None else ""


def lock_subject(tenant_id: int, user_id: str, statement: Statement | None) -> None:
    """Serialise the adds of one user's subject across types (the add's own lock is per
    type), so that two contradicting adds at once both see each other."""
    if statement is not None:
        advisory_xact_lock(f"memory-subject:{tenant_id}:{user_id}:{statement.subject}")


def states_other_value(memory: Memory, statement: Statement | None) -> bool:
    """Whether `memory` gives the draft's subject another value: then the two are two
    facts, not one stated twice, and must not be merged."""
    if statement is None or memory.subject != statement.subject:
        return False
    return value_of(memory.content, statement.subject) != statement.value


def changed_back_from(memory: Memory, *, digest: str, start: datetime) -> Memory | None:
    """For a draft whose text (`digest`) is stored as `memory`, said as of `start`: the
    current memory at the head of `memory`'s chain when `memory` is superseded and that
    head says something else and began before `start`. Then the user changed their mind
    back, and the draft is a new memory that supersedes the head; `memory` keeps the
    interval it held. None: the draft is `memory` told again (a duplicate)."""
    head, seen = memory, {memory.pk}
    while head.superseded_by_id is not None and head.superseded_by_id not in seen:
        seen.add(head.superseded_by_id)
        head = Memory.objects.select_for_update().get(pk=head.superseded_by_id)
    if head.pk == memory.pk or head.content_hash == digest or validity_start(head) >= start:
        return None
    return head


def supersede_contradicted(
    memory: Memory, statement: Statement | None, *, written_after: Iterable[Any] = ()
) -> list[Memory]:
    """Resolve the contradictions of a memory just written with the user's current
    memories of its subject (module docstring). Returns the memories superseded.
    `written_after`: ids of rows of the same batch that come after it (inserted at once,
    resolved in order), which it must not see yet."""
    if statement is None:
        return []
    current = Memory.objects.select_for_update().filter(
        tenant_id=memory.tenant_id,
        user_id=memory.user_id,
        subject=statement.subject,
        superseded_by__isnull=True,
        type__in=STATING_TYPES,
    )
    rivals = [
        row
        for row in current.exclude(pk__in=[memory.pk, *written_after]).order_by("created_at", "id")
        if value_of(row.content, statement.subject) != statement.value
    ]
    start = validity_start(memory)
    older = [row for row in rivals if validity_start(row) <= start]
    later = [row for row in rivals if validity_start(row) > start]
    for row in older:
        memory_supersede(older=row, newer=memory)
    if not later:
        return older
    # Told late about an earlier fact: it goes into the chain where its start puts it.
    chain = Memory.objects.select_for_update().filter(
        tenant_id=memory.tenant_id,
        user_id=memory.user_id,
        subject=statement.subject,
        type__in=STATING_TYPES,
    )
    chain = chain.exclude(pk__in=[memory.pk, *written_after])
    return [*older, *_insert_into_chain(memory, statement, chain)]


def _insert_into_chain(
    memory: Memory, statement: Statement, chain: QuerySet[Memory]
) -> list[Memory]:
    """Put `memory` into its subject's chain (`chain`: the subject's other memories) by
    valid time: the next one to start after it supersedes it, and the one that led to
    that next one and started before it ends where it starts and points at it; the
    edges follow (the next one's contradiction edge to that one goes). Returns the
    memories superseded."""
    start = validity_start(memory)
    rows = [
        row
        for row in chain.order_by("created_at", "id")
        if value_of(row.content, statement.subject) != statement.value
    ]
    following = [row for row in rows if validity_start(row) > start]
    if not following:
        return []
    after = min(following, key=validity_start)
    previous = [
        row for row in rows if row.superseded_by_id == after.pk and validity_start(row) < start
    ]
    memory_supersede(older=memory, newer=after)
    for row in previous:
        memory_supersede(older=row, newer=memory)
    # `after` no longer supersedes them: its contradiction edges to them go (a caller's
    # own edge stays: it is the caller's word, not the chain's).
    MemoryRelation.objects.filter(
        source=after,
        target__in=previous,
        type=RelationType.SUPERSEDES,
        target_version=None,
        reason=CONTRADICTED,
    ).delete()
    return [memory, *previous]


def memories_end_ceased(
    *, tenant_id: int, user_id: str, ceased: list[Ceased], at: datetime
) -> list[Memory]:
    """End (`valid_to` = `at`) the user's current memories of a subject, begun before
    `at`, that something the user said has ended ends (`Ceased.ends`: its value shares a
    stem with the value ended, or its subject was ended whatever its value). Returns the
    memories ended."""
    if not ceased:
        return []
    current = Memory.objects.select_for_update().filter(
        tenant_id=tenant_id,
        user_id=user_id,
        superseded_by__isnull=True,
        type__in=STATING_TYPES,
        valid_to__isnull=True,
    )
    ended = []
    for row in current.exclude(subject="").order_by("created_at", "id"):
        value = value_of(row.content, row.subject)
        if validity_start(row) < at and any(c.ends(row.subject, value) for c in ceased):
            row.valid_to = at
            ended.append(row)
    Memory.objects.filter(pk__in=[row.pk for row in ended]).update(valid_to=at)
    return ended


def memory_supersede(*, older: Memory, newer: Memory, reason: str = CONTRADICTED) -> None:
    """`newer` replaces `older`: the older ends where the newer starts, points at it and
    gets a `supersedes` edge from it. An end or a start already given and consistent is
    kept; one that would make an empty interval is not written."""
    if newer.superseded_by_id == older.pk:  # never a cycle
        return
    start = validity_start(newer)
    older.superseded_by = newer
    fields = ["superseded_by"]
    if (older.valid_to is None or older.valid_to > start) and (
        older.valid_from is None or older.valid_from < start
    ):
        older.valid_to = start
        fields.append("valid_to")
    Memory.objects.filter(pk=older.pk).update(**{name: getattr(older, name) for name in fields})
    if newer.valid_from is None and (newer.valid_to is None or newer.valid_to > start):
        newer.valid_from = start
        Memory.objects.filter(pk=newer.pk).update(valid_from=start)
    _supersedes_edge(newer, older.pk, reason=reason)


def _supersedes_edge(newer: Memory, older_id: Any, *, reason: str) -> None:
    MemoryRelation.objects.get_or_create(
        tenant_id=newer.tenant_id,
        source_id=newer.pk,
        target_id=older_id,
        type=RelationType.SUPERSEDES,
        target_version=None,
        defaults={"reason": reason},
    )


def supersede_related(memory: Memory, relations: Iterable[tuple[str, Any]]) -> None:
    """A caller's `supersedes` edges from `memory`: each target is superseded by it."""
    targets = [target for kind, target in relations if kind == RelationType.SUPERSEDES]
    if not targets:
        return
    for older in Memory.objects.select_for_update().filter(
        tenant_id=memory.tenant_id, pk__in=targets
    ):
        if older.pk != memory.pk:
            memory_supersede(older=older, newer=memory, reason="")


def unsupersede(edge: MemoryRelation) -> None:
    """After a `supersedes` edge between two memories is removed: its target, if the
    edge's source is what superseded it, is current again; the end that superseding
    gave it (the source's start) goes too, an end given otherwise stays."""
    if edge.type != RelationType.SUPERSEDES or edge.target_version is not None:
        return
    older = Memory.objects.filter(pk=edge.target_id, superseded_by_id=edge.source_id).first()
    if older is None:
        return
    _refuse_second_current_text(older)
    newer = Memory.objects.get(pk=edge.source_id)
    changes: dict[str, Any] = {"superseded_by": None}
    if older.valid_to is not None and older.valid_to == validity_start(newer):
        changes["valid_to"] = None
    Memory.objects.filter(pk=older.pk).update(**changes)


def _refuse_second_current_text(older: Memory) -> None:
    """Conflict if `older`, made current again, would stand beside a current memory of
    the same user, agent and type with its text (a changed mind restated it): one text
    is current once (memory_current_content_unique)."""
    twin = current_twin(older)
    if twin is not None:
        raise Conflict(
            f"Memory {older.pk} would be current again beside memory {twin.pk}, which "
            "says the same; delete one of them instead."
        )


def supersession_relink(deleted: Memory) -> None:
    """Before `deleted` is removed: the memories it superseded take its place in the
    chain, its successor (`superseded_by`) and its end (`valid_to`); so if it was current,
    they are current again, and otherwise its successor supersedes them by a `supersedes`
    edge with the reason of the deleted memory's edge to each (`contradicted` when it had
    none), as the successor takes its place; its own edges go with it. An end of theirs
    before it began was given otherwise and stays."""
    deleted = Memory.objects.select_for_update().get(pk=deleted.pk)
    start = validity_start(deleted)
    successor = deleted.superseded_by
    reasons = dict(
        MemoryRelation.objects.filter(
            source=deleted, type=RelationType.SUPERSEDES, target_version=None
        ).values_list("target_id", "reason")
    )
    for older in Memory.objects.select_for_update().filter(superseded_by=deleted):
        changes: dict[str, Any] = {"superseded_by": deleted.superseded_by_id}
        if older.valid_to is None or older.valid_to >= start:
            changes["valid_to"] = deleted.valid_to
        Memory.objects.filter(pk=older.pk).update(**changes)
        if successor is not None:
            _supersedes_edge(successor, older.pk, reason=reasons.get(older.pk, CONTRADICTED))


def validity_changes(memory: Memory, changes: dict[str, Any]) -> dict[str, Any]:
    """Take `valid_from` / `valid_to` out of a PATCH's changes, checked against the
    memory's other end: an interval must end after it starts (400 on `valid_to`)."""
    validity = {name: changes.pop(name) for name in VALIDITY_FIELDS if name in changes}
    start = validity.get("valid_from", memory.valid_from)
    end = validity.get("valid_to", memory.valid_to)
    if start is not None and end is not None and end <= start:
        raise InvalidInput(
            "A validity interval must end after it starts.",
            fields={"valid_to": [f"Must be after valid_from ({start.isoformat()})."]},
        )
    return validity


def memory_set_validity(*, memory: Memory, validity: dict[str, Any]) -> Memory:
    """Set a memory's validity interval (checked by `validity_changes`). Not a version:
    the text is unchanged."""
    if validity:
        Memory.objects.filter(pk=memory.pk).update(**validity)
        for name, value in validity.items():
            setattr(memory, name, value)
    return memory
