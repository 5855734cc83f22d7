/**
 * Chat completion chunks → Anthropic's stream of events, as SSE text
 * (CONTRACT.md, Anthropic Messages API (inbound), Stream). Pure and
 * incremental: one `MessagesEventStream` per streamed answer, fed each
 * chunk's data as the chat path wrote it (`chunk`), then `end` or `fail`.
 *
 * The sequence is the one Anthropic sends and the SDKs' accumulators
 * (`messages.stream()`'s MessageStream) read, each event with `event:`
 * named by its type:
 *
 *   message_start              at the first chunk: `content: []`, `usage` the input count when the
 *                              chunk carries one, else zeros
 *   per block, indexed from 0 in order of appearance:
 *     content_block_start      `text` (empty), `thinking` (empty, only when the request enabled it),
 *                              or `tool_use` (`id`, `name`, `input: {}`) at the call's first delta
 *     content_block_delta…     `text_delta`, `thinking_delta`, `input_json_delta` with each argument
 *                              fragment as it came (never held back, never re-cut)
 *     content_block_stop       when the next block starts, or at the finish reason
 *   message_delta              `stop_reason`, `stop_sequence`, the cumulative usage (the chat
 *                              stream's usage chunk, which comes after the finish reason)
 *   message_stop               at `[DONE]` or the upstream's end
 *   on failure after the start: one `event: error` (errors.ts), and nothing after it
 *
 * One block is open at a time, as Anthropic's own streams have it: a text
 * after a tool call is a new block, and so is a second tool call. A chat
 * stream may address an earlier tool call again by its index; no upstream
 * the gateway translates does, and an Anthropic stream cannot carry it once
 * that block stopped, so the stream fails (upstream_invalid_response)
 * rather than give the client a tool call with part of its input.
 */
import type { ErrorCode } from '../../../protocol/errors.js';
import type { Usage } from '../../../protocol/frames.js';
import { errorEvent, errorTypeOf, PING_EVENT, statusOfCode } from '../../../protocol/anthropic-errors.js';
import { messageIdOf, toAnthropicToolId, type IdSource } from './ids.js';
import { reasoningOf, stopOf, usageOf, type MessageUsage } from './reply.js';
import { TextDeltas } from './text-delta.js';

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The keepalive Anthropic sends (its own spelling, with the space): the front writes it on the Messages routes. */
export { PING_EVENT };

/** The keepalive event (CONTRACT.md: `ping` as the keepalive). */
export const ping = (): string => PING_EVENT;

export interface StreamOptions {
  /** The request enabled thinking (request.ts): reasoning deltas are a `thinking` block; otherwise they are dropped. */
  readonly thinking: boolean;
  /** Names the message when the chunks name no model (the upstream id the attempt asked for). */
  readonly model: string;
  readonly ids: IdSource;
}

type Kind = 'text' | 'thinking' | 'tool_use';

interface Block {
  readonly index: number;
  readonly kind: Kind;
  /** A tool call's provider id (to tell a new call that reuses an index from the same call). */
  readonly providerId: string | null;
}

export class MessagesEventStream {
  readonly #options: StreamOptions;
  readonly #textDeltas = new TextDeltas();
  #out = '';
  #started = false;
  #finished = false;
  #content = false;
  #blocks = 0;
  #open: Block | null = null;
  /** Tool calls by the chat chunk's tool call index. */
  readonly #calls = new Map<number, Block>();
  #toolCalls = false;
  #refused = false;
  #finishReason: unknown = null;
  #stopSequence: unknown = null;
  #usage: MessageUsage | null = null;
  #failure: { code: ErrorCode; message: string } | null = null;

  constructor(options: StreamOptions) {
    this.#options = options;
  }

  /** Whether the stream has ended (message_stop or an error event): later input gives nothing. */
  get finished(): boolean {
    return this.#finished;
  }

  /**
   * Whether what was returned so far carries content as the commit gate judges it
   * (routing/commit-gate.ts; workers/providers/translating-relay.ts, StreamTranslator.contentSent):
   * a text, thinking or argument delta, a tool call's start, the stop reason (message_delta) or
   * message_stop. message_start, an empty block start and ping do not.
   */
  get contentSent(): boolean {
    return this.#content;
  }

  /** The failure the stream ended with, when a chunk carried an error or could not be carried: what the session's sink tells ClientSink.fail (its events already written). */
  get failure(): { code: ErrorCode; message: string } | null {
    return this.#failure;
  }

  /** The usage the upstream reported (the gateway's own count); null before its usage chunk. */
  get usage(): Usage | null {
    const u = this.#usage;
    return u === null ? null : { prompt: u.input_tokens + u.cache_read_input_tokens, completion: u.output_tokens };
  }

  /** One chat SSE event's data (a `chat.completion.chunk`, an error object, or `[DONE]`) → the events it completes. */
  chunk(data: string): string {
    if (this.#finished) return '';
    if (data === '[DONE]') {
      this.#stop();
      return this.#take();
    }
    // Most chunks are a text delta alone (the first one also names the message): read in place (text-delta.ts), not parsed.
    let text: string | null;
    if (this.#started) text = this.#textDeltas.read(data);
    else {
      const first = this.#textDeltas.first(data);
      if (first !== null) this.#start({ id: first.id, model: first.model });
      text = first?.text ?? null;
    }
    if (text !== null) {
      if (text.length > 0) this.#textDelta(text);
      return this.#take();
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      parsed = null;
    }
    if (!isRecord(parsed)) {
      this.#failWith('upstream_invalid_response', 'the provider stream carried an event that is not a JSON object');
      return this.#take();
    }
    if (isRecord(parsed.error)) {
      // A provider's in-band error (CONTRACT.md, Native providers, Errors): the stream fails with the provider's words.
      this.#failWith('upstream_error', typeof parsed.error.message === 'string' ? parsed.error.message : 'the provider stream reported an error');
      return this.#take();
    }
    if (isRecord(parsed.usage)) this.#usage = usageOf(parsed.usage);
    this.#start(parsed);
    const choice = Array.isArray(parsed.choices) ? parsed.choices.find((c) => isRecord(c) && (c.index ?? 0) === 0) : undefined;
    if (isRecord(choice)) this.#choice(choice);
    return this.#take();
  }

  /** The upstream ended (with or without `[DONE]`): the block still open, message_delta, message_stop. */
  end(): string {
    if (this.#finished) return '';
    this.#stop();
    return this.#take();
  }

  /**
   * The stream failed after its head went out (the session's failure of the call, by its code): one
   * `event: error`, its type by the code's status. No message_start is owed first: Anthropic's own
   * stream may fail before it, and the SDKs raise the error either way.
   */
  fail(error: { readonly code: string; readonly message: string }): string {
    this.#error(error.code, error.message);
    return this.#take();
  }

  /** The stream's own failure (a chunk it cannot carry): reported to the session through `failure`, and the error event. */
  #failWith(code: ErrorCode, message: string): void {
    this.#failure = { code, message };
    this.#error(code, message);
  }

  #error(code: string, message: string): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#out += errorEvent(errorTypeOf(statusOfCode(code)), message);
  }

  #start(chunk: Json | null): void {
    if (this.#started) return;
    this.#started = true;
    const usage = this.#usage ?? usageOf(null);
    const model = typeof chunk?.model === 'string' && chunk.model.length > 0 ? chunk.model : this.#options.model;
    // The message as `{ id, type, role, model, content: [], stop_reason, stop_sequence, usage }` serialises, written at once.
    const id = JSON.stringify(messageIdOf(chunk?.id, this.#options.ids));
    // The input count when the first chunk has it (some upstreams report usage on every chunk); output comes in message_delta.
    const counts = usageJson({ ...usage, output_tokens: 0 });
    this.#event('message_start', `{"type":"message_start","message":{"id":${id},"type":"message","role":"assistant","model":${JSON.stringify(model)},"content":[],"stop_reason":null,"stop_sequence":null,"usage":${counts}}}`);
  }

  #choice(choice: Json): void {
    const delta = isRecord(choice.delta) ? choice.delta : {};
    const reasoning = reasoningOf(delta);
    if (reasoning !== null && this.#options.thinking) this.#delta('thinking', { type: 'thinking_delta', thinking: reasoning });
    if (typeof delta.content === 'string' && delta.content.length > 0) this.#delta('text', { type: 'text_delta', text: delta.content });
    if (typeof delta.refusal === 'string' && delta.refusal.length > 0) {
      this.#refused = true;
      this.#delta('text', { type: 'text_delta', text: delta.refusal });
    }
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) if (isRecord(call) && !this.#finished) this.#toolCall(call);
    if (this.#finished) return;
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      this.#finishReason = choice.finish_reason;
      this.#stopSequence = choice.stop_reason;
      // The blocks end here; message_delta waits for the usage chunk that follows.
      this.#close();
    }
  }

  /** A text or thinking delta: into the open block of its kind, or a new one. */
  #delta(kind: 'text' | 'thinking', delta: Json): void {
    if (this.#open?.kind !== kind) this.#openBlock(kind, kind === 'text' ? null : { type: 'thinking', thinking: '', signature: '' }, null);
    this.#content = true;
    this.#emit('content_block_delta', { index: (this.#open as Block).index, delta });
  }

  /** A text delta whose text is already JSON (a string as JSON.stringify writes it): #delta's event, written around it. */
  #textDelta(json: string): void {
    if (this.#open?.kind !== 'text') this.#openBlock('text', null, null);
    this.#content = true;
    this.#out += `event: content_block_delta\ndata: {"type":"content_block_delta","index":${(this.#open as Block).index},"delta":{"type":"text_delta","text":${json}}}\n\n`;
  }

  #toolCall(delta: Json): void {
    const chatIndex = typeof delta.index === 'number' ? delta.index : 0;
    const fn = isRecord(delta.function) ? delta.function : {};
    const providerId = typeof delta.id === 'string' && delta.id.length > 0 ? delta.id : null;
    let block = this.#calls.get(chatIndex);
    // CONTRACT.md, Streams: a call's first delta has its id and name; a new id at a known index is a new call.
    if (block === undefined || (providerId !== null && providerId !== block.providerId)) {
      const id = providerId === null ? this.#options.ids('toolu') : toAnthropicToolId(providerId);
      block = this.#openBlock('tool_use', { type: 'tool_use', id, name: typeof fn.name === 'string' ? fn.name : '', input: {} }, providerId);
      this.#calls.set(chatIndex, block);
      this.#toolCalls = true;
      this.#content = true;
    } else if (block !== this.#open) {
      this.#failWith('upstream_invalid_response', `the provider stream went back to tool call ${chatIndex} after a later block began, which an Anthropic stream cannot carry`);
      return;
    }
    if (typeof fn.arguments === 'string' && fn.arguments.length > 0) {
      this.#emit('content_block_delta', { index: block.index, delta: { type: 'input_json_delta', partial_json: fn.arguments } });
    }
  }

  #openBlock(kind: Kind, contentBlock: Json | null, providerId: string | null): Block {
    this.#close();
    const block: Block = { index: this.#blocks++, kind, providerId };
    this.#open = block;
    // null: an empty text block, the usual one, written at once.
    if (contentBlock === null) this.#event('content_block_start', `{"type":"content_block_start","index":${block.index},"content_block":{"type":"text","text":""}}`);
    else this.#emit('content_block_start', { index: block.index, content_block: contentBlock });
    return block;
  }

  #close(): void {
    if (this.#open === null) return;
    this.#event('content_block_stop', `{"type":"content_block_stop","index":${this.#open.index}}`);
    this.#open = null;
  }

  #stop(): void {
    this.#start(null);
    this.#close();
    this.#finished = true;
    this.#content = true;
    const { stop_reason, stop_sequence } = stopOf(this.#finishReason, this.#stopSequence, this.#toolCalls, this.#refused);
    const counts = usageJson(this.#usage ?? usageOf(null));
    this.#event('message_delta', `{"type":"message_delta","delta":{"stop_reason":${JSON.stringify(stop_reason)},"stop_sequence":${JSON.stringify(stop_sequence)}},"usage":${counts}}`);
    this.#event('message_stop', '{"type":"message_stop"}');
  }

  /** An event whose data is written already (`type` first, as #emit writes it). */
  #event(type: string, data: string): void {
    this.#out += `event: ${type}\ndata: ${data}\n\n`;
  }

  /** Serialised at once, `type` first as Anthropic writes it. */
  #emit(type: string, fields: Json): void {
    const rest = JSON.stringify(fields).slice(1, -1);
    this.#out += `event: ${type}\ndata: {"type":"${type}"${rest.length > 0 ? ',' : ''}${rest}}\n\n`;
  }

  #take(): string {
    const out = this.#out;
    this.#out = '';
    return out;
  }
}

/** Anthropic's usage as JSON.stringify writes it (the counts are finite numbers: reply.ts, usageOf). */
const usageJson = (u: MessageUsage): string =>
  `{"input_tokens":${u.input_tokens},"cache_creation_input_tokens":${u.cache_creation_input_tokens},"cache_read_input_tokens":${u.cache_read_input_tokens},"output_tokens":${u.output_tokens}}`;
