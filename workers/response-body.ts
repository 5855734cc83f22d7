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
const ANSWER_KEYS: Readonly<Record<Operation, string>> = { chat: 'choices', embeddings: 'data', responses: 'output', messages: 'content', count_tokens: 'input_tokens' };

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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const USAGE_KEY = [0x22, 0x75, 0x73, 0x61, 0x67, 0x65, 0x22] as const; // "usage"
const NULL = [0x6e, 0x75, 0x6c, 0x6c] as const;
/** Where the `g` of `"usage"` is: the letter looked for, far rarer in JSON than the quote. */
const USAGE_G = 4;
const G = USAGE_KEY[USAGE_G];

/**
 * Usage from the body's top-level `"usage"` member, read by JSON's
 * structure (depth, strings with their escapes): a "usage" in a string, in
 * a nested object or as a value is passed over, and a usage object with
 * nested details (`prompt_tokens_details`…) is taken whole. Of duplicate
 * keys the last wins, as in JSON.parse. Only the usage value is decoded and
 * parsed.
 *
 * The scan runs back from the end: usage follows the array in every answer
 * seen, so only the bytes after it are read. When the last `"usage"` of the
 * whole body is in its first half (usage before the array), the body is
 * read forward to it instead.
 *
 * `buf` is the whole body or its last piece; for a piece, undefined when it
 * holds no `"usage"` or the scan reaches its start undecided (usage may be
 * earlier).
 */
function usageIn(buf: Buffer, whole: boolean): Usage | null | undefined {
  const last = lastIndexOfUsage(buf);
  if (last === -1) return whole ? null : undefined;
  if (whole && last < buf.length - last) {
    const value = lastUsageValueForward(buf, last);
    return value === -1 ? null : usageValue(buf, value);
  }
  let depth = 0;
  for (let i = buf.length - 1; i >= 0; i--) {
    const c = buf[i] as number;
    if (c === QUOTE) {
      const open = stringStart(buf, i);
      if (open === -1) return whole ? null : undefined;
      if (depth === 1 && isUsageKey(buf, open, i)) return usageValue(buf, memberValue(buf, i));
      i = open;
    } else if (c >= 0x5b /* [ and above: one test passes over digits, commas and spaces */) {
      if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth++;
      // Back at the top-level object's `{`: it has no usage member.
      else if ((c === 0x7b /* { */ || c === 0x5b) && --depth === 0) return null;
    }
  }
  return whole ? null : undefined;
}

/** Where the value of the last top-level "usage" member at or before `last` starts, read from the body's start; -1 for none. */
function lastUsageValueForward(buf: Buffer, last: number): number {
  let depth = 0;
  let value = -1;
  for (let i = 0; i <= last; i++) {
    const c = buf[i] as number;
    if (c === QUOTE) {
      const close = stringEnd(buf, i);
      if (close === -1) break;
      if (depth === 1 && isUsageKey(buf, i, close)) value = memberValue(buf, close);
      i = close;
    } else if (c >= 0x5b) {
      if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) depth--;
    }
  }
  return value;
}

/** Whether the string from `open` to `close` (its quotes) is "usage" followed by a colon. */
const isUsageKey = (buf: Buffer, open: number, close: number): boolean =>
  close - open === USAGE_KEY.length - 1 && bytesAt(buf, open, USAGE_KEY) && memberValue(buf, close) !== -1;

/** After a string that closes at `close`: where its member's value starts when it is a key (a colon follows), else -1. */
function memberValue(buf: Buffer, close: number): number {
  const colon = skipSpace(buf, close + 1);
  return buf[colon] === 0x3a /* : */ ? skipSpace(buf, colon + 1) : -1;
}

/** Usage from the value at `at`: an object (or array) taken to its matching end and parsed; any other value has none. */
function usageValue(buf: Buffer, at: number): Usage | null {
  const c = buf[at];
  if (c !== 0x7b && c !== 0x5b) return null;
  const end = valueEnd(buf, at);
  if (end === -1) return null;
  try {
    return usageOf({ usage: JSON.parse(buf.toString('utf8', at, end + 1)) });
  } catch {
    return null;
  }
}

/** The offset of the bracket that closes the one at `open`, strings skipped; -1 when the body ends first. */
function valueEnd(buf: Buffer, open: number): number {
  let depth = 0;
  for (let i = open; i < buf.length; i++) {
    const c = buf[i] as number;
    if (c === QUOTE) {
      i = stringEnd(buf, i);
      if (i === -1) return -1;
    } else if (c >= 0x5b) {
      if (c === 0x7b || c === 0x5b) depth++;
      else if ((c === 0x7d || c === 0x5d) && --depth === 0) return i;
    }
  }
  return -1;
}

/** The closing quote of the string that opens at `open` (the next quote after an even run of backslashes), or -1. */
function stringEnd(buf: Buffer, open: number): number {
  let q = indexOfByte(buf, QUOTE, open + 1);
  while (q !== -1 && backslashesBefore(buf, q) % 2 === 1) q = indexOfByte(buf, QUOTE, q + 1);
  return q;
}

/**
 * The opening quote of the string that closes at `close`, or -1 when it is
 * not decided in `buf`: a run of backslashes reaching its start may go on
 * in an earlier piece.
 */
function stringStart(buf: Buffer, close: number): number {
  for (let q = close > 0 ? buf.lastIndexOf(QUOTE, close - 1) : -1; q !== -1; q = q > 0 ? buf.lastIndexOf(QUOTE, q - 1) : -1) {
    const backslashes = backslashesBefore(buf, q);
    if (q - backslashes === 0) return -1;
    if (backslashes % 2 === 0) return q;
  }
  return -1;
}

/** How many backslashes run up to `at`: an odd run escapes the quote at `at`. */
function backslashesBefore(buf: Uint8Array, at: number): number {
  let n = 0;
  while (buf[at - 1 - n] === BACKSLASH) n++;
  return n;
}

/** The offset of the first `"usage"` at or after `from`, or -1, found by its `g` (a memchr). */
function indexOfUsage(bytes: Uint8Array, from: number): number {
  for (let g = indexOfByte(bytes, G, from + USAGE_G); g !== -1; g = indexOfByte(bytes, G, g + 1)) if (bytesAt(bytes, g - USAGE_G, USAGE_KEY)) return g - USAGE_G;
  return -1;
}

/** The offset of the last `"usage"`, or -1, found by its `g`: Buffer's lastIndexOf of a byte is a memrchr, of a string far slower. */
function lastIndexOfUsage(buf: Buffer): number {
  // lastIndexOf takes a negative offset from the end: the loop stays at offsets of 0 and above.
  for (let g = buf.length - 3; g >= USAGE_G; g--) {
    g = buf.lastIndexOf(G, g);
    if (g < USAGE_G) break;
    if (bytesAt(buf, g - USAGE_G, USAGE_KEY)) return g - USAGE_G;
  }
  return -1;
}

/**
 * The offset of the first `"usage"` at or after `from` that is followed by
 * a colon and a value other than `null`, or -1. Quotes inside a JSON string
 * are escaped, so JSON text without one has no usage to read; one may still
 * be a false alarm (in a string after an escaped quote, or a nested key),
 * which the caller's parse settles.
 */
export function usageValueAt(bytes: Uint8Array, from: number): number {
  for (let at = indexOfUsage(bytes, from); at !== -1; at = indexOfUsage(bytes, at + 1)) {
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
