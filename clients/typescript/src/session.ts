/** Session handles (the session-scoped calls with the id bound) and `Turn`, which collects
 * the steps of one agent turn and records them once, under one Idempotency-Key. */

import type { Engram, Schemas, SessionData, StepInput, TurnBody, TurnRecorded } from "./client.js";
import { newIdempotencyKey } from "./client.js";
import type { Query } from "./http.js";
import { stepFromResponse } from "./openai.js";

export class Session {
  readonly id: string;

  constructor(
    readonly client: Engram,
    readonly data: SessionData,
  ) {
    this.id = String(data.id);
  }

  get(): Promise<SessionData> {
    return this.client.getSession(this.id);
  }
  update(body: Schemas["PatchedSessionUpdateRequest"]) {
    return this.client.updateSession(this.id, body);
  }
  delete() {
    return this.client.deleteSession(this.id);
  }
  recordTurn(body: TurnBody, options: { idempotencyKey?: string } = {}) {
    return this.client.recordTurn(this.id, body, options);
  }
  listTurns(query: Query = {}) {
    return this.client.listTurns(this.id, query);
  }
  rollbackTurn(turnNumber: number) {
    return this.client.rollbackTurn(this.id, turnNumber);
  }
  budgetCheck(body: Schemas["BudgetCheckRequest"]) {
    return this.client.budgetCheck(this.id, body);
  }
  storeResults(body: Schemas["ResultsStoreRequest"]) {
    return this.client.storeResults(this.id, body);
  }
  resolve(ref: string, options: { setFocus?: boolean } = {}) {
    return this.client.resolve(this.id, ref, options);
  }
  setFocus(body: Schemas["FocusSetRequest"]) {
    return this.client.setFocus(this.id, body);
  }
  selections() {
    return this.client.selections(this.id);
  }
  addSelection(body: Schemas["SelectionAddRequest"]) {
    return this.client.addSelection(this.id, body);
  }
  removeSelection(mpn: string) {
    return this.client.removeSelection(this.id, mpn);
  }
  reorderSelections(mpns: string[]) {
    return this.client.reorderSelections(this.id, mpns);
  }
  cartLink() {
    return this.client.cartLink(this.id);
  }
  context(query: Query = {}) {
    return this.client.context(this.id, query);
  }

  /** A turn being built; `record()` sends it (again with the same key if called twice). */
  turn(userMessage = "", fields: Partial<TurnBody> = {}): Turn {
    return new Turn(this, { ...fields, user_message: userMessage });
  }
}

export class Turn {
  readonly idempotencyKey = newIdempotencyKey();
  readonly steps: StepInput[] = [];
  assistantResponse = "";
  result: TurnRecorded | undefined;
  private mark = performance.now();

  constructor(
    readonly session: Session,
    readonly fields: Partial<TurnBody>,
  ) {}

  private sinceMark(): number {
    const now = performance.now();
    const elapsed = Math.round(now - this.mark);
    this.mark = now;
    return elapsed;
  }

  addStep(step: StepInput): StepInput {
    this.steps.push(step);
    return step;
  }

  /** A step from an `openai` npm client's Chat Completion or Responses `Response`: model and
   * usage, sent as the provider reported it (Engram normalises it). */
  track(response: unknown, options: { stepType?: string; durationMs?: number } = {}): StepInput {
    const step = stepFromResponse(response, {
      stepType: options.stepType,
      durationMs: options.durationMs ?? this.sinceMark(),
    });
    return this.addStep(step);
  }

  async record(): Promise<TurnRecorded> {
    const body: TurnBody = {
      ...this.fields,
      assistant_response: this.fields.assistant_response ?? this.assistantResponse,
      steps: this.steps,
    };
    this.result = await this.session.recordTurn(body, { idempotencyKey: this.idempotencyKey });
    return this.result;
  }
}
