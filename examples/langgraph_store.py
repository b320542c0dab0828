"""A LangGraph graph whose long-term store is Engram (`pip install "./clients/python[langgraph]"`):
one node remembers what the user said, the next recalls memories for a question through
Engram's hybrid search.

    ENGRAM_URL=http://127.0.0.1:8000 ENGRAM_API_KEY=... python examples/langgraph_store.py"""

from __future__ import annotations

import uuid
from typing import TypedDict

from engram.langgraph import EngramStore
from langgraph.config import get_config, get_store
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    said: str
    question: str
    recalled: list[str]


def remember(state: State) -> dict[str, object]:
    user_id = get_config()["configurable"]["user_id"]
    key = uuid.uuid5(uuid.NAMESPACE_URL, state["said"]).hex  # the same sentence, the same key
    get_store().put((user_id, "preferences"), key, {"content": state["said"]})
    return {}


def recall(state: State) -> dict[str, object]:
    user_id = get_config()["configurable"]["user_id"]
    hits = get_store().search((user_id, "preferences"), query=state["question"], limit=3)
    return {"recalled": [hit.value["content"] for hit in hits]}


def build(store: EngramStore):  # type: ignore[no-untyped-def]  # the compiled graph's type is generic
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


if __name__ == "__main__":
    graph = build(EngramStore(agent_id="langgraph-example"))
    config = {"configurable": {"user_id": "maria"}}
    graph.invoke({"said": "I only fly with window seats.", "question": "", "recalled": []}, config)
    said = {"said": "I am allergic to peanuts.", "question": "Which food must I avoid?"}
    result = graph.invoke({**said, "recalled": []}, config)
    print("recalled:", result["recalled"][0])
