/**
 * Reading and checking provider response bodies: bounded by the configured
 * response limit, and checked to be in the compatible format before they
 * are returned as a success.
 */
import type { Dispatcher } from 'undici';
import type { Operation, Usage } from '../protocol/frames.js';
import { GatewayError } from '../src/errors.js';

/** Reads a whole body into one buffer of its own (so it can be transferred), failing past `limit` bytes. */
export async function readBody(
  body: Dispatcher.ResponseData['body'],
  contentLength: string | string[] | undefined,
  limit: number,
  onChunk?: () => void,
): Promise<Uint8Array> {
  const declared = Number(contentLength);
  if (Number.isFinite(declared) && declared > limit) {
    body.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    onChunk?.();
    total += chunk.length;
    if (total > limit) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

function tooLarge(): GatewayError {
  return new GatewayError('upstream_response_too_large');
}

const decoder = new TextDecoder();

/** Checks a success body is the compatible format for `op`; returns its usage. */
export function checkCompatible(op: Operation, bytes: Uint8Array): Usage | null {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(bytes));
  } catch {
    throw new GatewayError('upstream_invalid_response', 'the provider response is not JSON');
  }
  const list = op === 'chat' ? (json as { choices?: unknown } | null)?.choices : (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(list)) {
    throw new GatewayError('upstream_invalid_response', `the provider response has no "${op === 'chat' ? 'choices' : 'data'}" array`);
  }
  return usageOf(json);
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
