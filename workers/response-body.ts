/**
 * Reading and checking provider response bodies: bounded by the configured
 * response limit, and checked to be in the compatible format before they
 * are returned as a success.
 */
import type { Operation, Usage } from '../protocol/frames.js';
import { GatewayError } from '../src/errors.js';

const decoder = new TextDecoder();

/**
 * Bodies up to this size are parsed whole to check them. Larger ones (an
 * embeddings answer of 16×1536 floats is ~300 KB, and parsing it cost more
 * than everything else the gateway does for the request) are checked by
 * structure: a JSON object with the operation's array, usage read from the
 * small `usage` object alone.
 */
export const FULL_CHECK_BYTES = 64 * 1024;

/** Checks a success body is the compatible format for `op`; returns its usage. */
export function checkCompatible(op: Operation, bytes: Uint8Array): Usage | null {
  const key = op === 'chat' ? 'choices' : 'data';
  if (bytes.length > FULL_CHECK_BYTES) return checkByStructure(key, bytes);
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(bytes));
  } catch {
    throw new GatewayError('upstream_invalid_response', 'the provider response is not JSON');
  }
  if (!Array.isArray((json as Record<string, unknown> | null)?.[key])) {
    throw new GatewayError('upstream_invalid_response', `the provider response has no "${key}" array`);
  }
  return usageOf(json);
}

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function checkByStructure(key: string, bytes: Uint8Array): Usage | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let first = 0;
  while (isSpace(buf[first])) first++;
  let last = buf.length - 1;
  while (last > first && isSpace(buf[last])) last--;
  if (buf[first] !== 0x7b || buf[last] !== 0x7d) throw new GatewayError('upstream_invalid_response', 'the provider response is not a JSON object');
  const at = buf.indexOf(`"${key}"`);
  let next = at + key.length + 2;
  while (isSpace(buf[next])) next++;
  if (at === -1 || buf[next] !== 0x3a /* : */) throw new GatewayError('upstream_invalid_response', `the provider response has no "${key}" array`);
  next++;
  while (isSpace(buf[next])) next++;
  if (buf[next] !== 0x5b /* [ */) throw new GatewayError('upstream_invalid_response', `the provider response has no "${key}" array`);
  // `usage` is a flat object of numbers: find it and parse only it.
  const usageAt = buf.lastIndexOf('"usage"');
  if (usageAt === -1) return null;
  const open = buf.indexOf(0x7b, usageAt);
  const close = open === -1 ? -1 : buf.indexOf(0x7d, open);
  if (close === -1) return null;
  try {
    return usageOf({ usage: JSON.parse(buf.toString('utf8', open, close + 1)) });
  } catch {
    return null;
  }
}

/** `usage` of a response or stream chunk, when it has one. */
export function usageOf(json: unknown): Usage | null {
  const usage = (json as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } } | null)?.usage;
  if (!usage || typeof usage !== 'object') return null;
  const prompt = typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : 0;
  const completion = typeof usage.completion_tokens === 'number' ? usage.completion_tokens : 0;
  return { prompt, completion };
}

/** Whether a 4xx body is JSON, to label it correctly when passing it through. */
export function looksLikeJson(bytes: Uint8Array): boolean {
  try {
    JSON.parse(decoder.decode(bytes));
    return true;
  } catch {
    return false;
  }
}
