/**
 * Gemini's errors in the compatible terms (CONTRACT.md, Native providers;
 * Gemini's "Troubleshooting" page and the google.rpc error model it
 * answers with: `{"error":{"code","message","status","details":[…]}}`):
 * - a 4xx becomes `{"error":{"message","type","param":null,"code"}}` with
 *   the same status, `code` Gemini's `status` (`INVALID_ARGUMENT`, …), or
 *   `context_length_exceeded` when Gemini says the input has more tokens
 *   than the model takes (so `context_window_fallbacks` apply);
 * - a 400 whose `ErrorInfo` reason is `API_KEY_INVALID` (a wrong or
 *   expired key) rejects the gateway's credentials: 502
 *   `upstream_auth_failed`, as a 401 or 403 is;
 * - a 429's `RetryInfo.retryDelay` ("37s") is the `retry-after` Gemini
 *   sends no header for;
 * - an error inside a stream (an error chunk, or the error body Gemini
 *   writes after its events, stream-parser.ts) is the failure of the
 *   attempt, classified as the same error outside a stream would be.
 */
import type { HeaderList } from '../../../protocol/frames.js';
import { AttemptFailure, providerFailure, redactKeys } from '../../routing/failure.js';
import { errorObject, isRecord, stringOr, textMessage, tryParse } from '../compatible.js';
import type { ProviderErrorAnswer } from '../http-attempt.js';

/** Gemini's words for an input over the model's context window. */
const TOO_LONG = /input token count.*exceeds the maximum/i;
/** google.rpc codes → HTTP statuses, for an error that gives no `code`. */
const STATUS_OF: Readonly<Record<string, number>> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

/** A Gemini 4xx body (text) as the compatible error, with what it says about the key and when to retry. */
export function geminiError(status: number, text: string): ProviderErrorAnswer {
  const json = tryParse(text);
  if (!isRecord(json) || !isRecord(json.error)) return errorObject(status, { message: textMessage(status, text), type: null, code: null, param: null });
  return compatibleError(status, json.error);
}

function compatibleError(status: number, error: Record<string, unknown>): ProviderErrorAnswer {
  const message = stringOr(error.message) ?? textMessage(status, '');
  const details = Array.isArray(error.details) ? error.details.filter(isRecord) : [];
  const code = TOO_LONG.test(message) ? 'context_length_exceeded' : stringOr(error.status);
  const answer = errorObject(status, { message, type: null, code, param: null });
  const credentialsRejected = details.some((d) => isType(d, 'ErrorInfo') && d.reason === 'API_KEY_INVALID');
  const retry = details.find((d) => isType(d, 'RetryInfo'));
  const retryAfterMs = retry === undefined ? 0 : durationMs(retry.retryDelay);
  return { ...answer, credentialsRejected, retryAfterMs };
}

const isType = (detail: Record<string, unknown>, type: string): boolean => detail['@type'] === `type.googleapis.com/google.rpc.${type}`;

/** A google.protobuf.Duration in JSON (`"37s"`, `"0.5s"`) in ms; 0 when it is none. */
function durationMs(value: unknown): number {
  const match = typeof value === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(value) : null;
  return match === null ? 0 : Math.ceil(Number(match[1]) * 1000);
}

/** An error inside a stream (the `error` of a chunk), as the failure of its attempt: what the same error outside a stream would be. */
export function streamErrorFailure(error: unknown): AttemptFailure {
  const e = isRecord(error) ? error : {};
  const name = stringOr(e.status) ?? 'error';
  const code = typeof e.code === 'number' && e.code >= 400 && e.code < 600 ? e.code : (STATUS_OF[name] ?? 500);
  const answer = compatibleError(code, e);
  const retryAfterMs = answer.retryAfterMs ?? 0;
  const headers: HeaderList = retryAfterMs > 0 ? ['retry-after', String(Math.ceil(retryAfterMs / 1000))] : [];
  const failure = providerFailure(code, headers, retryAfterMs, answer.contentType, code >= 500 ? null : answer.body, answer.credentialsRejected === true);
  const detail = failure.detail ?? redactKeys(`${name}: ${stringOr(e.message) ?? ''}`);
  // A failure the caller gets no provider answer for says where it came from (it is the SSE error event after the commit).
  const message = failure.answer === null && failure.kind !== 'auth' ? `the provider stream reported an error (${name})` : failure.message;
  return new AttemptFailure(failure.kind, failure.code, message, code, failure.headers, failure.answer, failure.retryAfterMs, detail);
}
