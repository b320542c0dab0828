"""Engram memories as LangGraph's long-term store (`pip install engram-client[langgraph]`).

    store = EngramStore(agent_id="planner")          # ENGRAM_URL / ENGRAM_API_KEY
    graph = builder.compile(store=store)
    store.put(("maria", "food"), "likes", {"content": "Maria loves Thai food"})
    store.search(("maria",), query="what does she like to eat?")

The namespace's first label is the Engram user the memory is about (the key's tenant
holds it); the store's `agent_id` is the Engram agent. Each item is one Engram memory:
its value in `structured`, its text (the value's `content` or `text`, else the value as
JSON, after the key) in `content`, so Engram's hybrid search (semantic + lexical +
recency + importance) ranks it; tags mark the item and each prefix of its namespace, so
gets and prefix searches are exact filters. Every item is a thread of its own, so Engram
never merges two items that read alike.

Engram's errors reach the caller as `EngramStoreError` (a `ValueError`, as the store's
own `InvalidNamespaceError` is); a bad namespace raises `InvalidNamespaceError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlparse

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from engram._client import Engram
from engram._errors import EngramError, NotFound

SEARCH_LIMIT = 100  # Engram's cap on one search


class EngramStoreError(ValueError):
    """Engram refused or could not be reached; `cause` is the client's `EngramError`."""

    def __init__(self, message: str, cause: EngramError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:40]


def _item_tag(namespace: tuple[str, ...], key: str) -> str:
    return "lg-item:" + _digest(*namespace, "\x01", key)


def _prefix_tag(prefix: tuple[str, ...]) -> str:
    return "lg-ns:" + _digest(*prefix)


def _user_of(namespace: tuple[str, ...]) -> str:
    if not namespace:
        raise InvalidNamespaceError(
            "An Engram namespace starts with the user id the memories are about."
        )
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(f"Invalid namespace {namespace!r}: non-empty strings.")
    return namespace[0]


def _text(key: str, value: dict[str, Any]) -> str:
    for field in ("content", "text"):
        if isinstance(value.get(field), str) and value[field].strip():
            return f"{key}: {value[field]}"
    return f"{key}: {json.dumps(value, sort_keys=True, default=str)}"


def _compare(actual: Any, condition: Any) -> bool:
    if not isinstance(condition, dict):
        return bool(actual == condition)
    checks = {
        "$eq": lambda a, b: a == b,
        "$ne": lambda a, b: a != b,
        "$gt": lambda a, b: a is not None and a > b,
        "$gte": lambda a, b: a is not None and a >= b,
        "$lt": lambda a, b: a is not None and a < b,
        "$lte": lambda a, b: a is not None and a <= b,
    }
    try:
        return all(checks[op](actual, expected) for op, expected in condition.items())
    except (KeyError, TypeError):
        return False


def _matches(value: dict[str, Any], filters: dict[str, Any] | None) -> bool:
    return all(_compare(value.get(k), c) for k, c in (filters or {}).items())


def _item(memory: dict[str, Any], score: float | None = None) -> SearchItem:
    meta = (memory.get("metadata") or {}).get("langgraph") or {}
    return SearchItem(
        namespace=tuple(meta.get("namespace") or ()),
        key=str(meta.get("key", "")),
        value=dict(memory.get("structured") or {}),
        created_at=datetime.fromisoformat(memory["created_at"].replace("Z", "+00:00")),
        updated_at=datetime.fromisoformat(memory["updated_at"].replace("Z", "+00:00")),
        score=score,
    )


def _plain(item: SearchItem) -> Item:
    return Item(
        value=item.value,
        key=item.key,
        namespace=item.namespace,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


class EngramStore(BaseStore):
    """LangGraph's `BaseStore` over Engram's long-term memory. Pass a client, or
    `base_url`/`api_key` (default `ENGRAM_URL`/`ENGRAM_API_KEY`). `memory_type` is the
    Engram type the items are stored as."""

    def __init__(
        self,
        *,
        agent_id: str,
        client: Engram | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        memory_type: str = "fact",
    ) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise ValueError("agent_id must be a non-empty string.")
        self.agent_id = agent_id
        self.memory_type = memory_type
        self.client = client or Engram(base_url, api_key)

    def _engram(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except EngramError as exc:
            raise EngramStoreError(f"Engram: {exc}", exc) from exc

    # The operations ---------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op.namespace, op.key, op.value)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"Unknown store operation: {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The sync client in a worker thread: one store serves graphs run either way."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _find(self, namespace: tuple[str, ...], key: str) -> dict[str, Any] | None:
        user_id = _user_of(namespace)
        page = self._engram(
            self.client.list_memories,
            user_id=user_id,
            agent_id=self.agent_id,
            tag=_item_tag(namespace, key),
        )
        return page["results"][0] if page["results"] else None

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        memory = self._find(tuple(namespace), str(key))
        return _plain(_item(memory)) if memory is not None else None

    def _put(self, namespace: tuple[str, ...], key: str, value: Any) -> None:
        namespace = tuple(namespace)
        if not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty string.")
        existing = self._find(namespace, key)
        user_id = namespace[0]
        if value is None:
            if existing is not None:
                try:
                    self.client.delete_memory(existing["id"], acting_user_id=user_id)
                except NotFound:
                    pass  # deleted meanwhile: the outcome the caller asked for
                except EngramError as exc:
                    raise EngramStoreError(f"Engram: {exc}", exc) from exc
            return
        if not isinstance(value, dict):
            raise ValueError("value must be a dict (or None to delete).")
        fields = {
            "content": _text(key, value),
            "structured": value,
            "tags": [_item_tag(namespace, key)]
            + [_prefix_tag(namespace[:n]) for n in range(1, len(namespace) + 1)],
        }
        if existing is not None:
            self._engram(
                self.client.update_memory,
                existing["id"],
                acting={"acting_user_id": user_id},
                **fields,
            )
            return
        added = self._engram(
            self.client.add_memory,
            user_id=user_id,
            agent_id=self.agent_id,
            type=self.memory_type,
            metadata={"langgraph": {"namespace": list(namespace), "key": key}},
            thread_key=_item_tag(namespace, key),
            **fields,
        )
        if added["action"] != "created":  # the same text under another key already
            other = _item(added["memory"])
            raise EngramStoreError(
                f"Engram keeps this text once per user: it is stored as {other.key!r} in "
                f"{other.namespace!r}."
            )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        user_id = _user_of(prefix)
        tag = _prefix_tag(prefix)
        wanted = op.offset + op.limit
        if op.query:
            found = self._engram(
                self.client.search_memories,
                op.query,
                user_id=user_id,
                agent_id=self.agent_id,
                tags=[tag],
                limit=SEARCH_LIMIT if op.filter else min(SEARCH_LIMIT, max(wanted, 1)),
            )
            hits = [_item(hit["memory"], hit["score"]) for hit in found["results"]]
        else:
            hits = [_item(m) for m in self._all_memories(user_id=user_id, tag=tag, stop=wanted)]
        hits = [hit for hit in hits if _matches(hit.value, op.filter)]
        return hits[op.offset : op.offset + op.limit]

    def _all_memories(self, *, stop: int | None = None, **filters: Any) -> list[dict[str, Any]]:
        memories: list[dict[str, Any]] = []
        params: dict[str, Any] = {"agent_id": self.agent_id, "page_size": 200, **filters}
        while stop is None or len(memories) < stop:
            page = self._engram(self.client.list_memories, **params)
            memories.extend(page["results"])
            cursor = parse_qs(urlparse(page.get("next") or "").query).get("cursor")
            if not cursor:
                break
            params["cursor"] = cursor[0]
        return memories

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                prefix = tuple(condition.path)
        if not prefix or "*" in prefix[:1]:
            raise InvalidNamespaceError(
                "Listing namespaces needs a prefix that starts with the user id."
            )
        fixed = tuple(prefix[: prefix.index("*")] if "*" in prefix else prefix)
        memories = self._all_memories(user_id=fixed[0], tag=_prefix_tag(fixed))
        spaces = {_item(m).namespace for m in memories}
        for condition in op.match_conditions or ():
            spaces = {ns for ns in spaces if _path_matches(ns, condition)}
        if op.max_depth is not None:
            spaces = {ns[: op.max_depth] for ns in spaces}
        return sorted(spaces)[op.offset : op.offset + op.limit]


def _path_matches(namespace: tuple[str, ...], condition: Any) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
