/**
 * Anthropic's wire shapes that both threads write: errors and the stream's
 * keepalive. Errors in Anthropic's shape (CONTRACT.md, Anthropic Messages API
 * (inbound): every error, the type by status). The Anthropic SDKs pick their
 * error class by status and Claude Code its retries by `error.type`, so an
 * error in the compatible envelope is as good as none to them.
 *
 * | status | `error.type` |
 * |---|---|
 * | 400 | `invalid_request_error` |
 * | 401 | `authentication_error` |
 * | 402 | `billing_error` (Anthropic's; the contract is silent) |
 * | 403 | `permission_error` |
 * | 404 | `not_found_error` |
 * | 413 | `request_too_large` |
 * | 429 | `rate_limit_error` |
 * | 503, 529 | `overloaded_error` |
 * | other 5xx | `api_error` |
 * | other 4xx (405, 408, 409, 422, 431, …) | `invalid_request_error` (the contract is silent; the caller's request was at fault) |
 */
import { errorStatus, isErrorCode } from './errors.js';

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

const BY_STATUS: Readonly<Record<number, AnthropicErrorType>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  503: 'overloaded_error',
  529: 'overloaded_error',
};

/**
 * The `error.type` for an HTTP status.
 *
 * @example
 *   errorTypeOf(529) // → 'overloaded_error'
 */
export function errorTypeOf(status: number): AnthropicErrorType {
  const named = BY_STATUS[status];
  if (named !== undefined) return named;
  return status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error';
}

/** The status of an error by its code: the catalogue's for a gateway code (protocol/errors.ts), else 502 (a provider's word the gateway passes on as its own failure). */
export function statusOfCode(code: string): number {
  return isErrorCode(code) ? errorStatus(code) : 502;
}

/**
 * The body of an error answer: `{"type":"error","error":{"type","message"},"request_id"}`.
 *
 * @example
 *   errorBody(400, '"max_tokens" is required', 'req_1')
 *   // → '{"type":"error","error":{"type":"invalid_request_error","message":"\"max_tokens\" is required"},"request_id":"req_1"}'
 */
export function errorBody(status: number, message: string, requestId: string | null): string {
  return JSON.stringify({ type: 'error', error: { type: errorTypeOf(status), message }, request_id: requestId });
}

/**
 * A failure the chat path answers with (its code and message, as ClientSink.fail gets them) as an
 * Anthropic error answer: the status the code has in the catalogue, and the body.
 *
 * @example
 *   gatewayError({ code: 'no_deployment_available', message: 'no deployment…' }, 'req_1').status // → 503 (overloaded_error)
 */
export function gatewayError(error: { readonly code: string; readonly message: string }, requestId: string | null): { status: number; body: string } {
  const status = statusOfCode(error.code);
  return { status, body: errorBody(status, error.message, requestId) };
}

/**
 * A provider's 4xx in the compatible envelope (`{"error":{"message",…}}`, what every chat
 * adapter answers with, CONTRACT.md, Native providers, Errors) as Anthropic's: same status, the
 * provider's message, the type by status. A body that is not that envelope keeps its text as the
 * message (cut to 1,000 characters), or says the status when it has none.
 */
export function fromCompatibleError(status: number, text: string, requestId: string | null): string {
  let message: string | null = null;
  try {
    const json = JSON.parse(text) as { error?: { message?: unknown } } | null;
    if (typeof json?.error?.message === 'string') message = json.error.message;
  } catch {
    // not JSON: the text itself, below
  }
  const trimmed = text.trim().slice(0, 1000);
  return errorBody(status, message ?? (trimmed.length > 0 ? trimmed : `the provider answered with status ${status}`), requestId);
}

/**
 * A stream's failure after its start, as Anthropic sends it: one `event: error` whose data has no
 * request id (CONTRACT.md: `data: {"type":"error","error":{"type":…,"message":…}}`).
 */
export function errorEvent(type: AnthropicErrorType, message: string): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message } })}\n\n`;
}

/**
 * The keepalive Anthropic sends in a stream (its own spelling, with the space): the front writes it
 * instead of the SSE comment on the Messages routes (CONTRACT.md: `ping` as the keepalive).
 */
export const PING_EVENT = 'event: ping\ndata: {"type": "ping"}\n\n';
