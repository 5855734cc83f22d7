/**
 * Reading a provider request body without zod: bytes → JSON → the hand
 * checks that pass the common shapes. Workers load the zod schemas
 * (protocol/requests.ts) only for a body these checks do not pass, so a
 * worker thread that sees only common bodies never loads zod (about 11 MB
 * of RSS and 100 ms of start per isolate).
 */
import { GatewayError } from './errors.js';
import type { Operation } from './frames.js';

export interface ParsedRequest {
  readonly model: string;
  readonly stream: boolean;
  /** The whole body as parsed; the caller rewrites `model` and forwards the rest as it is. */
  readonly body: Record<string, unknown>;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Deeper bodies are refused: re-serialising one for the provider would overflow the stack. */
export const MAX_JSON_DEPTH = 256;

/** A body that is a JSON object within the depth limit; `plain` when the hand checks below pass it. */
export interface RequestBody {
  readonly json: Record<string, unknown>;
  readonly plain: boolean;
}

export function readRequestBody(op: Operation, bytes: Uint8Array): RequestBody {
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
  return { json: body, plain: PLAIN[op](body) };
}

/** The request of a body that passed its checks (the hand checks or the schema). */
export function toParsedRequest(op: Operation, body: Record<string, unknown>): ParsedRequest {
  return { model: body.model as string, stream: op !== 'embeddings' && op !== 'count_tokens' && body.stream === true, body };
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
  const format = body.encoding_format;
  if (format !== undefined && format !== 'float' && format !== 'base64') return false;
  const input = body.input;
  if (typeof input === 'string') return true;
  if (!Array.isArray(input) || input.length === 0) return false;
  for (const item of input) if (typeof item !== 'string') return false;
  return true;
}

const optionalNumber = (v: unknown): boolean => v === undefined || v === null || typeof v === 'number';
const optionalString = (v: unknown): boolean => v === undefined || v === null || typeof v === 'string';
const MESSAGE_ROLES = new Set(['user', 'assistant', 'system', 'developer']);

/**
 * The shapes clients send most: `input` a string or messages whose content
 * is a string or typed parts, function calls and their outputs; function
 * tools; a string `tool_choice`; a `text` with a known format (LangChain
 * sends `text: {}` on every call). Nothing stateful (refuseStateful in
 * requests.ts words that refusal).
 */
export function plainResponses(body: Record<string, unknown>): boolean {
  if (!nonEmptyString(body.model)) return false;
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') return false;
  if (body.previous_response_id != null || body.conversation != null || body.prompt != null || (body.background != null && body.background !== false)) return false;
  if (!optionalString(body.instructions) || !optionalNumber(body.temperature) || !optionalNumber(body.top_p) || !plainText(body.text)) return false;
  const max = body.max_output_tokens;
  if (max !== undefined && max !== null && !(Number.isSafeInteger(max) && (max as number) > 0)) return false;
  if (body.store !== undefined && body.store !== null && typeof body.store !== 'boolean') return false;
  if (body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null && typeof body.parallel_tool_calls !== 'boolean') return false;
  const choice = body.tool_choice;
  if (choice !== undefined && choice !== null && choice !== 'auto' && choice !== 'none' && choice !== 'required') return false;
  const tools = body.tools;
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) return false;
    for (const tool of tools) if (!isRecord(tool) || typeof tool.type !== 'string') return false;
  }
  const input = body.input;
  if (typeof input === 'string') return true;
  if (!Array.isArray(input)) return false;
  for (const item of input) if (!isRecord(item) || !plainInputItem(item)) return false;
  return true;
}

const TEXT_FORMATS = new Set(['text', 'json_schema', 'json_object']);

function plainText(text: unknown): boolean {
  if (text === undefined || text === null) return true;
  if (!isRecord(text)) return false;
  const format = text.format;
  return format === undefined || format === null || (isRecord(format) && TEXT_FORMATS.has(format.type as string));
}

function plainInputItem(item: Record<string, unknown>): boolean {
  switch (item.type) {
    case undefined:
    case 'message':
      return MESSAGE_ROLES.has(item.role as string) && (typeof item.content === 'string' || typedParts(item.content));
    case 'function_call':
      return nonEmptyString(item.call_id) && nonEmptyString(item.name) && typeof item.arguments === 'string';
    case 'function_call_output':
      return nonEmptyString(item.call_id) && (typeof item.output === 'string' || typedParts(item.output));
    default:
      return false;
  }
}

function typedParts(parts: unknown): boolean {
  if (!Array.isArray(parts)) return false;
  for (const part of parts) if (!isRecord(part) || typeof part.type !== 'string') return false;
  return true;
}

/**
 * The shapes Claude Code and the Anthropic SDKs send to `POST /v1/messages`:
 * messages of a string or typed blocks, system as a string or text blocks,
 * named tools, a known tool choice. Accepts only what messagesRequestSchema
 * (requests.ts) accepts; null for an optional field goes to the schema.
 */
export function plainMessages(body: Record<string, unknown>): boolean {
  const max = body.max_tokens;
  if (!Number.isSafeInteger(max) || (max as number) < 0) return false;
  return plainCountTokens(body);
}

/**
 * `POST /v1/messages/count_tokens`: a Messages body without `max_tokens` (and whatever else
 * counting ignores). Accepts only what countTokensRequestSchema (requests.ts) accepts.
 */
export function plainCountTokens(body: Record<string, unknown>): boolean {
  if (!nonEmptyString(body.model)) return false;
  if (body.stream !== undefined && typeof body.stream !== 'boolean') return false;
  if ((body.temperature !== undefined && typeof body.temperature !== 'number') || (body.top_p !== undefined && typeof body.top_p !== 'number')) return false;
  const stop = body.stop_sequences;
  if (stop !== undefined && !(Array.isArray(stop) && stop.every((s) => typeof s === 'string'))) return false;
  const metadata = body.metadata;
  if (metadata !== undefined && !(isRecord(metadata) && (metadata.user_id === undefined || metadata.user_id === null || typeof metadata.user_id === 'string'))) return false;
  const system = body.system;
  if (system !== undefined && typeof system !== 'string') {
    if (!Array.isArray(system)) return false;
    for (const block of system) if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') return false;
  }
  const tools = body.tools;
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return false;
    for (const tool of tools) if (!isRecord(tool) || !nonEmptyString(tool.name)) return false;
  }
  const choice = body.tool_choice;
  if (choice !== undefined) {
    if (!isRecord(choice) || (choice.disable_parallel_tool_use !== undefined && typeof choice.disable_parallel_tool_use !== 'boolean')) return false;
    if (!(TOOL_CHOICES.has(choice.type as string) || (choice.type === 'tool' && nonEmptyString(choice.name)))) return false;
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const m of messages) {
    if (!isRecord(m) || (m.role !== 'user' && m.role !== 'assistant')) return false;
    if (typeof m.content !== 'string' && !typedBlocks(m.content)) return false;
  }
  return true;
}

const TOOL_CHOICES = new Set(['auto', 'any', 'none']);

function typedBlocks(blocks: unknown): boolean {
  if (!Array.isArray(blocks)) return false;
  for (const block of blocks) if (!isRecord(block) || !nonEmptyString(block.type)) return false;
  return true;
}

const PLAIN: Readonly<Record<Operation, (body: Record<string, unknown>) => boolean>> = {
  chat: plainChat,
  embeddings: plainEmbeddings,
  responses: plainResponses,
  messages: plainMessages,
  count_tokens: plainCountTokens,
};

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

