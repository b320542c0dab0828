"""GET /sessions/{id}/context: what goes in, under which budget, in which order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from bench.synthetic_sessions import TURN_12_QUESTION, TURN_12_VALUE, synthetic_session
from memory_app.selectors.context import context_assemble
from memory_app.services.compaction import session_compact
from memory_app.window.tokens import messages_tokens
from sessions_app.models import ChatSession, ChatTurn, Tenant
from sessions_app.services.sessions import session_update
from tests.memory_app.window_helpers import new_session, record, record_synthetic
from tests.sessions_app.helpers import assert_error

pytestmark = pytest.mark.django_db


def _get(api: APIClient, session_id: Any, **params: Any) -> Any:
    return api.get(f"/api/v1/sessions/{session_id}/context", params)


def test_fact_from_turn_12_of_200_comes_back_within_1000_tokens(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    session = new_session(tenant)
    record_synthetic(
        tenant, session, synthetic_session(200, seed=6), capture=django_capture_on_commit_callbacks
    )
    response = _get(api, session.pk, query=TURN_12_QUESTION, budget=1000)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["total_tokens"] <= 1000
    assert messages_tokens(body["messages"]) == body["total_tokens"]
    text = "\n".join(m["content"] for m in body["messages"])
    assert TURN_12_VALUE in text and "Rotterdam" in text
    # It came through the compacted record (turn 12 is long gone from the window): the
    # turn recalled verbatim, or a summary, milestone or memory of it.
    carriers = {"recalled_turn", "summary", "milestone", "memory"}
    assert [i for i in body["included"] if i["kind"] in carriers]
    print(f"\nturn-12 fact in a {body['total_tokens']}-token context: {body['parts']}")
    # The newest turns are there verbatim (the window's reserved share), contiguous.
    turns = sorted(int(i["key"].split(":")[1]) for i in body["included"] if i["kind"] == "turn")
    assert turns and turns == list(range(201 - len(turns), 201))
    # With room, the whole window (the last keep_last_turns = 6) is there.
    roomy = _get(api, session.pk, query=TURN_12_QUESTION, budget=6000).json()
    window = {int(i["key"].split(":")[1]) for i in roomy["included"] if i["kind"] == "turn"}
    assert window >= set(range(195, 201))
    assert all(not ChatTurn.objects.get(session=session, turn_number=n).compacted for n in window)
    roles = [m["role"] for m in roomy["messages"]]
    assert roles[0] == "system" and roles[-2:] == ["user", "assistant"]
    assert TURN_12_VALUE in "\n".join(m["content"] for m in roomy["messages"])


_TEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")


@hsettings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    turns=st.lists(
        st.tuples(
            st.text(alphabet=_TEXT, max_size=300),
            st.text(alphabet=st.sampled_from(list("abcdefg XYZ-0123456789.,$?!\n")), max_size=600),
        ),
        max_size=16,
    ),
    budget=st.integers(min_value=50, max_value=2500),
    query=st.text(alphabet=_TEXT, max_size=60),
    state=st.dictionaries(st.text(alphabet=_TEXT, max_size=8), st.integers(), max_size=4),
)
def test_context_never_exceeds_its_budget(
    tenant: Tenant,
    turns: list[tuple[str, str]],
    budget: int,
    query: str,
    state: dict[str, int],
) -> None:
    session = new_session(tenant, state=state)
    for user, assistant in turns:
        record(tenant, session, user, assistant, failed_error="timeout" if "?" in user else None)
    session_compact(session_id=session.pk)
    context = context_assemble(tenant=tenant, session_id=session.pk, query=query, budget=budget)
    assert context.total_tokens <= budget
    assert messages_tokens(context.messages) == context.total_tokens
    assert sum(p["tokens"] for p in context.parts.values()) == context.total_tokens
    # Nothing is both in and out, and every candidate is accounted for once.
    inside = {row["key"] for row in context.included}
    outside = {row["key"] for row in context.excluded}
    assert not inside & outside
    # No message without text; the verbatim turns are the newest, without a gap.
    assert all(message["content"].strip() for message in context.messages)
    turns = sorted(
        (int(row["key"].split(":")[1]), row["key"] in inside)
        for row in [*context.included, *context.excluded]
        if row["kind"] == "turn"
    )
    kept = [number for number, included in turns if included]
    assert kept == [number for number, _ in turns][len(turns) - len(kept) :]


def test_state_focus_cart_failures_and_breakdown(tenant: Tenant, api: APIClient) -> None:
    session = new_session(tenant, state={"stage": "comparing", "budget_usd": 1500})
    ChatSession.objects.filter(pk=session.pk).update(
        focus_mpn="XPS-9530", last_query="15 inch laptops", last_results=["XPS-9530", "T14-G4"]
    )
    record(
        tenant, session, "Which laptop has the longest battery?", "The XPS-9530, about 13 hours."
    )
    record(tenant, session, "Check stock for XPS-9530", "", failed_error="inventory API 503")
    body = _get(api, session.pk, query="battery life", budget=4000).json()
    system = body["messages"][0]
    assert system["role"] == "system"
    assert '"budget_usd":1500' in system["content"] and "focus: XPS-9530" in system["content"]
    assert 'last results for "15 inch laptops": 1. XPS-9530; 2. T14-G4' in system["content"]
    failures = [m for m in body["messages"] if m["content"].startswith("Recent failing steps")]
    assert failures and "inventory API 503" in failures[0]["content"]
    # The failed turn has no response: its user message alone, no empty assistant one.
    assert [m["role"] for m in body["messages"][-3:]] == ["user", "assistant", "user"]
    assert body["messages"][-3]["content"] == "Which laptop has the longest battery?"
    assert body["messages"][-1]["content"] == "Check stock for XPS-9530"
    assert body["excluded"] == []
    assert body["parts"]["turn"] == {
        "included": 2,
        "excluded": 0,
        "tokens": body["parts"]["turn"]["tokens"],
    }
    assert sum(p["tokens"] for p in body["parts"].values()) == body["total_tokens"]
    for row in body["included"]:
        parts = row["score_parts"]
        expected = (
            0.35 * parts["recency"]
            + 0.45 * parts["semantic"]
            + 0.1 * parts["role"]
            + 0.1 * parts["signal"]
        )
        assert abs(row["score"] - expected) < 1e-3
    assert {r["kind"]: r["score_parts"]["role"] for r in body["included"]}["state"] == 1.0
    assert {r["kind"]: r["score_parts"]["role"] for r in body["included"]}["turn"] == 0.7


def test_small_budget_leaves_out_the_weakest_and_says_why(tenant: Tenant, api: APIClient) -> None:
    session = new_session(tenant, state={"stage": "checkout"})
    for i in range(6):
        record(
            tenant, session, f"Tell me about monitor {i} " + "details " * 40, "It is fine. " * 30
        )
    body = _get(api, session.pk, query="monitor 5", budget=200).json()
    assert body["total_tokens"] <= 200
    assert body["excluded"], "six long turns cannot fit in 200 tokens"
    reasons = {row["reason"] for row in body["excluded"]}
    assert reasons <= {"over_budget", "larger_than_budget", "not_contiguous"}
    included_scores = [row["score"] for row in body["included"] if not row["reserved"]]
    # A turn older than one left out stays out even if it fits: the turns stay a run.
    room = 200 - body["total_tokens"]
    fitting_out = [
        r for r in body["excluded"] if r["tokens"] < room and r["reason"] != "not_contiguous"
    ]
    assert not fitting_out, "greedy packing left out something that still fits"
    assert included_scores == sorted(included_scores, reverse=True)


def test_same_inputs_same_messages(tenant: Tenant, api: APIClient) -> None:
    session = new_session(tenant)
    for i in range(14):
        record(tenant, session, f"Part DT-{100 + i} for ${i * 50 + 100}?", f"Yes, DT-{100 + i}.")
    session_compact(session_id=session.pk)
    first = _get(api, session.pk, query="part DT-103 price", budget=600).json()
    second = _get(api, session.pk, query="part DT-103 price", budget=600).json()
    assert first["messages"] == second["messages"]
    sections = [m["content"].split("\n", 1)[0] for m in first["messages"] if m["role"] == "system"]
    order = ["Current session state:", "Summary of earlier turns (compacted):",
             "Milestones from earlier turns:", "Relevant long-term memories:",
             "Recent failing steps:"]  # fmt: skip
    assert sections == [s for s in order if s in sections]


def test_context_brings_the_memories_the_acting_user_may_see(
    tenant: Tenant, api: APIClient
) -> None:
    """Hybrid memory search feeds the context as the session's user sees it: their own
    private memory and a public one, never another user's private memory."""
    from memory_app.services.memories import MemoryDraft, memory_add

    def add(user_id: str, content: str, scope: str = "private") -> None:
        memory_add(
            tenant=tenant,
            draft=MemoryDraft(user_id=user_id, type="preference", content=content, scope=scope),
        )

    add("u1", "I prefer matte screens on laptops.")
    add("u2", "I prefer glossy screens with vivid colours.")
    add("ops", "Screen finish questions: always mention the return policy.", scope="public")
    session = new_session(tenant)
    record(tenant, session, "hi", "hello")

    def memory_text(**params: Any) -> str:
        body = _get(api, session.pk, query="which screen finish", budget=800, **params).json()
        found = [m["content"] for m in body["messages"]
                 if m["content"].startswith("Relevant long-term")]  # fmt: skip
        return found[0] if found else ""

    as_owner = memory_text()
    assert "matte" in as_owner and "return policy" in as_owner and "glossy" not in as_owner
    as_other = memory_text(acting_user_id="u2")
    assert "glossy" in as_other and "matte" not in as_other


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"budget": "49"}, "budget"),
        ({"budget": "200001"}, "budget"),
        ({"budget": "abc"}, "budget"),
        ({"budget": "1.5"}, "budget"),
        ({"budget": ""}, "budget"),
        ({"memory_limit": ""}, "memory_limit"),
        ({"turn_limit": ""}, "turn_limit"),
        ({"budget": "-100"}, "budget"),
        ({"query": "x" * 4001}, "query"),
        ({"acting_user_id": "u" * 256}, "acting_user_id"),
    ],
)
def test_bad_input_answers_400_with_the_field(
    tenant: Tenant, api: APIClient, params: dict[str, str], field: str
) -> None:
    session = new_session(tenant)
    error = assert_error(_get(api, session.pk, **params), 400, "invalid")
    assert field in error["fields"]


def test_other_tenants_and_unknown_sessions_are_404(
    tenant: Tenant, other_tenant: Tenant, api: APIClient, other_api: APIClient
) -> None:
    session = new_session(tenant)
    assert_error(_get(other_api, session.pk, budget=500), 404, "not_found")
    assert_error(_get(api, "00000000-0000-0000-0000-000000000000"), 404, "not_found")
    assert_error(_get(api, "not-a-uuid"), 404, "not_found")
    assert _get(api, session.pk).json()["budget"] == 4000  # the default
    assert api.post(f"/api/v1/sessions/{session.pk}/context").status_code == 405
    assert APIClient().get(f"/api/v1/sessions/{session.pk}/context").status_code == 401


def test_empty_session_gives_an_empty_context(tenant: Tenant, api: APIClient) -> None:
    session = new_session(tenant)
    body = _get(api, session.pk, query="anything", budget=50).json()
    assert body["messages"] == [] and body["total_tokens"] == 0
    session_update(session=session, state={"k": 1})
    body = _get(api, session.pk, budget=50).json()
    assert body["messages"][0]["content"] == 'Current session state:\nstate: {"k":1}'


def test_memories_that_go_into_the_context_count_as_read(tenant: Tenant, api: APIClient) -> None:
    """Serving the context records access only for the memories it included."""
    from memory_app.models import Memory
    from memory_app.services.access import memory_access_flush
    from memory_app.services.memories import MemoryDraft, memory_add

    memory_add(
        tenant=tenant,
        draft=MemoryDraft(user_id="u1", type="preference", content="I prefer matte screens."),
    )
    session = new_session(tenant)
    record(tenant, session, "hi", "hello")
    memory = Memory.objects.get(user_id="u1")
    _get(api, session.pk, budget=800)  # no query: no memory is searched or included
    memory_access_flush()
    assert Memory.objects.get(pk=memory.pk).access_count == memory.access_count
    _get(api, session.pk, query="which screen finish", budget=800)
    memory_access_flush()
    assert Memory.objects.get(pk=memory.pk).access_count == memory.access_count + 1
