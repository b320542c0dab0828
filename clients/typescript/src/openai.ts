/** Steps from the `openai` npm client's responses (Chat Completions and Responses API),
 * read structurally so this package needs no runtime dependency on `openai`. */

import type { StepInput } from "./client.js";

function field(value: unknown, name: string): unknown {
  return value !== null && typeof value === "object"
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

/** A step from a Chat Completion or a Responses `Response` (objects or their JSON): model,
 * usage as the provider reported it, duration. Without usage, zero tokens. */
export function stepFromResponse(
  response: unknown,
  options: { stepType?: string; model?: string; durationMs?: number } = {},
): StepInput {
  const usage = field(response, "usage");
  const step: StepInput = {
    step_type: options.stepType ?? "llm",
    model: String(options.model ?? field(response, "model") ?? ""),
    duration_ms: Math.max(0, Math.round(options.durationMs ?? 0)),
  };
  if (usage !== null && typeof usage === "object") {
    step.usage = JSON.parse(JSON.stringify(usage)) as Record<string, unknown>;
  } else {
    step.input_tokens = 0;
    step.output_tokens = 0;
  }
  return step;
}
