/**
 * The one catalogue of errors the gateway makes: code → HTTP status and
 * default message. Everything that answers with an error looks its code up
 * here; workers send only `{ code, message }` across the thread boundary and
 * the front rebuilds the body from this table (class prototypes do not
 * survive a worker hop).
 *
 * Every body has the shape of spec 000 "Error object" and CONTRACT.md:
 * `{"error":{"message":…,"type":"gateway_error","code":…}}`.
 */

export const ERRORS = {
  // spec 000, Authentication: the message of the shown case, kept verbatim.
  invalid_api_key: { status: 401, message: 'invalid or missing bearer token' },
  route_not_found: { status: 404, message: 'no such route' },
  method_not_allowed: { status: 405, message: 'method not allowed on this route' },
  model_not_found: { status: 404, message: 'model not found' },
  // spec 000, Rules 1–2 and CONTRACT.md: malformed or invalid input → 400.
  invalid_json: { status: 400, message: 'request body is not valid JSON' },
  invalid_body: { status: 400, message: 'request body must be a JSON object' },
  invalid_request: { status: 400, message: 'invalid request' },
  // CONTRACT.md, HTTP: POST /v1/responses is stateless; a parameter that needs stored state, or that the chat path cannot honour, names itself.
  unsupported_parameter: { status: 400, message: 'a parameter of the request is not supported' },
  // CONTRACT.md, Native providers: an operation the deployment's provider does not have (embeddings on anthropic).
  unsupported_operation: { status: 400, message: 'this model\'s provider does not support this operation' },
  // spec 000, Rules 3: oversized body → 413.
  body_too_large: { status: 413, message: 'request body exceeds the configured limit' },
  headers_too_large: { status: 431, message: 'request headers exceed 16 KiB' },
  credentials_missing: { status: 503, message: 'the provider credentials for this model are not configured' },
  // spec 000, Rules 4: upstream failures → 502, one code per way of failing.
  upstream_error: { status: 502, message: 'the provider answered with a server error' },
  upstream_unreachable: { status: 502, message: 'could not connect to the provider' },
  upstream_connect_timeout: { status: 502, message: 'timed out connecting to the provider' },
  upstream_headers_timeout: { status: 502, message: 'timed out waiting for the provider to answer' },
  upstream_idle_timeout: { status: 502, message: 'the provider stopped sending data' },
  upstream_timeout: { status: 502, message: 'the provider request exceeded its total timeout' },
  upstream_invalid_response: { status: 502, message: 'the provider response is not in the compatible format' },
  upstream_response_too_large: { status: 502, message: 'the provider response exceeds the configured limit' },
  upstream_reset: { status: 502, message: 'the provider closed the connection mid-response' },
  upstream_redirect: { status: 502, message: 'the provider answered with a redirect, which the gateway does not follow' },
  // CONTRACT.md, HTTP: a provider 401/403 rejects the gateway's own credentials, not the caller's.
  upstream_auth_failed: { status: 502, message: 'the provider rejected the gateway credentials for this model' },
  // CONTRACT.md, Routing for high volume: the only deployment that could serve asked for a pause (a provider 429 with
  // Retry-After) longer than max_retry_wait or the request's deadline; the wait left is the answer's Retry-After.
  rate_limited: { status: 429, message: 'the provider asked for a pause on this model; retry after the Retry-After delay' },
  // CONTRACT.md, Native providers: a bedrock deployment on the standard AWS credential chain, which gave none (the message names the sources it tried).
  upstream_credentials_unavailable: { status: 502, message: 'the AWS credential chain gave no credentials for this model' },
  // CONTRACT.md, Routing for high volume: every deployment of the group and its fallbacks is cooling or at its cap.
  no_deployment_available: { status: 503, message: 'no deployment of this model can take the request now; retry after the Retry-After delay' },
  // CONTRACT.md, Inference-aware routing, Shedding: a sheddable request while every replica with fresh metrics is saturated.
  capacity_exhausted: { status: 429, message: 'every replica of this model is saturated; retry after the Retry-After delay' },
  worker_crashed: { status: 502, message: 'the worker handling this request stopped' },
  overloaded: { status: 503, message: 'the gateway is at capacity, retry shortly' },
  shutting_down: { status: 503, message: 'the gateway is shutting down' },
  internal_error: { status: 500, message: 'internal gateway error' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** An error as it crosses the thread boundary: data, not a class. */
export interface GatewayErrorData {
  code: ErrorCode;
  /** Overrides the catalogue's message when the case has something to add (e.g. which field). */
  message?: string;
}

export const ERROR_TYPE = 'gateway_error';

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERRORS, value);
}

export function errorStatus(code: ErrorCode): number {
  return ERRORS[code].status;
}

/** The JSON body for an error, as a string ready to send. */
export function errorBody(code: ErrorCode, message?: string): string {
  return JSON.stringify({ error: { message: message ?? ERRORS[code].message, type: ERROR_TYPE, code } });
}

/** Thrown inside the gateway where a coded error should end the request. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message?: string) {
    super(message ?? ERRORS[code].message);
    this.code = code;
    this.name = 'GatewayError';
  }
  toData(): GatewayErrorData {
    return { code: this.code, message: this.message };
  }
}
