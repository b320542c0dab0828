"""Serializers of the context endpoint: its query parameters and its answer."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory_app.api.serializers_time import as_of_field
from memory_app.selectors.context import DEFAULT_MEMORY_LIMIT, MAX_VERBATIM_TURNS
from sessions_app.api.fields import ContextPolicyField, QueryIntegerField
from sessions_app.context_policy_limits import MEMORY_LIMIT_MAX

MIN_BUDGET = 50
MAX_BUDGET = 200_000


MAX_CONTEXT_QUERY_CHARS = 4000


class ContextQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    query = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_CONTEXT_QUERY_CHARS,
        help_text="What the next LLM call is about; ranks candidates by semantic match.",
    )
    as_of = as_of_field(
        "The dates that label recalled turns and memories are written in its offset. "
        "Earlier than now by more than ENGRAM_TURN_CLOCK_SKEW_SECONDS (300), the context "
        "shows what was said and known by then: the session's turns whose occurred_at is "
        "at or before as_of, verbatim or recalled, and only the summaries (with their "
        "milestones) of such turns alone (the turns of a summary that reaches past as_of "
        "come verbatim); the same of the sessions a rotated session continues; the tool "
        "outputs and failing steps of those turns; the state, focus, results and cart as "
        "the newest such turn left them (a change between two turns counts from the "
        "later one), what has no version then listed in `excluded` with reason "
        "`no_history`; the long-term memories noted (created_at) by as_of, or dated "
        "(occurred_at) by it."
    )
    budget = QueryIntegerField(
        required=False,
        min_value=MIN_BUDGET,
        max_value=MAX_BUDGET,
        help_text="Token budget of the whole `messages` list (o200k_base, framing "
        f"included), {MIN_BUDGET}..{MAX_BUDGET}. Omitted: ENGRAM_CONTEXT_DEFAULT_BUDGET; "
        "blank (`budget=`): 400, as any value that is not an integer.",
    )
    acting_user_id = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="Whose eyes the memories are chosen for (visibility); default the "
        "session's user.",
    )
    acting_roles = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=1000,
        help_text="Comma-separated roles of the acting user, for memory visibility.",
    )

    memory_limit = QueryIntegerField(
        required=False,
        min_value=0,
        max_value=MEMORY_LIMIT_MAX,
        help_text=f"Long-term memories searched for the context (K), 0..{MEMORY_LIMIT_MAX}; "
        f"omitted: the policy's ({DEFAULT_MEMORY_LIMIT} for `default`); blank: 400. Their "
        "direct relations may come along.",
    )
    policy = ContextPolicyField(
        required=False,
        max_length=64,
        help_text="A named context policy to use instead of the session's "
        "(`context_policy`): compare two on one session. Unknown name: 400 on `policy`.",
    )
    turn_limit = QueryIntegerField(
        required=False,
        min_value=0,
        max_value=MAX_VERBATIM_TURNS,
        default=MAX_VERBATIM_TURNS,
        help_text=f"Open (not compacted) turns offered verbatim, newest first, "
        f"0..{MAX_VERBATIM_TURNS}; omitted: {MAX_VERBATIM_TURNS}; blank: 400.",
    )

    def validate_budget(self, value: Any) -> int:
        return int(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # DRF drops an empty optional field of a query string; `policy=` is still a bad
        # name, not a request for the session's policy (the numbers: QueryIntegerField).
        if self.initial_data.get("policy") == "":
            raise serializers.ValidationError({"policy": ["May not be blank."]})
        return attrs

    def validate_acting_roles(self, value: str) -> list[str]:
        return [role.strip() for role in value.split(",") if role.strip()]


class MessageSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    role = serializers.CharField(help_text="system, user or assistant.")
    content = serializers.CharField(help_text="The message text; never empty.")


class ContextScorePartsSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    recency = serializers.FloatField(
        help_text="exp-decay of the candidate's age at the request (half-life "
        "ENGRAM_CONTEXT_HALF_LIFE_MINUTES): a window turn, step or summary is as old as its "
        "recording, a recalled turn or long-term memory as when it happened (`occurred_at`, "
        "else when it was noted; not its last access), session state as the last activity."
    )
    semantic = serializers.FloatField(
        help_text="Cosine of query and candidate embeddings. For a query that names a time "
        "and nothing else ('what happened last week?'), a found turn's or memory's time "
        "credit (search part `time`) where higher: such a query is about its time."
    )
    role = serializers.FloatField(help_text="1.0 for system and milestone, 0.7 otherwise.")
    signal = serializers.FloatField(help_text="In cart/focus, milestone kind, importance…")


class ContextItemSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    key = serializers.CharField(
        help_text="Stable id: `turn:12`, `summary:3`, `milestone:…`, `recalled:12`."
    )
    kind = serializers.CharField(
        help_text="state, focus, results, cart, turn, summary, milestone, recalled_turn (an "
        "earlier turn found by searching the session for the query), memory, "
        "related_memory, failure or tool_output; previous_turn, previous_summary, "
        "previous_milestone from the session a rotation continued; item_details (only "
        "excluded, reason `no_history`): the details of items fetched after as_of."
    )
    tokens = serializers.IntegerField(help_text="Tokens the candidate adds to the messages.")
    score = serializers.FloatField(
        help_text="0.35·recency + 0.45·semantic + 0.1·role + 0.1·signal."
    )
    score_parts = ContextScorePartsSerializer(help_text="The score's terms.")


class IncludedItemSerializer(ContextItemSerializer):
    reserved = serializers.BooleanField(
        help_text="Packed by the window reservation before scoring: the newest turn "
        "within the budget (cut to fit it when larger alone: reason `truncated`), the "
        "window's next turns within its share."
    )


class ExcludedItemSerializer(ContextItemSerializer):
    reason = serializers.CharField(
        help_text="`truncated` (the newest turn, larger than the budget alone, went in "
        "cut to fit it: each of its messages keeps its beginning and its end around ' … "
        "[cut N tokens] … '; the turn is also in `included`, and `tokens` here are the "
        "tokens cut), `over_budget` (items of higher priority or score used the budget), "
        "`larger_than_budget` (would not fit even alone), `not_contiguous` (a verbatim turn "
        "older than one left out: the turns shown are the newest, without a gap), "
        "`duplicate` (the context already holds it: a turn shown twice, or a milestone "
        "restating a turn shown verbatim), `not_relevant` (with a query: "
        "its similarity to the query is under ENGRAM_CONTEXT_MIN_SEMANTIC), or seed 004's "
        "page-out: `evicted_age` (an open turn outside the window older than "
        "ENGRAM_CONTEXT_EVICT_TURN_MINUTES) or `evicted_below_similarity` (a memory, tool "
        "output or predecessor line less similar to the query than "
        "ENGRAM_CONTEXT_SIMILARITY_FLOOR). Neither similarity floor applies to a memory "
        "or turn the search relates to the query by a query word or by the time the "
        "query names (its `occurred_at` in the phrase's interval, read against `as_of`), "
        "nor to a memory that states the subject the query asks for (`where do I live?` "
        "asks for `home`, which `I moved to Porto` states). "
        "`no_history` (asked at a past `as_of`): a part of the session's state with no "
        "version then, as it reads today: focus, results or cart before the session's "
        "first turn said by as_of, or `item_details`, the name and summary of items "
        "fetched since (they are named by their MPN alone)."
    )


class PartSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    included = serializers.IntegerField(help_text="Candidates of this kind that went in.")
    excluded = serializers.IntegerField(help_text="Candidates of this kind left out.")
    tokens = serializers.IntegerField(help_text="Tokens they take (framing: headers, overhead).")


class PolicySerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    name = serializers.CharField(
        help_text="`default`, a name from ENGRAM_CONTEXT_POLICIES or one of the tenant's "
        "(`/tenant/context-policies`)."
    )
    origin = serializers.ChoiceField(
        choices=["default", "settings", "tenant"],
        help_text="Where the policy is defined: the built-in default, the settings, or the "
        "tenant (which replaces a settings policy of the same name).",
    )
    keep_last_turns = serializers.IntegerField(help_text="Newest turns reserved verbatim.")
    memory_limit = serializers.IntegerField(help_text="K: memories searched.")
    compression = serializers.BooleanField(
        help_text="True: summaries and milestones stand in for compacted turns; false: "
        "compacted turns are offered verbatim and no summary is used."
    )
    predecessor_depth = serializers.IntegerField(
        help_text="Rotated sessions walked back through `previous_session_id` for their "
        "summaries, milestones and open turns (0..20)."
    )


class ContextSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    session_id = serializers.UUIDField(help_text="The session.")
    query = serializers.CharField(help_text="The query the candidates were ranked against.")
    budget = serializers.IntegerField(help_text="The token budget applied.")
    total_tokens = serializers.IntegerField(
        help_text="Tokens of `messages` as sent to an OpenAI-style chat call; ≤ budget."
    )
    messages = MessageSerializer(many=True, help_text="Ready for `messages=` of a chat call.")
    parts = serializers.DictField(
        child=PartSerializer(), help_text="Per kind: how many went in, were left out, tokens."
    )
    policy = PolicySerializer(help_text="The context policy this answer was assembled under.")
    included = IncludedItemSerializer(
        many=True,
        help_text="What went in: the reserved window first, then facts (state, memories, "
        "recalled turns, failures, tool outputs), summaries and milestones, older turns; "
        "best score first within each.",
    )
    excluded = ExcludedItemSerializer(many=True, help_text="What was left out, and why.")
