/**
 * A Vercel AI SDK (`ai` package) language-model middleware that records each model call's
 * usage as an Engram step:
 *
 *   const model = wrapLanguageModel({ model: provider("gpt-4.1-mini"),
 *                                     middleware: engramMiddleware({ session }) });
 *   await generateText({ model, prompt });
 *
 * With a `turn`, each call is a step of that turn (recorded when the caller records it);
 * without, each call is recorded at once as a turn of its own, under its own
 * Idempotency-Key. Typed structurally (the `LanguageModelV3Middleware` shape of `ai` 6), so
 * this package needs no runtime dependency on `ai`.
 */

import type { StepInput } from "./client.js";
import type { Session, Turn } from "./session.js";

/** The parts of `LanguageModelV3Usage` read here. */
interface ModelUsage {
  inputTokens?: { total?: number; cacheRead?: number; cacheWrite?: number };
  outputTokens?: { total?: number; reasoning?: number };
  raw?: unknown;
}

interface ModelInfo {
  modelId: string;
  provider: string;
}

interface GenerateResult {
  usage: ModelUsage;
  content?: Array<{ type: string; text?: string }>;
}

interface StreamPart {
  type: string;
  usage?: ModelUsage;
  delta?: string;
}

interface StreamResult {
  stream: ReadableStream<unknown>;
}

export interface EngramMiddlewareOptions {
  /** The session the calls are spent in. */
  session: Session;
  /** Add each call as a step of this turn instead of recording a turn per call. */
  turn?: Turn;
  stepType?: string;
}

const count = (value: unknown) => (typeof value === "number" && value >= 0 ? value : 0);

/** A step from the AI SDK's usage: its totals (input with cached, output with reasoning,
 * Engram's convention), or the provider's raw usage when the provider kept it. */
export function stepFromUsage(usage: ModelUsage, model: string, durationMs: number, stepType = "llm"): StepInput {
  const step: StepInput = { step_type: stepType, model, duration_ms: Math.max(0, Math.round(durationMs)) };
  if (usage.raw !== null && typeof usage.raw === "object" && Object.keys(usage.raw).length) {
    step.usage = JSON.parse(JSON.stringify(usage.raw)) as Record<string, unknown>;
    return step;
  }
  step.input_tokens = count(usage.inputTokens?.total);
  step.output_tokens = count(usage.outputTokens?.total);
  step.cached_tokens = count(usage.inputTokens?.cacheRead);
  step.cache_write_tokens = count(usage.inputTokens?.cacheWrite);
  step.reasoning_tokens = count(usage.outputTokens?.reasoning);
  return step;
}

export function engramMiddleware(options: EngramMiddlewareOptions) {
  const { session, turn, stepType = "llm" } = options;

  async function record(step: StepInput, answer: string): Promise<void> {
    if (turn) {
      turn.addStep(step);
      return;
    }
    await session.recordTurn({ assistant_response: answer, steps: [step] });
  }

  return {
    specificationVersion: "v3" as const,

    async wrapGenerate<R extends GenerateResult>(call: {
      doGenerate: () => PromiseLike<R>;
      model: ModelInfo;
    }): Promise<R> {
      const started = performance.now();
      const result = await call.doGenerate();
      const answer = (result.content ?? [])
        .filter((part) => part.type === "text")
        .map((part) => part.text ?? "")
        .join("");
      const step = stepFromUsage(result.usage, call.model.modelId, performance.now() - started, stepType);
      await record(step, answer);
      return result;
    },

    async wrapStream<R extends StreamResult>(call: {
      doStream: () => PromiseLike<R>;
      model: ModelInfo;
    }): Promise<R> {
      const started = performance.now();
      const result = await call.doStream();
      const text: string[] = [];
      const watch = new TransformStream<StreamPart, StreamPart>({
        async transform(part, controller) {
          if (part.type === "text-delta" && typeof part.delta === "string") text.push(part.delta);
          if (part.type === "finish" && part.usage) {
            const step = stepFromUsage(part.usage, call.model.modelId, performance.now() - started, stepType);
            await record(step, text.join(""));
          }
          controller.enqueue(part);
        },
      });
      const stream = (result.stream as ReadableStream<StreamPart>).pipeThrough(watch);
      return { ...result, stream } as R;
    },
  };
}
