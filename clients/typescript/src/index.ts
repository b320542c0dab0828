/**
 * Engram's TypeScript client: sessions, turns with LLM spend (one Idempotency-Key per
 * logical turn, retries with backoff), memories, context, cart, usage; step tracking for the
 * `openai` npm client and a Vercel AI SDK middleware.
 *
 *   const engram = new Engram();  // ENGRAM_URL, ENGRAM_API_KEY
 *   const session = await engram.resumeSession({ user_id: "maria", agent_id: "shop",
 *                                                external_session_id: "chat-42" });
 *   const turn = session.turn("Find a laptop");
 *   turn.track(await openai.chat.completions.create({ ... }));
 *   await turn.record();
 */

export * from "./errors.js";
export { Engram, newIdempotencyKey } from "./client.js";
export type { EngramOptions, Schemas, SessionData, StepInput, TurnBody, TurnRecorded } from "./client.js";
export { Session, Turn } from "./session.js";
export { stepFromResponse } from "./openai.js";
export { engramMiddleware, stepFromUsage } from "./ai-sdk.js";
export type { EngramMiddlewareOptions } from "./ai-sdk.js";
export type { components, paths } from "./schema.js";
