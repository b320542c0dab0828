/**
 * HTTP with retries, as the Python SDK does it. Retried: connection errors, 429 that is not
 * a budget, 503, and 409 `idempotency_in_flight` (the first attempt of the same key is still
 * being stored). Nothing else: a 4xx will answer the same again, and a 500 is a bug to surface.
 *
 * A request whose answer may have been lost after the server acted (a dropped connection) is
 * retried only when it is safe to repeat: GET/PUT/DELETE, or a POST that carries an
 * Idempotency-Key (every turn POST does), so a retried turn is stored once.
 */

import { APIConnectionError, APIError, BudgetExceeded, errorFromResponse } from "./errors.js";

export const DEFAULT_URL = "http://127.0.0.1:8000";
export const USER_AGENT = "engram-client-ts/0.1.0";
const SAFE_METHODS = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);
// The request never reached the server: sending it again cannot act twice.
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

export type Query = Record<string, string | number | boolean | null | undefined>;

export interface Request {
  method: string;
  path: string;
  query?: Query;
  json?: unknown;
  headers?: Record<string, string>;
  /** Repeating it cannot act twice (e.g. resume by identity). */
  retrySafe?: boolean;
}

export interface RetryPolicy {
  maxRetries: number;
  baseDelay: number; // seconds
  maxDelay: number; // seconds
}

/** Exponential backoff with full jitter; a server's Retry-After, when given, is the floor. */
export function backoffDelay(policy: RetryPolicy, attempt: number, retryAfter?: number): number {
  const ceiling = Math.min(policy.maxDelay, policy.baseDelay * 2 ** attempt);
  let wait = Math.random() * ceiling;
  if (retryAfter !== undefined) wait = Math.max(wait, Math.min(retryAfter, policy.maxDelay));
  return wait;
}

function repeatable(request: Request): boolean {
  return (
    Boolean(request.retrySafe) ||
    SAFE_METHODS.has(request.method) ||
    Object.keys(request.headers ?? {}).some((h) => h.toLowerCase() === "idempotency-key")
  );
}

function retryableAnswer(error: APIError): boolean {
  if (error instanceof BudgetExceeded) return false; // a spent budget does not refill by waiting
  if (error.status === 429 || error.status === 503) return true;
  return error.status === 409 && error.code === "idempotency_in_flight";
}

function failureCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === "string" ? cause.code : "";
}

const sleep = (seconds: number) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

export function resolveConfig(baseUrl?: string, apiKey?: string): { url: string; key: string } {
  const env = typeof process !== "undefined" ? process.env : {};
  let url = baseUrl || env["ENGRAM_URL"] || DEFAULT_URL;
  const key = apiKey || env["ENGRAM_API_KEY"] || "";
  if (!key) throw new TypeError("No API key: pass apiKey or set ENGRAM_API_KEY.");
  url = url.replace(/\/+$/, "");
  if (!url.endsWith("/api/v1")) url += "/api/v1";
  return { url, key };
}

export class Transport {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
    readonly retry: RetryPolicy,
    readonly timeoutMs: number,
    private readonly fetchImpl: typeof fetch = globalThis.fetch,
  ) {}

  private url(request: Request): string {
    const url = new URL(this.baseUrl + request.path);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  private async attempt(request: Request): Promise<Response> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.apiKey}`,
      "User-Agent": USER_AGENT,
      Accept: "application/json",
      ...request.headers,
    };
    let body: string | undefined;
    if (request.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(request.json);
    }
    return this.fetchImpl(this.url(request), {
      method: request.method,
      headers,
      body,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
  }

  async send<T = unknown>(request: Request): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.attempt(request);
      } catch (error) {
        const mayRetry = NOT_SENT.has(failureCode(error)) || repeatable(request);
        if (attempt >= this.retry.maxRetries || !mayRetry) {
          const detail = failureCode(error) || (error as Error)?.message || String(error);
          throw new APIConnectionError(`${request.method} ${request.path}: ${detail}`, {
            cause: error,
          });
        }
        await sleep(backoffDelay(this.retry, attempt));
        continue;
      }
      const text = await response.text();
      let data: unknown = null;
      if (text) {
        try {
          data = JSON.parse(text);
        } catch {
          data = { raw: text };
        }
      }
      if (response.ok) return data as T;
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => (headers[name.toLowerCase()] = value));
      const error = errorFromResponse(response.status, data, headers);
      if (attempt >= this.retry.maxRetries || !retryableAnswer(error)) throw error;
      await sleep(backoffDelay(this.retry, attempt, error.retryAfter));
    }
  }
}
