/**
 * Request and response schemas of the provider operations. Workers use
 * `parseRequest` (bytes → JSON → zod; the front never parses a body); the
 * front turns the same schemas into the JSON Schemas of the agent manifest.
 * The schemas check only the fields the gateway relies on; the rest of a
 * body is forwarded untouched.
 */
import { z } from 'zod';
import { GatewayError } from '../src/errors.js';
import type { Operation } from './frames.js';

const message = z.looseObject({
  role: z.string().min(1),
  content: z.union([z.string(), z.array(z.unknown()), z.null()]).optional(),
});

/** spec 000, Rules 2: a chat request lacking `model` → 400. */
export const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().optional(),
});

const tokens = z.array(z.number().int().nonnegative());

/** spec 000, Rules 1: an embedding request lacking `model` or `input` → 400. */
export const embeddingsRequestSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.string()).min(1), tokens.min(1), z.array(tokens).min(1)]),
});

export interface ParsedRequest {
  readonly model: string;
  readonly stream: boolean;
  /** The whole body as parsed; the caller rewrites `model` and forwards the rest as it is. */
  readonly body: Record<string, unknown>;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Deeper bodies are refused: re-serialising one for the provider would overflow the stack. */
export const MAX_JSON_DEPTH = 256;

export function parseRequest(op: Operation, bytes: Uint8Array): ParsedRequest {
  let json: unknown;
  try {
    // V8's JSON.parse is iterative: deep nesting cannot overflow it, only JSON.stringify later.
    json = JSON.parse(decoder.decode(bytes));
  } catch {
    throw new GatewayError('invalid_json');
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new GatewayError('invalid_body');
  if (nestingDepth(bytes) > MAX_JSON_DEPTH) throw new GatewayError('invalid_request', `the body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  const body = json as Record<string, unknown>;
  if (!(op === 'chat' ? plainChat(body) : plainEmbeddings(body))) {
    const schema = op === 'chat' ? chatRequestSchema : embeddingsRequestSchema;
    // reportInput: zod 4 leaves an issue's input out otherwise, and "missing" vs "wrong type" needs it.
    const result = schema.safeParse(json, { reportInput: true });
    if (!result.success) throw new GatewayError('invalid_request', describe(result.error));
  }
  return { model: body.model as string, stream: op === 'chat' && body.stream === true, body };
}

// The common shapes, checked by hand: zod's parse cost a tenth of the gateway's
// CPU per request. Each accepts only bodies its schema accepts (a property test in
// requests.test.ts holds them to that); anything else goes to the schema, which
// accepts the rarer shapes and words the error.

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const nonEmptyString = (v: unknown): boolean => typeof v === 'string' && v.length > 0;

export function plainChat(body: Record<string, unknown>): boolean {
  if (!nonEmptyString(body.model)) return false;
  if (body.stream !== undefined && typeof body.stream !== 'boolean') return false;
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const m of messages) {
    if (!isRecord(m) || !nonEmptyString(m.role)) return false;
    const content = m.content;
    if (content !== undefined && content !== null && typeof content !== 'string' && !Array.isArray(content)) return false;
  }
  return true;
}

/** Text input only; token arrays take the schema's path. */
export function plainEmbeddings(body: Record<string, unknown>): boolean {
  if (!nonEmptyString(body.model)) return false;
  const input = body.input;
  if (typeof input === 'string') return true;
  if (!Array.isArray(input) || input.length === 0) return false;
  for (const item of input) if (typeof item !== 'string') return false;
  return true;
}

/**
 * The deepest bracket nesting outside strings, in one pass over the bytes
 * (stops counting once past the limit). Malformed JSON is JSON.parse's to refuse.
 */
function nestingDepth(bytes: Uint8Array): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > MAX_JSON_DEPTH) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid request';
  const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
  const missing = issue.code === 'invalid_type' && (issue as { input?: unknown }).input === undefined;
  return missing ? `"${path}" is required` : `"${path}": ${issue.message}`;
}

// Response shapes, for the manifest: the compatible format, loosely (providers add fields).
export const chatResponseSchema = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(z.looseObject({ index: z.number().int(), message: z.looseObject({ role: z.string(), content: z.string().nullable() }), finish_reason: z.string().nullable() })),
  usage: z.looseObject({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() }).optional(),
});

export const embeddingsResponseSchema = z.looseObject({
  object: z.literal('list'),
  data: z.array(z.looseObject({ object: z.literal('embedding'), index: z.number().int(), embedding: z.union([z.array(z.number()), z.string()]) })),
  model: z.string(),
  usage: z.looseObject({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }).optional(),
});

export const modelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })),
});
