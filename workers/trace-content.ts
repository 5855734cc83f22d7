/**
 * Message content for a sampled span, only when the operator opts in
 * (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; CONTRACT.md,
 * Tracing): the request's messages as `gen_ai.system_instructions` and
 * `gen_ai.input.messages`, the answer as `gen_ai.output.messages`, each a
 * JSON string in the GenAI conventions' message schema (role, parts of type
 * `text`, `tool_call`, `tool_call_response`; a finish reason per output
 * message). Chat completions and the Responses API, replies and streams; no
 * header and no key is ever part of it.
 */
import type { Operation } from '../protocol/frames.js';
import { ATTR } from '../protocol/genai.js';

type Json = Record<string, unknown>;
type Part = Json;
interface Message {
  role: string;
  parts: Part[];
  finish_reason?: string;
}

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const text = (content: string): Part => ({ type: 'text', content });

/** The request's messages as `[name, json, …]` attributes. */
export function inputContent(op: Operation, body: Json): string[] {
  if (op === 'embeddings' || op === 'count_tokens') return [];
  const system: Part[] = [];
  const input: Message[] = [];
  if (op === 'responses') {
    if (typeof body.instructions === 'string') system.push(text(body.instructions));
    if (typeof body.input === 'string') input.push({ role: 'user', parts: [text(body.input)] });
    else if (Array.isArray(body.input)) for (const item of body.input) if (isRecord(item)) responsesItem(item, system, input);
  } else if (Array.isArray(body.messages)) {
    // Anthropic's Messages: the system prompt is a field of its own (a string or text blocks).
    if (op === 'messages' && body.system !== undefined && body.system !== null) system.push(...contentParts(body.system));
    for (const m of body.messages) if (isRecord(m)) chatMessage(m, system, input);
  }
  const out: string[] = [];
  if (system.length > 0) out.push(ATTR.systemInstructions, JSON.stringify(system));
  if (input.length > 0) out.push(ATTR.inputMessages, JSON.stringify(input));
  return out;
}

function chatMessage(m: Json, system: Part[], input: Message[]): void {
  const role = typeof m.role === 'string' ? m.role : 'user';
  const parts = contentParts(m.content);
  if (role === 'system' || role === 'developer') {
    system.push(...parts);
    return;
  }
  if (role === 'tool') {
    input.push({ role, parts: [{ type: 'tool_call_response', id: m.tool_call_id ?? null, response: typeof m.content === 'string' ? m.content : parts }] });
    return;
  }
  if (Array.isArray(m.tool_calls)) for (const call of m.tool_calls) if (isRecord(call)) parts.push(toolCall(call.id, call.function));
  input.push({ role, parts });
}

function responsesItem(item: Json, system: Part[], input: Message[]): void {
  if (item.type === 'function_call') {
    input.push({ role: 'assistant', parts: [toolCall(item.call_id, item)] });
  } else if (item.type === 'function_call_output') {
    input.push({ role: 'tool', parts: [{ type: 'tool_call_response', id: item.call_id ?? null, response: item.output ?? null }] });
  } else if (typeof item.role === 'string') {
    const parts = contentParts(item.content);
    if (item.role === 'system' || item.role === 'developer') system.push(...parts);
    else input.push({ role: item.role, parts });
  }
}

/** A message's content: a string, or parts (chat's `text`, the Responses API's `input_text` / `output_text`); other parts by their type alone. */
function contentParts(content: unknown): Part[] {
  if (typeof content === 'string') return [text(content)];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const p of content) {
    if (!isRecord(p)) continue;
    parts.push(typeof p.text === 'string' ? text(p.text) : { type: typeof p.type === 'string' ? p.type : 'unknown' });
  }
  return parts;
}

function toolCall(id: unknown, fn: unknown): Part {
  const f = isRecord(fn) ? fn : {};
  return { type: 'tool_call', id: id ?? null, name: f.name ?? null, arguments: argumentsOf(f.arguments) };
}

function argumentsOf(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw ?? null;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** The answer's messages, from a whole reply or assembled from a stream's events. */
export class OutputContent {
  /** One message per choice (chat), or the Responses API's one. */
  readonly #messages: Message[] = [];
  /** A stream's tool calls by choice and tool call index, with their argument fragments so far. */
  readonly #calls = new Map<string, { readonly part: Part; args: string }>();
  #reply: Json | null = null;

  observe(answer: string, stream: boolean): void {
    if (!stream) {
      try {
        const parsed = JSON.parse(answer) as unknown;
        if (isRecord(parsed)) this.#reply = parsed;
      } catch {
        // Not JSON (an error page): nothing to record.
      }
      return;
    }
    for (const line of answer.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const data = line.slice(line.charCodeAt(5) === 0x20 ? 6 : 5);
      if (data === '[DONE]') continue;
      let event: unknown;
      try {
        event = JSON.parse(data);
      } catch {
        continue;
      }
      if (isRecord(event)) this.#event(event);
    }
  }

  /** `gen_ai.output.messages` as JSON; null when nothing was said. */
  messages(): string | null {
    const messages = this.#reply !== null ? replyMessages(this.#reply) : this.#streamed();
    return messages.length === 0 ? null : JSON.stringify(messages);
  }

  #event(event: Json): void {
    // The Responses API's last event carries the whole response.
    if (event.type === 'response.completed' && isRecord(event.response)) {
      this.#reply = event.response;
      return;
    }
    if (!Array.isArray(event.choices)) return;
    for (const choice of event.choices) {
      if (!isRecord(choice)) continue;
      const index = typeof choice.index === 'number' ? choice.index : 0;
      const message = (this.#messages[index] ??= { role: 'assistant', parts: [] });
      const delta = isRecord(choice.delta) ? choice.delta : {};
      if (typeof delta.content === 'string' && delta.content.length > 0) {
        const last = message.parts.at(-1);
        if (last?.type === 'text') last.content = `${last.content as string}${delta.content}`;
        else message.parts.push(text(delta.content));
      }
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) if (isRecord(call)) this.#toolDelta(message, index, call);
      if (typeof choice.finish_reason === 'string') message.finish_reason = choice.finish_reason;
    }
  }

  #toolDelta(message: Message, choice: number, delta: Json): void {
    const key = `${choice}:${String(delta.index ?? 0)}`;
    const fn = isRecord(delta.function) ? delta.function : {};
    let call = this.#calls.get(key);
    if (call === undefined) {
      call = { part: { type: 'tool_call', id: delta.id ?? null, name: fn.name ?? null, arguments: null }, args: '' };
      this.#calls.set(key, call);
      message.parts.push(call.part);
    }
    if (typeof fn.arguments === 'string') call.args += fn.arguments;
  }

  #streamed(): Message[] {
    for (const { part, args } of this.#calls.values()) part.arguments = argumentsOf(args);
    // Choices by index: a stream that skipped one leaves a hole, which this drops.
    return this.#messages.filter((m) => m !== undefined);
  }
}

/** A whole answer's messages: chat's choices, or a Responses API `response`'s output items. */
function replyMessages(reply: Json): Message[] {
  if (Array.isArray(reply.choices)) {
    const out: Message[] = [];
    for (const choice of reply.choices) {
      if (!isRecord(choice) || !isRecord(choice.message)) continue;
      const m = choice.message;
      const parts = contentParts(m.content);
      if (Array.isArray(m.tool_calls)) for (const call of m.tool_calls) if (isRecord(call)) parts.push(toolCall(call.id, call.function));
      out.push({ role: typeof m.role === 'string' ? m.role : 'assistant', parts, ...(typeof choice.finish_reason === 'string' && { finish_reason: choice.finish_reason }) });
    }
    return out;
  }
  if (!Array.isArray(reply.output)) return [];
  const parts: Part[] = [];
  for (const item of reply.output) {
    if (!isRecord(item)) continue;
    if (item.type === 'message') parts.push(...contentParts(item.content));
    else if (item.type === 'function_call') parts.push(toolCall(item.call_id, item));
  }
  return parts.length === 0 ? [] : [{ role: 'assistant', parts, ...(typeof reply.status === 'string' && { finish_reason: reply.status }) }];
}
