/**
 * Errors as exceptions: each carries the API's `code`, `message` and `fields`, so an agent
 * can branch on what went wrong instead of parsing text. The same classes as the Python SDK.
 */

export type ErrorFields = Record<string, string[]>;

/** Anything the client throws. */
export class EngramError extends Error {
  override name = "EngramError";
}

/** The server could not be reached, or the connection dropped, after every retry. */
export class APIConnectionError extends EngramError {
  override name = "APIConnectionError";
}

/** The server answered with an error: `status`, `code`, `message`, `fields`, `body`. */
export class APIError extends EngramError {
  override name = "APIError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: ErrorFields = {},
    readonly body: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(`${status} ${code}: ${message}`);
  }

  /** Seconds the server asked to wait (`Retry-After`), if it said. */
  get retryAfter(): number | undefined {
    const value = Number(this.headers["retry-after"]);
    return this.headers["retry-after"] !== undefined && Number.isFinite(value) ? value : undefined;
  }
}

/** 400: `fields` names each bad field. */
export class InvalidRequest extends APIError { override name = "InvalidRequest"; }
/** 401: no key, or a bad or revoked one. */
export class AuthenticationError extends APIError { override name = "AuthenticationError"; }
export class PermissionDenied extends APIError { override name = "PermissionDenied"; }
/** 404: no such object for this key's tenant (another tenant's id looks the same). */
export class NotFound extends APIError { override name = "NotFound"; }
/** 404 `unresolved`: a reference matched no item. */
export class Unresolved extends NotFound { override name = "Unresolved"; }
export class Conflict extends APIError { override name = "Conflict"; }
/** 410: the session takes no more writes. */
export class SessionExpired extends APIError { override name = "SessionExpired"; }
export class PayloadTooLarge extends APIError { override name = "PayloadTooLarge"; }
/** 422: the Idempotency-Key was already used with another body. */
export class IdempotencyKeyReused extends APIError { override name = "IdempotencyKeyReused"; }
/** 429 that is not a budget. */
export class RateLimited extends APIError { override name = "RateLimited"; }
/** 429 `budget_exceeded`: the session's budget is spent. */
export class BudgetExceeded extends RateLimited { override name = "BudgetExceeded"; }
/** 503: a dependency of the server is down. */
export class ServiceUnavailable extends APIError { override name = "ServiceUnavailable"; }
/** Any other 5xx. */
export class ServerError extends APIError { override name = "ServerError"; }

type ErrorClass = new (
  status: number,
  code: string,
  message: string,
  fields?: ErrorFields,
  body?: Record<string, unknown>,
  headers?: Record<string, string>,
) => APIError;

const BY_STATUS: Record<number, ErrorClass> = {
  400: InvalidRequest,
  401: AuthenticationError,
  403: PermissionDenied,
  404: NotFound,
  409: Conflict,
  410: SessionExpired,
  413: PayloadTooLarge,
  422: IdempotencyKeyReused,
  429: RateLimited,
  503: ServiceUnavailable,
};
const BY_CODE: Record<string, ErrorClass> = {
  unresolved: Unresolved,
  budget_exceeded: BudgetExceeded,
};

/** The exception for an error answer; a body not in the API's shape still maps by status. */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers: Record<string, string>,
): APIError {
  const record = body !== null && typeof body === "object" ? (body as Record<string, unknown>) : {};
  const raw = record["error"];
  const error = raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>) : {};
  const code = String(error["code"] || `http_${status}`);
  const message = String(error["message"] || "The server answered with an error.");
  const cls = BY_CODE[code] ?? BY_STATUS[status] ?? (status >= 500 ? ServerError : APIError);
  return new cls(status, code, message, (error["fields"] as ErrorFields) ?? {}, record, headers);
}
