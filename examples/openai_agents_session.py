"""An OpenAI Agents SDK agent whose conversation lives in Engram
(`pip install "./clients/python[agents]"`). Each run is one process; the next run, in
another process, resumes the same conversation by its identity.

    ENGRAM_URL=http://127.0.0.1:8000 ENGRAM_API_KEY=... OPENAI_API_KEY=... \
        python examples/openai_agents_session.py "Which laptop is the cheapest?"

Set OPENAI_BASE_URL to use any server that speaks the Responses API."""

from __future__ import annotations

import asyncio
import sys

from agents import Agent, Runner, set_tracing_disabled
from engram.openai_agents import EngramSession

MODEL = "gpt-4.1-mini"


async def main(message: str) -> None:
    set_tracing_disabled(True)  # no traces sent to OpenAI's dashboard from an example
    session = EngramSession(
        user_id="maria", agent_id="agents-example", conversation_id="agents-chat-1", model=MODEL
    )
    agent = Agent(
        name="shop",
        model=MODEL,
        instructions=session.instructions("You help Maria choose a laptop. Be brief."),
    )
    result = await Runner.run(agent, message, session=session)
    print("answer:", result.final_output)
    totals = (await session.client.get_session(await session.engram_session_id()))["totals"]
    print(f"history: {len(await session.get_items())} items")
    print(f"spend: {totals['input_tokens'] + totals['output_tokens']} tokens")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "Which laptop is the cheapest?"))
