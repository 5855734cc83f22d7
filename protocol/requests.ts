/**
 * Request and response schemas of the provider operations. Workers check a
 * request body with them when the hand checks of protocol/request-body.ts
 * do not pass it (the front never parses a body); the front turns the same
 * schemas into the JSON Schemas of the agent manifest.
 * The schemas check only the fields the gateway relies on; the rest of a
 * body is forwarded untouched.
 */
import { z } from 'zod';
import { GatewayError } from './errors.js';
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
  /** The `openai` SDK asks for base64 when its caller names none (CONTRACT.md, HTTP). */
  encoding_format: z.enum(['float', 'base64']).optional(),
});

/** Checks a body the hand checks did not pass; throws the `invalid_request` that names the first problem. */
export function checkWithSchema(op: Operation, json: Record<string, unknown>): void {
  const schema = op === 'chat' ? chatRequestSchema : embeddingsRequestSchema;
  // reportInput: zod 4 leaves an issue's input out otherwise, and "missing" vs "wrong type" needs it.
  const result = schema.safeParse(json, { reportInput: true });
  if (!result.success) throw new GatewayError('invalid_request', describe(result.error));
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

export const modelSchema = z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() });

export const modelListSchema = z.object({ object: z.literal('list'), data: z.array(modelSchema) });
