"""Document frequencies of public memories (`memory_public_term_stat`, migration 0256):
what the lexical step's public branch reads is counted apart, so that a tenant-wide
search chooses that branch's candidate terms by the public memories that hold them, not
by the tenant's sum over every user's private memories.

The counts are kept by the trigger that keeps the users' statistics; after every kind of
write they must equal a recount from the memories themselves, and hold no word that no
public memory says (an erased memory's words go with it)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

from memory_app.models import Memory
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import memory_search
from memory_app.services.erasure import memories_erase_user
from memory_app.services.memories import (
    MemoryDraft,
    memory_add,
    memory_add_many,
    memory_delete,
    memory_update,
)
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db


def _stats(tenant: Tenant) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, df FROM memory_public_term_stat WHERE tenant_id = %s", [tenant.pk]
        )
        return dict(cursor.fetchall())


def _recount(tenant: Tenant) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, count(*) FROM memory, unnest(tsvector_to_array(lexical_vector))"
            " AS lexeme WHERE tenant_id = %s AND scope = 'public' GROUP BY lexeme",
            [tenant.pk],
        )
        return dict(cursor.fetchall())


def _add(tenant: Tenant, user: str, content: str, scope: str = "public", **more: object) -> Memory:
    draft = MemoryDraft(user_id=user, type="fact", content=content, scope=scope, **more)  # type: ignore[arg-type]
    return memory_add(tenant=tenant, draft=draft).memory


def test_public_frequencies_equal_a_recount_after_every_kind_of_write(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    steps: list[str] = []

    def check(step: str) -> None:
        steps.append(step)
        assert _stats(tenant) == _recount(tenant), steps

    pier = _add(tenant, "alice", "Kayak trips leave from the north pier at dawn.")
    _add(tenant, "bob", "The pier cafe opens at nine on weekdays.")
    private = _add(tenant, "bob", "Bob keeps a spare kayak paddle in the van.", scope="private")
    _add(other_tenant, "alice", "Kayak trips leave from the south pier.")
    check("added two public memories and a private one")
    assert _stats(tenant)["pier"] == 2 and _stats(tenant)["kayak"] == 1
    assert _stats(other_tenant) == _recount(other_tenant) != {}

    memory_update(memory=private, changes={"scope": "public"})
    check("private -> public")
    assert _stats(tenant)["kayak"] == 2 and _stats(tenant)["paddl"] == 1

    memory_update(memory=pier, changes={"content": "Canoe trips leave from the harbour."})
    check("public memory rewritten")
    assert "harbour" in _stats(tenant) and "dawn" not in _stats(tenant)

    memory_update(memory=Memory.objects.get(pk=private.pk), changes={"scope": "shared"})
    check("public -> shared")
    assert "paddl" not in _stats(tenant)  # no row left at zero

    # A thread: each memory's lexical vector holds its neighbours' words, rewritten as the
    # thread grows (`refresh_thread_window`): the counts follow the rewrites.
    for order, line in enumerate(["Ferry times changed.", "Ask the harbour master.", "Bye."]):
        _add(tenant, "carol", line, thread_key="notice", thread_order=order)
    check("a public thread of three")
    middle = Memory.objects.get(tenant=tenant, user_id="carol", thread_order=1)
    memory_delete(memory=middle)
    check("a public thread's middle deleted")

    _add(tenant, "dave", "Dave's zanzibar slideshow is on Friday.")
    check("dave's public memory")
    assert _stats(tenant)["zanzibar"] == 1
    memories_erase_user(tenant_id=tenant.pk, user_id="dave")
    check("dave erased")
    assert "zanzibar" not in _stats(tenant)
    assert _stats(other_tenant) == _recount(other_tenant) != {}


# Seven users' private notes about kayaks, and two public memories that mention one.
PRIVATE = [f"{name} paddles a kayak on the lake every {day}." for name, day in [
    ("Erin", "Monday"), ("Finn", "Tuesday"), ("Gus", "Wednesday"), ("Hana", "Thursday"),
    ("Ivan", "Friday"), ("Jade", "Saturday"), ("Kai", "Sunday"),
]]  # fmt: skip
PUBLIC = ["Kayak rental closes at six.", "The club kayak trailer is parked by gate B."]


def test_a_tenant_wide_search_finds_public_rows_by_the_public_term_frequencies(
    tenant: Tenant,
) -> None:
    # "kayak" is in nine memories of the tenant, past a bound of three postings, but in
    # two public ones: the public branch reads by it and finds both, for an actor who
    # owns nothing. Private notes of others stay out; with a bound of one the public two
    # are past it too.
    drafts = [
        MemoryDraft(user_id=text.split()[0].lower(), type="fact", content=text) for text in PRIVATE
    ] + [
        MemoryDraft(user_id=f"staff{index}", type="policy", content=text, scope="public")
        for index, text in enumerate(PUBLIC)
    ]
    memory_add_many(tenant=tenant, drafts=drafts)
    public = set(Memory.objects.filter(tenant=tenant, scope="public").values_list("pk", flat=True))
    assert len(public) == 2
    dave = Actor(user_id="dave")
    with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=3):
        found = memory_search(tenant=tenant, actor=dave, query="kayak", mode="lexical")
        anonymous = memory_search(tenant=tenant, actor=Actor(), query="kayak", mode="lexical")
        hybrid = memory_search(tenant=tenant, actor=dave, query="a kayak", limit=20)
    assert set(found.lexical_ranking) == public == {hit.memory.pk for hit in found.hits}
    assert set(anonymous.lexical_ranking) == public
    assert set(hybrid.lexical_ranking) == public == {hit.memory.pk for hit in hybrid.hits}
    with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=1):
        bounded = memory_search(tenant=tenant, actor=dave, query="kayak", mode="lexical")
    assert bounded.lexical_ranking == []
    # An operator reads the whole tenant in one branch, counted by the tenant's sums.
    with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=3):
        operator = memory_search(
            tenant=tenant, actor=Actor(operator=True), query="kayak", mode="lexical"
        )
    assert operator.lexical_ranking == []
