/**
 * The client against a live Engram (started by the Python suite:
 * tests/integrations/test_typescript_client.py), with the real `openai` and `ai` packages
 * pointed at a loopback OpenAI-compatible server. Environment: ENGRAM_URL, ENGRAM_API_KEY,
 * ENGRAM_OTHER_API_KEY (another tenant), ENGRAM_DROPPING_URL (a proxy that drops the answer
 * of the first turn POST), FAKE_LLM_URL.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, streamText, wrapLanguageModel } from "ai";
import OpenAI from "openai";

import {
  APIConnectionError,
  AuthenticationError,
  Engram,
  engramMiddleware,
  InvalidRequest,
  NotFound,
} from "../src/index.js";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through the Python suite`);
  return value;
}

const engram = new Engram({ baseUrl: env("ENGRAM_URL"), apiKey: env("ENGRAM_API_KEY"), maxRetries: 3, backoffBase: 0.01 });
const llmUrl = `${env("FAKE_LLM_URL")}/v1`;
const TOKENS = ["input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"] as const;

async function totals(sessionId: string) {
  const data = (await engram.getSession(sessionId)) as unknown as { totals: Record<string, number> };
  return Object.fromEntries(TOKENS.map((k) => [k, data.totals[k]]));
}

test("sessions, workspace, cart, context, memories and usage", async () => {
  const session = await engram.createSession({ user_id: "maria", agent_id: "ts-shop", budget_tokens: 50_000 });
  await session.storeResults({
    query: "laptops",
    items: [
      { mpn: "DELL-XPS15", name: "Dell XPS 15", component_type: "laptop", data: { price: 1499 } },
      { mpn: "ACER-A5", name: "Acer Aspire 5", component_type: "laptop", data: { price: 549 } },
    ],
  });
  const cheapest = await session.resolve("the cheapest");
  assert.equal((cheapest.item as { mpn: string }).mpn, "ACER-A5");
  await session.addSelection({ ref: "the cheapest" });
  await session.addSelection({ mpn: "DELL-XPS15" });
  await session.reorderSelections(["DELL-XPS15", "ACER-A5"]);
  const cart = await session.selections();
  assert.deepEqual(cart.results.map((line) => line.mpn), ["DELL-XPS15", "ACER-A5"]);
  const context = await session.context({ query: "laptops", budget: 2000 });
  assert.equal(context.session_id, session.id);
  assert.ok(context.total_tokens <= 2000);

  const again = await engram.resumeSession({ user_id: "maria", agent_id: "ts-cli", external_session_id: "c-1" });
  const same = await engram.resumeSession({ user_id: "maria", agent_id: "ts-cli", external_session_id: "c-1" });
  assert.equal(again.id, same.id);

  const added = await engram.addMemory({ user_id: "maria", agent_id: "ts-shop", type: "preference", content: "Maria prefers matte screens." });
  assert.equal(added.action, "created");
  const found = await engram.searchMemories({ query: "which screen finish?", user_id: "maria" });
  assert.equal(found.results[0]?.memory.id, added.memory.id);
  await engram.deleteMemory(added.memory.id, { acting_user_id: "maria" });
  await assert.rejects(engram.getMemory(added.memory.id, { acting_user_id: "maria" }), NotFound);

  const turn = session.turn("How much is the Acer?");
  const openai = new OpenAI({ baseURL: llmUrl, apiKey: "sk-loopback" });
  turn.track(await openai.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Acer?" }] }));
  turn.track(await openai.responses.create({ model: "gpt-4.1-mini", input: "Acer price?" }));
  turn.assistantResponse = "It is $549.";
  const recorded = await turn.record();
  assert.equal(recorded.turn.steps.length, 2);
  const usage = await engram.usage({ group_by: "model" });
  const models = usage.rows.map((row) => row.key);
  assert.ok(models.includes("gpt-4o-mini") && models.includes("gpt-4.1-mini"), JSON.stringify(models));
});

test("a turn retried after a dropped response is stored once", async () => {
  const viaProxy = new Engram({ baseUrl: env("ENGRAM_DROPPING_URL"), apiKey: env("ENGRAM_API_KEY"), backoffBase: 0.01 });
  const session = await viaProxy.createSession({ user_id: "maria", agent_id: "ts-retry" });
  const turn = session.turn("Find me a laptop");
  turn.addStep({ step_type: "llm", model: "gpt-4o-mini", input_tokens: 120, output_tokens: 30 });
  const recorded = await turn.record();
  assert.equal(recorded.turn.turn_number, 1);
  const turns = await engram.listTurns(session.id);
  assert.equal(turns.results.length, 1);
  assert.equal((await totals(session.id)).input_tokens, 120);
  // The same logical turn sent again (the key is the turn's) is a replay, not a second turn.
  await turn.record();
  assert.equal((await engram.listTurns(session.id)).results.length, 1);
});

test("the AI SDK middleware adds each call's usage to the session, to the token", async () => {
  const session = await engram.createSession({ user_id: "maria", agent_id: "ts-ai-sdk" });
  const provider = createOpenAICompatible({ name: "loopback", baseURL: llmUrl, apiKey: "sk-loopback", includeUsage: true });
  const model = wrapLanguageModel({ model: provider("gpt-4o-mini"), middleware: engramMiddleware({ session }) });
  const first = await generateText({ model, prompt: "Which laptop is the cheapest?" });
  const streamed = streamText({ model, prompt: "And the lightest one, in a few words?" });
  let text = "";
  for await (const delta of streamed.textStream) text += delta;
  const second = await streamed.usage;
  assert.ok(first.text.length > 0 && text.length > 0);
  const expected = {
    input_tokens: (first.usage.inputTokens ?? 0) + (second.inputTokens ?? 0),
    output_tokens: (first.usage.outputTokens ?? 0) + (second.outputTokens ?? 0),
    cached_tokens: (first.usage.inputTokenDetails?.cacheReadTokens ?? 0) + (second.inputTokenDetails?.cacheReadTokens ?? 0),
    reasoning_tokens: (first.usage.outputTokenDetails?.reasoningTokens ?? 0) + (second.outputTokenDetails?.reasoningTokens ?? 0),
  };
  assert.ok(expected.input_tokens > 0 && expected.cached_tokens > 0 && expected.reasoning_tokens > 0);
  assert.deepEqual(await totals(session.id), expected);
  const turns = await engram.listTurns(session.id);
  assert.equal(turns.results.length, 2);
  assert.equal(turns.results[0]?.assistant_response, first.text);

  // With a turn: both calls are steps of one turn, recorded once.
  const grouped = await engram.createSession({ user_id: "maria", agent_id: "ts-ai-sdk" });
  const turn = grouped.turn("Compare them");
  const inTurn = wrapLanguageModel({ model: provider("gpt-4o-mini"), middleware: engramMiddleware({ session: grouped, turn }) });
  await generateText({ model: inTurn, prompt: "Compare the Dell and the Acer." });
  await generateText({ model: inTurn, prompt: "Now in one line." });
  const recorded = await turn.record();
  assert.equal(recorded.turn.steps.length, 2);
});

test("bad input throws the client's own errors", async () => {
  const session = await engram.createSession({ user_id: "maria", agent_id: "ts-bad" });
  const invalid = await engram
    .recordTurn(session.id, { steps: "lots" as never, duration_ms: -1 })
    .catch((error: unknown) => error);
  assert.ok(invalid instanceof InvalidRequest, String(invalid));
  assert.ok("steps" in invalid.fields && "duration_ms" in invalid.fields);
  await assert.rejects(engram.createSession({ user_id: 42 as never, agent_id: "" }), InvalidRequest);
  await assert.rejects(engram.recordTurn("5b1c9f0e-0000-4000-8000-000000000000", {}), NotFound);
  await assert.rejects(engram.getSession("not-a-uuid"), NotFound);

  const other = new Engram({ baseUrl: env("ENGRAM_URL"), apiKey: env("ENGRAM_OTHER_API_KEY") });
  await assert.rejects(other.getSession(session.id), NotFound);
  await assert.rejects(other.recordTurn(session.id, { user_message: "hi" }), NotFound);
  await assert.rejects(other.session(session.id).selections(), NotFound);
  assert.equal((await engram.listTurns(session.id)).results.length, 0);

  const badKey = new Engram({ baseUrl: env("ENGRAM_URL"), apiKey: "nope" });
  await assert.rejects(badKey.listSessions(), AuthenticationError);
  const nowhere = new Engram({ baseUrl: "http://127.0.0.1:9", apiKey: "k", maxRetries: 1, backoffBase: 0.01 });
  await assert.rejects(nowhere.listSessions(), APIConnectionError);
  const saved = process.env["ENGRAM_API_KEY"];
  delete process.env["ENGRAM_API_KEY"];
  try {
    assert.throws(() => new Engram({ baseUrl: env("ENGRAM_URL") }), /ENGRAM_API_KEY/);
  } finally {
    process.env["ENGRAM_API_KEY"] = saved;
  }
});
