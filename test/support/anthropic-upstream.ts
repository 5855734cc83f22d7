/**
 * A fake Anthropic Messages API on 127.0.0.1, in the real wire format
 * (Anthropic's API reference: Messages, Streaming Messages, Errors, Rate
 * limits; the event sequences of anthropic-sdk-typescript's test fixtures),
 * proved by the official SDK in anthropic-upstream.test.ts:
 * - `POST /v1/messages`: checks `x-api-key` and `anthropic-version`, and
 *   the request as Anthropic does (required `max_tokens`, roles, no blank
 *   text block, tool results answering the tool uses before them, no field
 *   Anthropic does not know); answers a Message, or with `stream: true` the
 *   named events `message_start`, `content_block_start`, `ping`,
 *   `content_block_delta` (`text_delta`, `input_json_delta` fragments,
 *   `thinking_delta`), `content_block_stop`, `message_delta`,
 *   `message_stop`;
 * - errors as `{"type":"error","error":{"type","message"},"request_id"}`,
 *   529 `overloaded_error`, an in-stream `event: error`;
 * - `anthropic-ratelimit-*`, `retry-after` and `request-id` headers;
 * - `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, N the count
 *   of the body's words and tool names (a stand-in for Anthropic's own
 *   tokenizer, so a test can tell its count from the gateway's estimate),
 *   refusing what Anthropic refuses there (`max_tokens` is not a field of it);
 * - `GET /v1/models`: the model list (the free probe).
 */
import type { ServerResponse } from 'node:http';
import { sendJson, startFakeServer, writePieces, type FakeRequest, type FakeServer } from './http-fake.js';

export type AnthropicBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'tool_use'; readonly id: string; readonly name: string; readonly input: Record<string, unknown> }
  | { readonly type: 'thinking'; readonly thinking: string; readonly signature: string };

export interface AnthropicUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_read_input_tokens?: number;
  readonly cache_creation_input_tokens?: number;
}

/** What the fake does with one `POST /v1/messages`. */
export type AnthropicReply =
  /** A message (JSON, or its event stream when the request streams); `intervalMs` between stream events (0: one write). */
  | { readonly kind: 'message'; readonly content?: readonly AnthropicBlock[]; readonly stopReason?: string; readonly usage?: AnthropicUsage; readonly intervalMs?: number }
  /** An error answer: this status and Anthropic's error body, with extra headers (retry-after…). */
  | { readonly kind: 'error'; readonly status: number; readonly type: string; readonly message: string; readonly headers?: Record<string, string> }
  /** A stream that reports an error in-band (`event: error`), after message_start (and after a text delta when `afterContent`). */
  | { readonly kind: 'stream-error'; readonly type: string; readonly message: string; readonly afterContent: boolean }
  /** A stream that ends cleanly but before message_stop (after a text delta). */
  | { readonly kind: 'cut-short' }
  /** Streams: message_start, then nothing until the client leaves. */
  | { readonly kind: 'hang' };

export interface AnthropicUpstream extends FakeServer {
  /** The `api_base` for a deployment (the origin: the adapter adds /v1/messages). */
  readonly url: string;
  /** Queues replies for the next message requests, one each. */
  script(...replies: AnthropicReply[]): void;
  /** The message requests received. */
  messages(): FakeRequest[];
  /** The count_tokens requests received. */
  counts(): FakeRequest[];
  reset(): void;
}

export const ANTHROPIC_KEY = 'sk-ant-fake-key-0123456789';
export const ANTHROPIC_VERSION = '2023-06-01';

/** Message fields Anthropic accepts at the top level (it refuses any other: "Extra inputs are not permitted"). */
const KNOWN_FIELDS = new Set(['model', 'messages', 'max_tokens', 'system', 'metadata', 'stop_sequences', 'stream', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'thinking', 'service_tier']);

export async function startAnthropicUpstream(key = ANTHROPIC_KEY): Promise<AnthropicUpstream> {
  const queue: AnthropicReply[] = [];
  let served = 0;
  const server = await startFakeServer((req, res, { later, alive }) => {
    const n = ++served;
    const headers = rateLimitHeaders(n);
    if (req.headers['x-api-key'] !== key) return anthropicError(res, 401, 'authentication_error', 'invalid x-api-key', headers);
    if (typeof req.headers['anthropic-version'] !== 'string') return anthropicError(res, 400, 'invalid_request_error', 'anthropic-version: header is required', headers);
    if (req.method === 'GET' && req.path === '/v1/models') {
      return sendJson(res, 200, { data: [{ type: 'model', id: 'claude-fake-1', display_name: 'Claude Sonnet 4.5', created_at: '2025-09-29T00:00:00Z' }], has_more: false, first_id: 'claude-fake-1', last_id: 'claude-fake-1' }, headers);
    }
    if (req.method === 'POST' && req.path === '/v1/messages/count_tokens') {
      const { max_tokens: _max, ...rest } = req.body;
      if (_max !== undefined) return anthropicError(res, 400, 'invalid_request_error', 'max_tokens: Extra inputs are not permitted', headers);
      const problem = requestProblem({ ...rest, max_tokens: 1 });
      if (problem !== null) return anthropicError(res, 400, 'invalid_request_error', problem, headers);
      const counted = queue[0]?.kind === 'error' ? (queue.shift() as Extract<AnthropicReply, { kind: 'error' }>) : null;
      if (counted !== null) return anthropicError(res, counted.status, counted.type, counted.message, { ...headers, ...counted.headers });
      return sendJson(res, 200, { input_tokens: fakeTokenCount(rest) }, headers);
    }
    if (req.method !== 'POST' || req.path !== '/v1/messages') return anthropicError(res, 404, 'not_found_error', `Not Found: ${req.method} ${req.path}`, headers);
    const problem = requestProblem(req.body);
    if (problem !== null) return anthropicError(res, 400, 'invalid_request_error', problem, headers);
    const reply = queue.shift() ?? defaultReply(req.body);
    if (reply.kind === 'error') return anthropicError(res, reply.status, reply.type, reply.message, { ...headers, ...reply.headers });
    const id = `msg_fake_${n}`;
    const model = String(req.body.model);
    if (req.body.stream !== true) {
      if (reply.kind !== 'message') throw new Error(`a "${reply.kind}" reply needs a stream request`);
      return sendJson(res, 200, messageOf(id, model, reply), headers);
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...headers });
    const start = event('message_start', { type: 'message_start', message: { ...messageOf(id, model, { kind: 'message', content: [] }), stop_reason: null, usage: { ...usageOf(undefined), output_tokens: 1 } } });
    const textStart = event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const textDelta = event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Partly' } });
    switch (reply.kind) {
      case 'message':
        return writePieces(res, streamEvents(id, model, reply), reply.intervalMs ?? 0, later, alive, () => res.end());
      case 'stream-error': {
        const pieces = [start, textStart, PING, ...(reply.afterContent ? [textDelta] : []), event('error', { type: 'error', error: { type: reply.type, message: reply.message } })];
        return writePieces(res, pieces, 0, later, alive, () => res.end());
      }
      case 'cut-short':
        return writePieces(res, [start, textStart, textDelta], 0, later, alive, () => res.end());
      case 'hang':
        res.write(start);
        return;
    }
  });
  return {
    ...server,
    url: server.origin,
    script: (...replies) => void queue.push(...replies),
    messages: () => server.received.filter((r) => r.path === '/v1/messages'),
    counts: () => server.received.filter((r) => r.path === '/v1/messages/count_tokens'),
    reset() {
      queue.length = 0;
      server.received.length = 0;
    },
  };
}

/** The fake's token count: the words of every string in the body (Anthropic's own tokenizer is not public). */
export function fakeTokenCount(body: unknown): number {
  if (typeof body === 'string') return body.split(/\s+/).filter(Boolean).length;
  if (Array.isArray(body)) return body.reduce((n: number, v) => n + fakeTokenCount(v), 0);
  if (isRecord(body)) return Object.entries(body).reduce((n, [k, v]) => n + (k === 'model' || k === 'type' || k === 'role' ? 0 : fakeTokenCount(v)), 0);
  return 0;
}

function defaultReply(body: Record<string, unknown>): AnthropicReply {
  return { kind: 'message', content: [{ type: 'text', text: `Hello! You said: ${lastUserText(body)}` }] };
}

function lastUserText(body: Record<string, unknown>): string {
  const messages = body.messages as Array<{ role: string; content: unknown }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as Array<{ type: string; text?: string }>).filter((b) => b.type === 'text').map((b) => b.text).join(' ');
}

const usageOf = (usage: AnthropicUsage | undefined) => ({ input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 6, ...usage });

/** A whole Message for a scripted reply (also Bedrock's InvokeModel answer for a Claude model: bedrock-upstream.ts). */
export function messageOf(id: string, model: string, reply: Extract<AnthropicReply, { kind: 'message' }>) {
  const content = reply.content ?? [];
  const stop = reply.stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  return { id, type: 'message', role: 'assistant', model, content, stop_reason: stop, stop_sequence: null, usage: usageOf(reply.usage) };
}

const event = (name: string, data: unknown): string => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const PING = 'event: ping\ndata: {"type": "ping"}\n\n';

/** The events of a streamed message, as objects (`type` their name), without the pings (Bedrock's event stream carries these: bedrock-upstream.ts). */
export function messageEvents(id: string, model: string, reply: Extract<AnthropicReply, { kind: 'message' }>): Array<Record<string, unknown> & { type: string }> {
  const message = messageOf(id, model, reply);
  const usage = message.usage;
  const out: Array<Record<string, unknown> & { type: string }> = [{ type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }];
  message.content.forEach((block, index) => {
    const delta = (d: unknown) => out.push({ type: 'content_block_delta', index, delta: d });
    if (block.type === 'text') {
      out.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const piece of block.text.match(/\S+\s*|\s+/g) ?? []) delta({ type: 'text_delta', text: piece });
    } else if (block.type === 'tool_use') {
      out.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      delta({ type: 'input_json_delta', partial_json: '' });
      for (const piece of JSON.stringify(block.input).match(/[\s\S]{1,7}/g) ?? []) delta({ type: 'input_json_delta', partial_json: piece });
    } else {
      out.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      delta({ type: 'thinking_delta', thinking: block.thinking });
      delta({ type: 'signature_delta', signature: block.signature });
    }
    out.push({ type: 'content_block_stop', index });
  });
  out.push({ type: 'message_delta', delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  out.push({ type: 'message_stop' });
  return out;
}

/** The event sequence of a streamed message, one string per event (a ping after the first block's start). */
function streamEvents(id: string, model: string, reply: Extract<AnthropicReply, { kind: 'message' }>): string[] {
  const out: string[] = [];
  for (const data of messageEvents(id, model, reply)) {
    if (data.type === 'content_block_stop' && data.index === 0) out.push(PING);
    out.push(event(data.type, data));
  }
  return out;
}

function anthropicError(res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string>): void {
  sendJson(res, status, { type: 'error', error: { type, message }, request_id: headers['request-id'] }, headers);
}

function rateLimitHeaders(n: number): Record<string, string> {
  const reset = new Date(Date.now() + 20_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    'request-id': `req_fake_${n}`,
    'anthropic-ratelimit-requests-limit': '50',
    'anthropic-ratelimit-requests-remaining': '49',
    'anthropic-ratelimit-requests-reset': reset,
    'anthropic-ratelimit-tokens-limit': '80000',
    'anthropic-ratelimit-tokens-remaining': '79000',
    'anthropic-ratelimit-tokens-reset': reset,
    'anthropic-ratelimit-input-tokens-limit': '40000',
    'x-should-not-pass': 'internal',
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * What Anthropic would refuse in a Messages request, as its 400 message; null for a request it takes.
 * The rules the translation must respect, from the API reference: exported for the property test.
 */
export function requestProblem(body: Record<string, unknown>): string | null {
  for (const key of Object.keys(body)) if (!KNOWN_FIELDS.has(key)) return `${key}: Extra inputs are not permitted`;
  if (typeof body.model !== 'string' || body.model.length === 0) return 'model: Field required';
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  if (body.system !== undefined) {
    if (typeof body.system !== 'string' && !Array.isArray(body.system)) return 'system: Input should be a valid string or list';
    if (Array.isArray(body.system)) for (const block of body.system) if (!isTextBlock(block)) return 'system: text content blocks must contain non-whitespace text';
  }
  const toolNames = new Set<string>();
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return 'tools: Input should be a valid list';
    for (const tool of body.tools) {
      if (!isRecord(tool) || typeof tool.name !== 'string' || !isRecord(tool.input_schema) || tool.input_schema.type !== 'object') return 'tools: each tool needs a name and an input_schema of type object';
      toolNames.add(tool.name);
    }
  }
  if (body.tool_choice !== undefined) {
    const choice = body.tool_choice;
    if (!isRecord(choice) || !['auto', 'any', 'tool', 'none'].includes(String(choice.type))) return 'tool_choice: Input tag is not one of the expected tags';
    if (choice.type === 'tool' && !toolNames.has(String(choice.name))) return `tool_choice: tool "${String(choice.name)}" is not in tools`;
  }
  if (body.stop_sequences !== undefined && (!Array.isArray(body.stop_sequences) || body.stop_sequences.some((s) => typeof s !== 'string' || s === ''))) return 'stop_sequences: each must be a non-empty string';
  for (const key of ['temperature', 'top_p'] as const) {
    const v = body[key];
    if (v !== undefined && (typeof v !== 'number' || v < 0 || v > 1)) return `${key}: Input should be between 0 and 1`;
  }
  let pendingToolUses = new Set<string>();
  for (const [i, message] of (body.messages as unknown[]).entries()) {
    if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant')) return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const content = message.content;
    if (typeof content === 'string') {
      if (content.trim() === '') return `messages.${i}: text content blocks must contain non-whitespace text`;
      if (pendingToolUses.size > 0) return `messages.${i}: tool_use ids were found without tool_result blocks immediately after`;
      continue;
    }
    if (!Array.isArray(content) || content.length === 0) return `messages.${i}: all messages must have non-empty content`;
    const answered = new Set<string>();
    for (const block of content) {
      if (!isRecord(block)) return `messages.${i}.content: Input should be a valid dictionary`;
      if (block.type === 'text' && !isTextBlock(block)) return `messages.${i}: text content blocks must contain non-whitespace text`;
      if (block.type === 'tool_result') {
        if (message.role !== 'user' || !pendingToolUses.has(String(block.tool_use_id))) return `messages.${i}: unexpected tool_use_id found in tool_result blocks: ${String(block.tool_use_id)}`;
        answered.add(String(block.tool_use_id));
      }
      if (block.type === 'tool_use' && (message.role !== 'assistant' || typeof block.id !== 'string' || !isRecord(block.input))) return `messages.${i}: tool_use blocks need an id and an input object`;
      if (block.type === 'image' && !isRecord(block.source)) return `messages.${i}: image blocks need a source`;
      if (!['text', 'image', 'tool_use', 'tool_result'].includes(String(block.type))) return `messages.${i}.content: unknown block type ${String(block.type)}`;
    }
    if (pendingToolUses.size > 0) {
      for (const id of pendingToolUses) if (!answered.has(id)) return `messages.${i}: tool_use ids were found without tool_result blocks immediately after: ${id}`;
    }
    pendingToolUses = new Set(message.role === 'assistant' ? content.filter((b) => isRecord(b) && b.type === 'tool_use').map((b) => String((b as Record<string, unknown>).id)) : []);
  }
  return null;
}

const isTextBlock = (block: unknown): boolean => isRecord(block) && block.type === 'text' && typeof block.text === 'string' && block.text.trim().length > 0;
