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

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();
const contentPart = z.looseObject({ type: z.string() });

/** One item of a Responses `input` array: a message, a function call, a function call's output, or a reasoning item. */
const inputItem = z.union([
  z.looseObject({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: z.union([z.string(), z.array(contentPart)]),
  }),
  z.looseObject({ type: z.literal('function_call'), call_id: z.string().min(1), name: z.string().min(1), arguments: z.string() }),
  z.looseObject({ type: z.literal('function_call_output'), call_id: z.string().min(1), output: z.union([z.string(), z.array(contentPart)]) }),
  z.looseObject({ type: z.literal('reasoning') }),
]);

/**
 * CONTRACT.md, HTTP: `POST /v1/responses`, stateless. The fields the
 * translation to chat relies on; the rest is checked where it is translated
 * (workers/inbound/responses/request.ts) or passed through.
 */
export const responsesRequestSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(inputItem)]),
  instructions: nullish(z.string()),
  tools: nullish(z.array(z.looseObject({ type: z.string() }))),
  tool_choice: nullish(z.union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.string() })])),
  text: nullish(z.looseObject({ format: nullish(z.looseObject({ type: z.enum(['text', 'json_schema', 'json_object']) })) })),
  max_output_tokens: nullish(z.number().int().positive()),
  temperature: nullish(z.number()),
  top_p: nullish(z.number()),
  parallel_tool_calls: nullish(z.boolean()),
  stream: nullish(z.boolean()),
  /** Treated as false whatever it says: nothing is stored. */
  store: nullish(z.boolean()),
});

/** A content block: its `type` here; each type's own fields are checked where it is translated (workers/inbound/messages/request.ts). */
const messagesBlock = z.looseObject({ type: z.string().min(1) });
const parallelChoice = { disable_parallel_tool_use: nullish(z.boolean()) };

/**
 * CONTRACT.md, Anthropic Messages API (inbound): `POST /v1/messages`. The
 * fields the translation to chat relies on, typed as Anthropic's API
 * reference types them; `max_tokens` is required as Anthropic requires it.
 * Every other field (`thinking`, `cache_control`, `top_k`, betas' fields…)
 * is an open list: passed through to Anthropic, dropped on the chat path,
 * never refused here.
 */
const countTokensFields = {
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(messagesBlock)]) })).min(1),
  system: nullish(z.union([z.string(), z.array(z.looseObject({ type: z.literal('text'), text: z.string() }))])),
  stream: nullish(z.boolean()),
  stop_sequences: nullish(z.array(z.string())),
  temperature: nullish(z.number()),
  top_p: nullish(z.number()),
  metadata: nullish(z.looseObject({ user_id: nullish(z.string()) })),
  tools: nullish(z.array(z.looseObject({ name: z.string().min(1) }))),
  tool_choice: nullish(
    z.discriminatedUnion('type', [
      z.looseObject({ type: z.enum(['auto', 'any', 'none']), ...parallelChoice }),
      z.looseObject({ type: z.literal('tool'), name: z.string().min(1), ...parallelChoice }),
    ]),
  ),
};

export const messagesRequestSchema = z.looseObject({ ...countTokensFields, max_tokens: z.number().int().nonnegative() });

/** `POST /v1/messages/count_tokens`: the Messages body without `max_tokens`. */
export const countTokensRequestSchema = z.looseObject(countTokensFields);

/** Anthropic's Message, loosely: the fields every answer has (for the manifest). */
export const messageObjectSchema = z.looseObject({
  id: z.string(),
  type: z.literal('message'),
  role: z.literal('assistant'),
  model: z.string(),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullable(),
  usage: z.looseObject({ input_tokens: z.number().int(), output_tokens: z.number().int() }),
});

export const countTokensResponseSchema = z.object({ input_tokens: z.number().int().nonnegative() });

/** Checks a Messages body the hand check (request-body.ts, plainMessages) did not pass; throws the `invalid_request` that names the first problem. */
export function checkMessagesRequest(json: Record<string, unknown>): void {
  const result = messagesRequestSchema.safeParse(json, { reportInput: true });
  if (!result.success) throw new GatewayError('invalid_request', describe(result.error));
}

/**
 * What a stateless gateway cannot do, refused with `unsupported_parameter`
 * before any schema check: continuing or referring to a stored response or
 * conversation, stored prompts, background runs.
 */
const STATEFUL: Readonly<Record<string, string>> = {
  previous_response_id: 'Switchyard stores no responses (store is treated as false): send the whole conversation as input',
  conversation: 'Switchyard stores no conversations: send the whole conversation as input',
  prompt: 'stored prompt templates are not available through Switchyard: send instructions and input',
  background: 'background responses need stored state, which Switchyard does not keep',
};

export function refuseStateful(json: Record<string, unknown>): void {
  for (const key in STATEFUL) {
    const value = json[key];
    if (value !== undefined && value !== null && value !== false) throw new GatewayError('unsupported_parameter', `Unsupported parameter: '${key}': ${STATEFUL[key]}`);
  }
  if (!Array.isArray(json.input)) return;
  json.input.forEach((item, i) => {
    if ((item as { type?: unknown } | null)?.type === 'item_reference') {
      throw new GatewayError('unsupported_parameter', `Unsupported parameter: 'input[${i}]': an item_reference names a stored item, and Switchyard stores none: send the item itself (the Vercel AI SDK does with providerOptions.openai.store: false)`);
    }
  });
}

const SCHEMAS: Readonly<Record<Operation, z.ZodType>> = {
  chat: chatRequestSchema,
  embeddings: embeddingsRequestSchema,
  responses: responsesRequestSchema,
  messages: messagesRequestSchema,
  count_tokens: countTokensRequestSchema,
};

/** Checks a body the hand checks did not pass; throws the `invalid_request` (or `unsupported_parameter`) that names the first problem. */
export function checkWithSchema(op: Operation, json: Record<string, unknown>): void {
  if (op === 'responses') refuseStateful(json);
  const schema = SCHEMAS[op];
  // reportInput: zod 4 leaves an issue's input out otherwise, and "missing" vs "wrong type" needs it.
  const result = schema.safeParse(json, { reportInput: true });
  if (!result.success) throw new GatewayError('invalid_request', describe(result.error));
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid request';
  const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
  // A missing field of a union type (embeddings' and responses' `input`) is an invalid_union with no input.
  const missing = (issue.code === 'invalid_type' || issue.code === 'invalid_union') && (issue as { input?: unknown }).input === undefined;
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

/** A Responses API `response` object, loosely: the fields every answer has. */
export const responseObjectSchema = z.looseObject({
  id: z.string(),
  object: z.literal('response'),
  created_at: z.number(),
  status: z.enum(['completed', 'incomplete', 'failed', 'in_progress']),
  model: z.string(),
  output: z.array(z.looseObject({ type: z.string() })),
  usage: z.looseObject({ input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int() }).nullable().optional(),
});

export const modelSchema = z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() });

export const modelListSchema = z.object({ object: z.literal('list'), data: z.array(modelSchema) });
