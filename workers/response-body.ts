/**
 * Reading and checking provider response bodies: bounded by the configured
 * response limit, and checked to be in the compatible format before they
 * are returned as a success.
 */
import { joinForNow, payloadLength } from '../protocol/channel.js';
import type { Operation, Usage } from '../protocol/frames.js';
import { GatewayError } from '../protocol/errors.js';
import { asBuffer, bytesAt, indexOfByte } from './bytes.js';

const decoder = new TextDecoder();

/**
 * Bodies up to this size are parsed whole to check them. Larger ones (an
 * embeddings answer of 16×1536 floats is ~300 KB, and parsing it cost more
 * than everything else the gateway does for the request) are checked by
 * structure: a JSON object with the operation's array, usage read from the
 * small `usage` object alone.
 */
export const FULL_CHECK_BYTES = 64 * 1024;

/** The array every success answer of an operation has. */
const ANSWER_KEYS: Readonly<Record<Operation, string>> = { chat: 'choices', embeddings: 'data', responses: 'output' };

/** Checks a success body (in the pieces it was read in) is the compatible format for `op`; returns its usage. */
export function checkCompatible(op: Operation, body: readonly Uint8Array[]): Usage | null {
  const key = ANSWER_KEYS[op];
  if (payloadLength(body) > FULL_CHECK_BYTES) return checkByStructure(key, body);
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(joinForNow(body)));
  } catch {
    throw new GatewayError('upstream_invalid_response', 'the provider response is not JSON');
  }
  if (!Array.isArray((json as Record<string, unknown> | null)?.[key])) {
    throw new GatewayError('upstream_invalid_response', `the provider response has no "${key}" array`);
  }
  return usageOf(json);
}

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** The first offset at or after `at` that is not JSON whitespace (the length when none is left). */
function skipSpace(bytes: Uint8Array, at: number): number {
  while (isSpace(bytes[at])) at++;
  return at;
}

/**
 * A JSON object whose `key` opens an array, checked without parsing it; usage
 * from the `usage` object alone. The key is looked for in the first piece and
 * usage in the last, where every answer seen has them; only when either is
 * not decided there is the body joined (joinForNow) and searched whole.
 */
function checkByStructure(key: string, body: readonly Uint8Array[]): Usage | null {
  if (firstByte(body) !== 0x7b || lastByte(body) !== 0x7d) throw new GatewayError('upstream_invalid_response', 'the provider response is not a JSON object');
  const whole = body.length === 1;
  let opens = keyOpensArray(asBuffer(body[0] as Uint8Array), key, whole);
  let usage = usageIn(asBuffer(body[body.length - 1] as Uint8Array), whole);
  if (opens === undefined || usage === undefined) {
    const joined = asBuffer(joinForNow(body));
    opens ??= keyOpensArray(joined, key, true);
    if (usage === undefined) usage = usageIn(joined, true);
  }
  if (!opens) throw new GatewayError('upstream_invalid_response', `the provider response has no "${key}" array`);
  return usage ?? null;
}

/** The first byte that is not JSON whitespace, across pieces; undefined for none. */
function firstByte(body: readonly Uint8Array[]): number | undefined {
  for (const piece of body) for (const c of piece) if (!isSpace(c)) return c;
  return undefined;
}

function lastByte(body: readonly Uint8Array[]): number | undefined {
  for (let p = body.length - 1; p >= 0; p--) {
    const piece = body[p] as Uint8Array;
    for (let i = piece.length - 1; i >= 0; i--) if (!isSpace(piece[i])) return piece[i];
  }
  return undefined;
}

/**
 * Whether the first `"key"` is followed by `:` and `[`. `buf` is the whole
 * body or its first piece; for a piece, undefined when the answer lies past
 * its end (the key not in it, or the bytes after it cut off).
 */
function keyOpensArray(buf: Buffer, key: string, whole: boolean): boolean | undefined {
  const at = buf.indexOf(`"${key}"`);
  if (at === -1) return whole ? false : undefined;
  let next = skipSpace(buf, at + key.length + 2);
  if (next >= buf.length) return whole ? false : undefined;
  if (buf[next] !== 0x3a /* : */) return false;
  next = skipSpace(buf, next + 1);
  if (next >= buf.length) return whole ? false : undefined;
  return buf[next] === 0x5b; /* [ */
}

/**
 * Usage from the last `"usage"` and the flat object after it. `buf` is the
 * whole body or its last piece; for a piece, undefined when it holds no
 * `"usage"` (one may be earlier). What follows a `"usage"` in the last piece
 * is the rest of the body, so the object after it is decided there.
 */
function usageIn(buf: Buffer, whole: boolean): Usage | null | undefined {
  const usageAt = buf.lastIndexOf('"usage"');
  if (usageAt === -1) return whole ? null : undefined;
  const open = buf.indexOf(0x7b, usageAt);
  const close = open === -1 ? -1 : buf.indexOf(0x7d, open);
  if (close === -1) return null;
  try {
    return usageOf({ usage: JSON.parse(buf.toString('utf8', open, close + 1)) });
  } catch {
    return null;
  }
}

const USAGE_KEY = [0x22, 0x75, 0x73, 0x61, 0x67, 0x65, 0x22] as const; // "usage"
const NULL = [0x6e, 0x75, 0x6c, 0x6c] as const;
/** Where the `g` of `"usage"` is: the letter looked for, far rarer in JSON than the quote. */
const USAGE_G = 4;

/**
 * The offset of the first `"usage"` at or after `from` that is followed by
 * a colon and a value other than `null`, or -1. Quotes inside a JSON string
 * are escaped, so JSON text without one has no usage to read; one may still
 * be a false alarm (in a string after an escaped quote, or a nested key),
 * which the caller's parse settles.
 */
export function usageValueAt(bytes: Uint8Array, from: number): number {
  for (let g = indexOfByte(bytes, USAGE_KEY[USAGE_G], from + USAGE_G); g !== -1; g = indexOfByte(bytes, USAGE_KEY[USAGE_G], g + 1)) {
    const at = g - USAGE_G;
    if (!bytesAt(bytes, at, USAGE_KEY)) continue;
    const colon = skipSpace(bytes, at + USAGE_KEY.length);
    if (bytes[colon] !== 0x3a /* : */) continue; // "usage" as a value, not a key
    if (!bytesAt(bytes, skipSpace(bytes, colon + 1), NULL)) return at;
  }
  return -1;
}

interface UsageJson {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  input_tokens?: unknown;
  output_tokens?: unknown;
}

/**
 * `usage` of a response or stream chunk, when it has one: chat's
 * `prompt_tokens` / `completion_tokens`, or the Responses API's
 * `input_tokens` / `output_tokens` (in a stream, inside the event's `response`).
 */
export function usageOf(json: unknown): Usage | null {
  const holder = json as { usage?: UsageJson; response?: { usage?: UsageJson } } | null;
  const usage = holder?.usage ?? holder?.response?.usage;
  if (!usage || typeof usage !== 'object') return null;
  const count = (v: unknown) => (typeof v === 'number' ? v : 0);
  return { prompt: count(usage.prompt_tokens ?? usage.input_tokens), completion: count(usage.completion_tokens ?? usage.output_tokens) };
}

/** Whether a 4xx body is JSON, to label it correctly when passing it through. */
export function looksLikeJson(body: readonly Uint8Array[]): boolean {
  try {
    JSON.parse(decoder.decode(joinForNow(body)));
    return true;
  } catch {
    return false;
  }
}
