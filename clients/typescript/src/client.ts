/** `Engram`: the API surface (sessions, turns, workspace and cart, context, memories,
 * usage), typed from the server's OpenAPI schema (`src/schema.ts`). */

import type { components, paths } from "./schema.js";
import { type Query, type Request, resolveConfig, Transport } from "./http.js";
import { Session } from "./session.js";

export type Schemas = components["schemas"];
export type SessionData = Schemas["Session"];
type WithDefaults<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;
/** A step as sent: the fields the server defaults may be left out. */
export type StepInput = WithDefaults<
  Schemas["StepInputRequest"],
  "model" | "duration_ms" | "success" | "completion" | "tool_output"
>;
/** A turn as sent: every field may be left out, steps included. */
export type TurnBody = Partial<Omit<Schemas["TurnCreateRequest"], "steps">> & {
  steps?: StepInput[];
};
export type TurnRecorded = Schemas["TurnRecorded"];
export type UsageQuery = NonNullable<paths["/api/v1/usage"]["get"]["parameters"]["query"]>;

export interface EngramOptions {
  /** Default `ENGRAM_URL`, else http://127.0.0.1:8000. */
  baseUrl?: string;
  /** Default `ENGRAM_API_KEY`. */
  apiKey?: string;
  timeoutMs?: number;
  maxRetries?: number;
  /** Seconds: attempt n waits up to backoffBase * 2**n, capped at backoffMax. */
  backoffBase?: number;
  backoffMax?: number;
  fetch?: typeof fetch;
}

export function newIdempotencyKey(): string {
  return `engram-ts-${crypto.randomUUID()}`;
}

const seg = (value: string | number) => encodeURIComponent(String(value));

export class Engram {
  readonly transport: Transport;

  constructor(options: EngramOptions = {}) {
    const { url, key } = resolveConfig(options.baseUrl, options.apiKey);
    const retry = {
      maxRetries: options.maxRetries ?? 3,
      baseDelay: options.backoffBase ?? 0.25,
      maxDelay: options.backoffMax ?? 8,
    };
    this.transport = new Transport(url, key, retry, options.timeoutMs ?? 30_000, options.fetch);
  }

  request<T = unknown>(request: Request): Promise<T> {
    return this.transport.send<T>(request);
  }

  // Sessions ---------------------------------------------------------------------------

  async createSession(body: Schemas["SessionCreateRequest"]): Promise<Session> {
    const data = await this.request<SessionData>({ method: "POST", path: "/sessions", json: body });
    return new Session(this, data);
  }

  /** The unexpired session for (user_id, agent_id, external_session_id), or a new one. Safe
   * to retry: it is keyed by identity. */
  async resumeSession(
    body: Schemas["SessionCreateRequest"] & { external_session_id: string },
  ): Promise<Session> {
    const json = { ...body, resume: true };
    const data = await this.request<SessionData>({
      method: "POST",
      path: "/sessions",
      json,
      retrySafe: true,
    });
    return new Session(this, data);
  }

  /** A handle on an existing session, without a request. */
  session(sessionId: string): Session {
    return new Session(this, { id: sessionId } as SessionData);
  }

  getSession(sessionId: string): Promise<SessionData> {
    return this.request({ method: "GET", path: `/sessions/${seg(sessionId)}` });
  }

  listSessions(query: Query = {}): Promise<Schemas["PaginatedSessionList"]> {
    return this.request({ method: "GET", path: "/sessions", query });
  }

  updateSession(
    sessionId: string,
    body: Schemas["PatchedSessionUpdateRequest"],
  ): Promise<SessionData> {
    return this.request({ method: "PATCH", path: `/sessions/${seg(sessionId)}`, json: body });
  }

  deleteSession(sessionId: string): Promise<null> {
    return this.request({ method: "DELETE", path: `/sessions/${seg(sessionId)}` });
  }

  // Turns ------------------------------------------------------------------------------

  /** Record a turn with its steps. Pass the same `idempotencyKey` for every attempt of one
   * logical turn (a `Turn` does); every retry of this call sends the same key, so the turn
   * is counted once. */
  recordTurn(
    sessionId: string,
    body: TurnBody,
    options: { idempotencyKey?: string } = {},
  ): Promise<TurnRecorded> {
    return this.request({
      method: "POST",
      path: `/sessions/${seg(sessionId)}/turns`,
      json: { steps: [], ...body },
      headers: { "Idempotency-Key": options.idempotencyKey ?? newIdempotencyKey() },
    });
  }

  listTurns(sessionId: string, query: Query = {}): Promise<Schemas["PaginatedTurnList"]> {
    return this.request({ method: "GET", path: `/sessions/${seg(sessionId)}/turns`, query });
  }

  rollbackTurn(sessionId: string, turnNumber: number): Promise<Schemas["RollbackResult"]> {
    const path = `/sessions/${seg(sessionId)}/turns/${seg(turnNumber)}/rollback`;
    return this.request({ method: "POST", path });
  }

  budgetCheck(
    sessionId: string,
    body: Schemas["BudgetCheckRequest"],
  ): Promise<Schemas["BudgetCheckResult"]> {
    const path = `/sessions/${seg(sessionId)}/budget/check`;
    return this.request({ method: "POST", path, json: body });
  }

  // Workspace: results, references, focus, cart, context -----------------------------

  storeResults(
    sessionId: string,
    body: Schemas["ResultsStoreRequest"],
  ): Promise<Schemas["ResultsStored"]> {
    return this.request({ method: "POST", path: `/sessions/${seg(sessionId)}/results`, json: body });
  }

  resolve(sessionId: string, ref: string, options: { setFocus?: boolean } = {}) {
    const query = { ref, set_focus: options.setFocus ? "true" : undefined };
    return this.request<Schemas["Resolved"]>({
      method: "GET",
      path: `/sessions/${seg(sessionId)}/resolve`,
      query,
    });
  }

  setFocus(sessionId: string, body: Schemas["FocusSetRequest"]): Promise<SessionData> {
    return this.request({ method: "PUT", path: `/sessions/${seg(sessionId)}/focus`, json: body });
  }

  selections(sessionId: string): Promise<Schemas["Cart"]> {
    return this.request({ method: "GET", path: `/sessions/${seg(sessionId)}/selections` });
  }

  /** Add to the cart by `mpn` or by reference; adding twice is a no-op. */
  addSelection(sessionId: string, body: Schemas["SelectionAddRequest"]): Promise<Schemas["Cart"]> {
    const path = `/sessions/${seg(sessionId)}/selections`;
    return this.request({ method: "POST", path, json: body });
  }

  removeSelection(sessionId: string, mpn: string): Promise<Schemas["Cart"]> {
    const path = `/sessions/${seg(sessionId)}/selections/${encodeURI(mpn)}`;
    return this.request({ method: "DELETE", path });
  }

  reorderSelections(sessionId: string, mpns: string[]): Promise<Schemas["Cart"]> {
    const path = `/sessions/${seg(sessionId)}/selections/reorder`;
    return this.request({ method: "POST", path, json: { mpns } });
  }

  cartLink(sessionId: string): Promise<Schemas["CartLink"]> {
    return this.request({ method: "POST", path: `/sessions/${seg(sessionId)}/cart-link` });
  }

  /** The assembled context for the next LLM call (`budget`, `acting_user_id`, …). */
  context(sessionId: string, query: Query = {}): Promise<Schemas["Context"]> {
    return this.request({ method: "GET", path: `/sessions/${seg(sessionId)}/context`, query });
  }

  // Long-term memory -------------------------------------------------------------------

  addMemory(body: Schemas["MemoryCreateRequest"]): Promise<Schemas["MemoryAddResult"]> {
    return this.request({ method: "POST", path: "/memories", json: body });
  }

  searchMemories(body: Schemas["MemorySearchRequest"]): Promise<Schemas["SearchResult"]> {
    return this.request({ method: "POST", path: "/memories/search", json: body });
  }

  listMemories(query: Query = {}): Promise<Schemas["PaginatedMemoryList"]> {
    return this.request({ method: "GET", path: "/memories", query });
  }

  getMemory(memoryId: string, acting: Query = {}): Promise<Schemas["Memory"]> {
    return this.request({ method: "GET", path: `/memories/${seg(memoryId)}`, query: acting });
  }

  updateMemory(
    memoryId: string,
    body: Schemas["PatchedMemoryUpdateRequest"],
    acting: Query = {},
  ): Promise<Schemas["Memory"]> {
    const path = `/memories/${seg(memoryId)}`;
    return this.request({ method: "PATCH", path, json: body, query: acting });
  }

  deleteMemory(memoryId: string, acting: Query = {}): Promise<null> {
    return this.request({ method: "DELETE", path: `/memories/${seg(memoryId)}`, query: acting });
  }

  // Users and spend --------------------------------------------------------------------

  /** Erase all the tenant holds about the user: sessions, turns, cart, memories. */
  eraseUser(userId: string): Promise<Schemas["UserErasure"]> {
    return this.request({ method: "DELETE", path: `/users/${seg(userId)}` });
  }

  /** Tokens and cost grouped by day, model, agent, user, step_type or session. */
  usage(query: UsageQuery = { group_by: "day" }): Promise<Schemas["UsageReport"]> {
    return this.request({ method: "GET", path: "/usage", query: query as Query });
  }
}
