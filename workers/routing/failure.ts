/**
 * How one attempt failed, in the terms of CONTRACT.md's failure table. An
 * adapter throws an AttemptFailure for an answer it can classify (a
 * provider status); anything else it throws (a GatewayError for a reset, a
 * timeout, a body that is not the compatible format) is classified here.
 * The attempt loop (attempts.ts) decides from the kind alone.
 */
import { joinForNow, type Payload } from '../../protocol/channel.js';
import type { FailureCode } from '../../protocol/deployment-state.js';
import { GatewayError, isErrorCode, type ErrorCode } from '../../protocol/errors.js';
import type { FaultFrame, HeaderList } from '../../protocol/frames.js';
import { utf8Text } from '../bytes.js';

export type FailureKind =
  /** Connect error, reset, connect or headers timeout, 5xx, 408, 529, a body not in the compatible format: retried, counts toward allowed_fails, falls back. */
  | 'transient'
  /** 429: retried on another deployment first, cools at once. */
  | 'rate_limited'
  /** 401, 403: the gateway's credentials were refused; retried on another deployment, cools at once, answered as 502 upstream_auth_failed. */
  | 'auth'
  /** The prompt is too long for this model: only context_window_fallbacks. */
  | 'context_window'
  /** Any other provider 4xx: the caller's answer, passed through at once. */
  | 'client_error'
  /** Not the upstream's doing (an internal error): answered at once, weighs on nothing. */
  | 'fatal';

/** A provider's own answer, kept so that it can be passed through if its failure is the last. */
export interface ProviderAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly headers: HeaderList;
  readonly body: Payload;
}

export class AttemptFailure extends Error {
  override name = 'AttemptFailure';
  constructor(
    readonly kind: FailureKind,
    /** The gateway's answer when there is no provider answer to pass through, and the deployment's last_error code. */
    readonly code: FailureCode,
    message: string,
    /** The provider's HTTP status; 0 when there was no answer. */
    readonly status = 0,
    /** The allowlisted provider headers: kept on the gateway's answer too (Retry-After on a 502). */
    readonly headers: HeaderList = NO_HEADERS,
    readonly answer: ProviderAnswer | null = null,
    /** The provider's Retry-After, in ms; 0 when it sent none. */
    readonly retryAfterMs = 0,
    /** What the provider said, keys redacted: for the log, never for the caller (401, 403). */
    readonly detail: string | null = null,
  ) {
    super(message);
  }
}

const NO_HEADERS: HeaderList = [];

/** Any error an attempt ended with, as a failure of the table. */
export function classify(err: unknown): AttemptFailure {
  if (err instanceof AttemptFailure) return err;
  if (err instanceof GatewayError) return new AttemptFailure(err.code.startsWith('upstream_') ? 'transient' : 'fatal', err.code, err.message);
  const code = (err as { code?: unknown } | null)?.code;
  if (isErrorCode(code)) return new AttemptFailure(code.startsWith('upstream_') ? 'transient' : 'fatal', code, String((err as Error).message));
  return new AttemptFailure('fatal', 'internal_error', 'internal gateway error');
}

/** The error a failure is answered with when its provider answer is not passed through. */
export function gatewayErrorOf(failure: AttemptFailure): { code: ErrorCode; message: string } {
  return { code: failure.code === 'rate_limited' ? 'upstream_error' : failure.code, message: failure.message };
}

/**
 * A provider's answer that is not a success, by status (the failure table):
 * 5xx, 408 and 529 are transient; 429 rate limited; 401 and 403 auth (and
 * a provider's own "invalid key" 4xx, `credentialsRejected`: Gemini's 400
 * API_KEY_INVALID); a 4xx saying the prompt is too long, context window;
 * any other 4xx the caller's. `body` is read for 4xx only (a 5xx's body is
 * dropped unread).
 */
export function providerFailure(status: number, headers: HeaderList, retryAfterMs: number, contentType: string, body: Payload | null, credentialsRejected = false): AttemptFailure {
  if (status >= 500 || status === 408 || status < 200) {
    return new AttemptFailure('transient', 'upstream_error', `the provider answered with status ${status}`, status, headers, null, retryAfterMs);
  }
  const answer = body === null ? null : { status, contentType, headers, body };
  if (status === 429) return new AttemptFailure('rate_limited', 'rate_limited', 'the provider is rate limiting this deployment', status, headers, answer, retryAfterMs);
  if (status === 401 || status === 403 || credentialsRejected) {
    const detail = body === null ? null : redactKeys(answerText(body));
    return new AttemptFailure('auth', 'upstream_auth_failed', 'the provider rejected the gateway credentials for this model', status, headers, null, retryAfterMs, detail);
  }
  if (body !== null && isPromptTooLong(body)) return new AttemptFailure('context_window', 'invalid_request', 'the prompt is too long for this model', status, headers, answer);
  return new AttemptFailure('client_error', 'invalid_request', `the provider answered with status ${status}`, status, headers, answer);
}

/** OpenAI's `context_length_exceeded`, Anthropic's `prompt is too long`, Bedrock's `Input is too long for requested model`. */
const PROMPT_TOO_LONG = /context_length_exceeded|prompt is too long|input is too long/i;
/** An error body is small; a larger one is not searched past this. */
const SEARCH_BYTES = 64 * 1024;

function isPromptTooLong(body: Payload): boolean {
  const bytes = body instanceof Uint8Array ? body : joinForNow(body);
  return PROMPT_TOO_LONG.test(utf8Text(bytes, 0, Math.min(bytes.length, SEARCH_BYTES)));
}

/**
 * `retry-after-ms`, else `retry-after` (seconds, or an HTTP date), in ms;
 * 0 when absent or unreadable.
 */
export function retryAfterMs(headers: Record<string, string | string[] | undefined>): number {
  const ms = Number(first(headers['retry-after-ms']));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const value = first(headers['retry-after']);
  if (value === undefined) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds > 0 ? seconds * 1000 : 0;
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}

const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** Key-like strings (`sk-…`, bearer tokens, long opaque runs) out of a provider's text before it is logged. */
export function redactKeys(text: string): string {
  return text
    .slice(0, 500)
    .replace(/(bearer\s+)\S+/gi, '$1[redacted]')
    .replace(/\b(?:sk|pk|rk|key|api|xai|gsk|AIza)[-_A-Za-z0-9]{8,}/g, '[redacted]')
    .replace(/[A-Za-z0-9_\-+/=]{24,}/g, '[redacted]');
}

/**
 * An error the gateway did not expect, as the log gets it (the caller gets 500 `internal_error`
 * and the generic message): its name and message with key-like strings redacted, and the code
 * locations of its stack (the frames only: the stack's first lines repeat the message).
 */
export function faultOf(requestId: string, err: unknown): FaultFrame {
  const error = err instanceof Error ? `${err.name}: ${err.message}` : `thrown: ${String(err)}`;
  const frames = err instanceof Error && typeof err.stack === 'string' ? err.stack.split('\n').filter((line) => /^\s+at /.test(line)).slice(0, MAX_STACK_FRAMES) : [];
  return { t: 'fault', requestId, error: redactKeys(error), stack: frames.length === 0 ? null : frames.map((line) => line.trim()).join('\n') };
}

const MAX_STACK_FRAMES = 12;

/** The text of a provider's error body, for the log (never for the caller). */
function answerText(body: Payload): string {
  const bytes = body instanceof Uint8Array ? body : joinForNow(body);
  return utf8Text(bytes, 0, Math.min(bytes.length, 2048));
}
