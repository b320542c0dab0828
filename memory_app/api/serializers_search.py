"""Memory search at the edge: the query, its filters and time, and the ranked answer."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from memory_app.api.serializers import (
    MAX_QUERY_CHARS,
    MetadataField,
    TextField,
    _identifiers_field,
    _tags_field,
    _unit_field,
)
from memory_app.api.serializers_memory import MemorySerializer, memory_data
from memory_app.api.serializers_time import (
    TimeScopeSerializer,
    as_of_data,
    as_of_field,
    time_scope_data,
)
from memory_app.models import MemoryType
from memory_app.selectors.search import MemoryFilters
from sessions_app.api.fields import OffsetDateTimeField


class MemorySearchSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    query = TextField(max_length=MAX_QUERY_CHARS, help_text="What to look for.")
    user_id = serializers.CharField(
        max_length=255, required=False, help_text="Only memories about this user."
    )
    agent_id = serializers.CharField(
        max_length=255, required=False, help_text="Only memories of this agent."
    )
    types = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryType.choices),
        required=False,
        max_length=len(MemoryType.choices),
        help_text="Only these memory types.",
    )
    tags = _tags_field(required=False, help_text="Only memories with any of these tags.")
    session_id = serializers.UUIDField(
        required=False, help_text="Only memories learnt in this session."
    )
    created_from = OffsetDateTimeField(
        required=False, help_text="Only memories created at or after this time (ISO 8601)."
    )
    created_to = OffsetDateTimeField(
        required=False, help_text="Only memories created before this time (ISO 8601)."
    )
    occurred_from = OffsetDateTimeField(
        required=False,
        help_text="Only memories that happened (occurred_at) at or after this time (ISO "
        "8601); a memory without occurred_at is left out.",
    )
    occurred_to = OffsetDateTimeField(
        required=False,
        help_text="Only memories that happened (occurred_at) before this time (ISO 8601); "
        "a memory without occurred_at is left out.",
    )
    pinned = serializers.BooleanField(
        required=False, allow_null=True, default=None, help_text="Only pinned (or unpinned)."
    )
    min_importance = _unit_field(required=False, help_text="Only importance >= this (0..1).")
    min_confidence = _unit_field(required=False, help_text="Only confidence >= this (0..1).")
    metadata = MetadataField(
        required=False, help_text="Only memories whose metadata contains this JSON object."
    )
    valid_at = OffsetDateTimeField(
        required=False,
        help_text="Only memories valid at this instant (ISO 8601): valid_from <= valid_at < "
        "valid_to, an open (null) end holding every time. What held then, e.g. the home "
        "before a move. A question about the current state ('where do I live?') is "
        "weighed against this instant: what held then is not weighed as superseded since.",
    )
    limit = serializers.IntegerField(
        min_value=1, max_value=100, default=10, help_text="How many results (1-100)."
    )
    acting_user_id = serializers.CharField(
        max_length=255,
        required=False,
        help_text="The end user on whose behalf the agent searches; defaults to user_id.",
    )
    acting_roles = _identifiers_field(
        required=False, default=list, help_text="Roles of the acting user."
    )
    as_of = as_of_field()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        for first, last in (("created_from", "created_to"), ("occurred_from", "occurred_to")):
            start, end = attrs.get(first), attrs.get(last)
            if start is not None and end is not None and start >= end:
                raise serializers.ValidationError({last: [f"Must be after {first}."]})
        return attrs

    def filters(self) -> MemoryFilters:
        data = self.validated_data
        return MemoryFilters(
            session_id=data.get("session_id"),
            created_from=data.get("created_from"),
            created_to=data.get("created_to"),
            occurred_from=data.get("occurred_from"),
            occurred_to=data.get("occurred_to"),
            pinned=data.get("pinned"),
            min_importance=data.get("min_importance"),
            min_confidence=data.get("min_confidence"),
            metadata=data.get("metadata") or None,
            valid_at=data.get("valid_at"),
        )

    def search_kwargs(self) -> dict[str, Any]:
        """The arguments of `memory_search_for_actor`, from the validated body."""
        data = self.validated_data
        return {
            "query": data["query"],
            "user_id": data.get("user_id"),
            "agent_id": data.get("agent_id"),
            "types": data.get("types"),
            "tags": data.get("tags"),
            "limit": data["limit"],
            "acting_user_id": data.get("acting_user_id"),
            "acting_roles": data.get("acting_roles", []),
            "filters": self.filters(),
            "as_of": data.get("as_of") or timezone.now(),
        }


class ScorePartsSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    semantic = serializers.FloatField(
        help_text="Cosine similarity to the query: the best of the memory's text as a whole "
        "and, for a memory of several sentences, each of its passages."
    )
    lexical = serializers.FloatField(
        help_text="BM25 of the query over the memory's text (with its thread neighbours' for a "
        "memory in a thread); >= 0, unbounded, 0 = no query term."
    )
    relevance = serializers.FloatField(
        help_text="Cosine and BM25, each z-normalised over the candidates, fused by weight and "
        "scaled to [0, 1]: 1 = the best candidate of this search. In a hybrid search whose "
        "candidates include lines of a conversation, the lead's words (part feedback) are "
        "fused as a third signal, weight 0.2 beside the other two's 0.8."
    )
    feedback = serializers.FloatField(
        help_text="In a hybrid search, the memory's BM25 (its text and its thread "
        "neighbours', each word counted once) for the 40 words of the lead that are rarest "
        "among this search's candidates. The lead is the line of a conversation that ranks "
        "first by relevance and time (memories outside threads are passed over): the lines "
        "that answer a question often share the words of the line that matches it best "
        "more than the question's. >= 0, unbounded; 0 when the search has no lead or is "
        "not hybrid."
    )
    rrf = serializers.FloatField(
        help_text="Reciprocal rank fusion of the two lists, 1 = first in both (for comparison; "
        "the score uses relevance)."
    )
    recency = serializers.FloatField(help_text="0.5 ** (days since update / half-life).")
    importance = serializers.FloatField(help_text="The memory's importance.")
    access = serializers.FloatField(help_text="How often it was read, saturating at 1.")
    time = serializers.FloatField(
        help_text="When the query names a time (see time_scope): 1 if the memory's time "
        "lies inside it (when what it tells began: valid_from, else occurred_at, else "
        "created_at); after its end, falling linearly to 0 over the interval's "
        "length, at least 7 and at most 31 days (7 when open at its start), since a thing "
        "is told when or after it happens; else 0."
    )
    began_after = serializers.FloatField(
        help_text="1 when the query names a time that ends (see time_scope: 'in May 2021', "
        "'before I moved to Oslo') and the memory's validity began (valid_from) at or "
        "after that end: what it states did not hold then, its time is 0 and its score is "
        "halved. Else 0 (occurred_at and created_at say when a thing was told, not when "
        "it began)."
    )
    superseded = serializers.FloatField(
        help_text="1 when the query asks about the current state ('now', 'currently', "
        "'still', 'these days', 'at the moment', 'current', 'anymore'; or a question in the "
        "present tense about the user, 'where do I live?', 'what is my job?', 'am I "
        "vegetarian?', 'do I have ...?', without 'did', 'was', 'used to', 'before', "
        "'previously' or a time phrase of another time than as_of) and the memory does "
        "not hold at as_of (outside its validity interval, or superseded by a memory begun "
        "by then); or when the query names another time (resolved against as_of: 'before I "
        "moved to Oslo' the instant before the move, 'after ...' its instant, 'in 2021' "
        "the year) and the memory held at no moment of it: its score is halved (once: not "
        "again when part began_after halved it), kept below its successor's and below the "
        "results of its user and subject that held then. Else 0."
    )
    latest = serializers.FloatField(
        help_text="When the query asks about the current state (see superseded): where the "
        "memory's time (when what it tells began: valid_from, else occurred_at, else "
        "created_at; at most as_of, or valid_at when given) lies in the span of the times "
        "of the candidates of relevance at least 0.5, 0 at or before its start, 1 at or "
        "after its end; 0.1 times it is added to the score, so that of results about as "
        "relevant the newer comes first. Else 0."
    )
    asked = serializers.FloatField(
        help_text="1 when the query asks for an attribute of its user ('where do I live?' "
        "asks for home, 'who do I work for?' for employer, 'what is my favourite colour?' "
        "for favourite colour) and the memory states it (its subject: 'I moved to Porto' "
        "states home) and, when the query names a time, the memory is of that time (part "
        "time above 0: 'where did I live in March?' is not answered by a move told in "
        "May); 0.3 times it is added to the score (halved with it when part began_after "
        "is 1). Else 0."
    )
    speaker = serializers.FloatField(
        help_text="1 when the memory's text opens with its speaker ('Caroline: …') and the "
        "query names that speaker (one of its capitalised words), else 0."
    )
    thread = serializers.FloatField(
        help_text="0.08 when the memory is a line of the same conversation (thread_key) as "
        "the conversation line that ranks first by relevance and time (memories outside "
        "threads, such as extracted facts, are passed over), at most 3 positions from it "
        "(thread_order), as the line that answers often stands beside the one that matches "
        "best (halved with the score when part began_after is 1); else 0."
    )
    after_question = serializers.FloatField(
        help_text="1 when the question is asked in the past (as_of more than a day ago) and "
        "the memory occurred (occurred_at) more than a day after as_of: it had not happened "
        "yet, and its score is halved. Else 0 (a memory dated later than a question asked "
        "now is a plan)."
    )
    length = serializers.FloatField(
        help_text="The length prior added to the score: 0.02 * ln(the memory's length / the "
        "candidates' geometric mean length); negative for a memory shorter than the others."
    )


class SearchHitSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    score = serializers.FloatField(
        help_text="0.6 relevance + 0.2 recency + 0.1 importance + 0.1 access + 0.1 time "
        "+ 0.2 speaker + thread (part thread) + 0.1 latest + 0.3 asked; halved for a memory "
        "begun after the time the query names (part began_after); halved for a memory "
        "dated after as_of (part after_question); plus "
        "the length prior (part length); halved for a memory that does not hold at the "
        "time the query asks about, now or the time it names (part superseded). Results "
        "are best first by score: for a "
        "query that names a time and nothing else, the memories of that time come first "
        "(part time 1, then falling), and a score higher than the result's before it is "
        "held just below that one, so the scores never rise down the list."
    )
    parts = ScorePartsSerializer(
        help_text="The score's parts, as the search computed them (before a score is held "
        "below the result's before it)."
    )
    memory = MemorySerializer(help_text="The memory.")


class SearchResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    query = serializers.CharField(help_text="The query as searched.")
    as_of = serializers.DateTimeField(
        required=False, help_text="When the question was asked: the request's as_of or now."
    )
    time_scope = TimeScopeSerializer(
        allow_null=True,
        required=False,
        help_text="The query's time phrase as read against as_of; null when it names none.",
    )
    results = SearchHitSerializer(many=True, help_text="Best first.")


def search_result_data(*, query: str, outcome: Any, as_of: datetime) -> dict[str, Any]:
    """The shape of SearchResultSerializer (the schema), built directly: see memory_data."""
    return {
        "query": query,
        "as_of": as_of_data(as_of),
        "time_scope": time_scope_data(outcome.time_scope),
        "results": [
            {"score": hit.score, "parts": hit.parts, "memory": memory_data(hit.memory)}
            for hit in outcome.hits
        ],
    }
