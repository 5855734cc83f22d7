/**
 * Anthropic's errors and rate-limit headers in the compatible terms
 * (CONTRACT.md, Native providers; Anthropic's "Errors" and "Rate limits"
 * references):
 * - a 4xx body `{"type":"error","error":{"type","message"}}` becomes
 *   `{"error":{"message","type","param":null,"code":null}}` with the same
 *   status (401/403, 429, 5xx and 529 are classified by status in
 *   routing/failure.ts: 502 upstream_auth_failed, rate limited, transient);
 * - an `event: error` inside a stream is a failure of the attempt, kind by
 *   its error type (overloaded and api errors transient, rate limits
 *   rate limited), with the status it would have had outside a stream;
 * - `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}` →
 *   `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the reset's
 *   RFC 3339 time as OpenAI's duration (`12s`); `retry-after` as is.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { HeaderList } from '../../../protocol/frames.js';
import { allowlistedHeaders, safeHeaderValue } from '../../rate-limit-headers.js';
import { AttemptFailure, redactKeys } from '../../routing/failure.js';
import { errorObject, isRecord, stringOr, textMessage, tryParse } from '../compatible.js';

export function anthropicError(status: number, text: string): { readonly contentType: string; readonly body: Uint8Array } {
  const json = tryParse(text);
  const error = isRecord(json) && isRecord(json.error) ? json.error : null;
  if (error === null) return errorObject(status, { message: textMessage(status, text), type: null, code: null, param: null });
  return errorObject(status, { message: stringOr(error.message) ?? textMessage(status, ''), type: stringOr(error.type), code: null, param: null });
}

/** What each in-stream error type would have been answered with outside a stream. */
const STREAM_ERROR_STATUS: Readonly<Record<string, number>> = {
  overloaded_error: 529,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
};

/** An `event: error` of a stream, as the failure of its attempt. */
export function streamErrorFailure(data: unknown): AttemptFailure {
  const error = isRecord(data) && isRecord(data.error) ? data.error : {};
  const type = stringOr(error.type) ?? 'error';
  const status = STREAM_ERROR_STATUS[type] ?? 500;
  const detail = redactKeys(`${type}: ${stringOr(error.message) ?? ''}`);
  const message = `the provider stream reported an error (${type})`;
  if (status === 429) return new AttemptFailure('rate_limited', 'upstream_error', message, status, [], null, 0, detail);
  return new AttemptFailure('transient', 'upstream_error', message, status, [], null, 0, detail);
}

const RATE_LIMIT_PREFIX = 'anthropic-ratelimit-';
const RENAMED: ReadonlyArray<readonly [string, string]> = [
  ['anthropic-ratelimit-requests-limit', 'x-ratelimit-limit-requests'],
  ['anthropic-ratelimit-requests-remaining', 'x-ratelimit-remaining-requests'],
  ['anthropic-ratelimit-requests-reset', 'x-ratelimit-reset-requests'],
  ['anthropic-ratelimit-tokens-limit', 'x-ratelimit-limit-tokens'],
  ['anthropic-ratelimit-tokens-remaining', 'x-ratelimit-remaining-tokens'],
  ['anthropic-ratelimit-tokens-reset', 'x-ratelimit-reset-tokens'],
];

export function anthropicHeaders(raw: IncomingHttpHeaders, now?: number): HeaderList {
  const out = allowlistedHeaders(raw);
  // Only an answer that has Anthropic's rate-limit headers is looked through for each of them (every answer passes here).
  let renamed = false;
  for (const name in raw) {
    if (name.startsWith(RATE_LIMIT_PREFIX)) {
      renamed = true;
      break;
    }
  }
  if (!renamed) return out;
  now ??= Date.now();
  for (const [from, to] of RENAMED) {
    const value = raw[from];
    const first = Array.isArray(value) ? value[0] : value;
    if (first === undefined || !safeHeaderValue(first)) continue;
    out.push(to, to.startsWith('x-ratelimit-reset-') ? resetDuration(first, now) : first);
  }
  return out;
}

/** An RFC 3339 time as the seconds until it, OpenAI's way (`12s`); a value that is no time is kept. */
function resetDuration(value: string, now: number): string {
  const at = Date.parse(value);
  return Number.isNaN(at) ? value : `${Math.max(0, Math.ceil((at - now) / 1000))}s`;
}
