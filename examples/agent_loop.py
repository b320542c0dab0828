"""A shopping agent's loop on Engram, in a few lines (`pip install ./clients/python openai`).

    ENGRAM_URL=http://127.0.0.1:8000 ENGRAM_API_KEY=... OPENAI_API_KEY=... \
        python examples/agent_loop.py

Set OPENAI_BASE_URL to use any OpenAI-compatible model server."""

from __future__ import annotations

import engram
import openai

LAPTOPS = [
    {"mpn": "DELL-XPS15", "name": "Dell XPS 15", "component_type": "laptop",
     "data": {"price": 1499, "weight_kg": 1.9}},
    {"mpn": "LEN-T14", "name": "Lenovo ThinkPad T14", "component_type": "laptop",
     "data": {"price": 1099, "weight_kg": 1.4}},
    {"mpn": "ACER-A5", "name": "Acer Aspire 5", "component_type": "laptop",
     "data": {"price": 549, "weight_kg": 1.7}},
]  # fmt: skip


def main() -> None:
    client = engram.Engram()  # ENGRAM_URL, ENGRAM_API_KEY
    session = client.resume_session(
        user_id="maria", agent_id="shop-example", external_session_id="example-chat-1"
    )
    llm = engram.wrap_openai(openai.OpenAI(), session)  # every call is recorded and priced

    # Turn 1: the agent searched its catalogue; Engram keeps the results in order.
    with session.turn(user_message="Find me a laptop under $1500") as turn:
        session.store_results(query="laptop under $1500", items=LAPTOPS)
        turn.add_step("search", duration_ms=40)  # a tool call: no tokens
        turn.assistant_response = "I found 3 laptops."

    # Turn 2: "the cheapest" is resolved by Engram, added to the cart, and answered
    # by the model with the assembled context; the model call is a step of this turn.
    with session.turn(user_message="Add the cheapest one to my cart") as turn:
        cheapest = session.resolve("the cheapest")["item"]
        session.add_selection(mpn=cheapest["mpn"])
        context = session.context(query="the user's cart", budget=1000)
        reply = llm.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                *context["messages"],
                {"role": "user", "content": "Add the cheapest one to my cart"},
            ],
        )
        turn.assistant_response = reply.choices[0].message.content or ""

    client.add_memory(user_id="maria", type="preference", content="Maria shops on a budget.")
    cart = [line["mpn"] for line in session.selections()["results"]]
    totals = session.get()["totals"]
    print(f"cart: {cart}")
    print(f"answer: {turn.assistant_response}")
    print(
        f"spend: {totals['total_tokens']} tokens, ${totals['cost_usd']} "
        f"over {totals['turns']} turns"
    )


if __name__ == "__main__":
    main()
