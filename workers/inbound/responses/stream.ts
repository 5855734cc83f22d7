/**
 * Chat completion chunks → the Responses API's stream of events, as SSE
 * text. Pure and incremental: one `ResponsesStream` per streamed answer,
 * fed each parsed chunk, then `end` or `fail`.
 *
 * The sequence is the one OpenAI sends and the `openai` SDK's accumulator
 * (lib/responses/ResponseAccumulator.ts) requires, each event with `event:`
 * named by its type and a `sequence_number` from 0:
 *
 *   response.created, response.in_progress
 *   per text:  response.output_item.added (message), response.content_part.added,
 *              response.output_text.delta…, response.output_text.done,
 *              response.content_part.done, response.output_item.done
 *   per tool call: response.output_item.added (function_call),
 *              response.function_call_arguments.delta…, response.function_call_arguments.done,
 *              response.output_item.done
 *   response.completed (or response.incomplete) with the whole response and its usage
 *   on failure: error, then response.failed
 *
 * Text that precedes tool calls is closed when the first call starts, as
 * OpenAI orders them; the calls stay open until the finish reason, since
 * chat streams address their argument fragments by index.
 */
import {
  functionCallItem,
  messageItem,
  outcomeOf,
  refusalPart,
  responseJson,
  textPart,
  toUsage,
  type Answer,
  type Echo,
  type IdSource,
  type ItemStatus,
  type Json,
} from './response.js';

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

type PartKind = 'output_text' | 'refusal';

interface OpenMessage {
  readonly index: number;
  readonly item: Json & { id: string; content: Json[] };
  /** The part being written, and its index in the item's content. */
  part: Json | null;
  kind: PartKind | null;
}

interface OpenCall {
  readonly index: number;
  readonly item: Json & { id: string; arguments: string; name: string };
  done: boolean;
}

export class ResponsesStream {
  readonly #echo: Echo;
  readonly #ids: IdSource;
  readonly #fallbackModel: string;
  #out = '';
  #sequence = 0;
  #id = '';
  #createdAt = 0;
  #model = '';
  #started = false;
  #finished = false;
  readonly #output: Json[] = [];
  #message: OpenMessage | null = null;
  /** By the chat chunk's tool call index. */
  readonly #calls = new Map<number, OpenCall>();
  #finishReason: unknown = null;
  #usage: Json | null = null;
  #serviceTier: unknown = undefined;

  /** `model` names the response if the upstream ends before its first chunk says which model answered. */
  constructor(echo: Echo, ids: IdSource, model: string) {
    this.#echo = echo;
    this.#ids = ids;
    this.#fallbackModel = model;
  }

  /** Whether the stream has ended (completed or failed): later chunks are ignored. */
  get finished(): boolean {
    return this.#finished;
  }

  /** One chat chunk → the events it completes. */
  chunk(chunk: Json): string {
    if (this.#finished) return '';
    this.#start(chunk);
    if (isRecord(chunk.usage)) this.#usage = toUsage(chunk.usage);
    if (typeof chunk.service_tier === 'string') this.#serviceTier = chunk.service_tier;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (isRecord(choice)) {
      const delta = isRecord(choice.delta) ? choice.delta : {};
      if (typeof delta.content === 'string' && delta.content.length > 0) this.#text('output_text', delta.content);
      if (typeof delta.refusal === 'string' && delta.refusal.length > 0) this.#text('refusal', delta.refusal);
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) if (isRecord(call)) this.#toolCall(call);
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        this.#finishReason = choice.finish_reason;
        this.#closeItems();
      }
    }
    return this.#take();
  }

  /** The upstream ended: the items still open, then `response.completed` (or `response.incomplete`). */
  end(): string {
    if (this.#finished) return '';
    this.#start(null);
    this.#closeItems();
    const { status, incompleteDetails } = outcomeOf(this.#finishReason);
    this.#finished = true;
    this.#emit(status === 'completed' ? 'response.completed' : 'response.incomplete', this.#response({ status, error: null, incompleteDetails }));
    return this.#take();
  }

  /**
   * The stream failed after it started: `error`, then `response.failed` with what was made so far;
   * an item still open then will never be finished, so the failed response holds it `incomplete`
   * (the status a cut-off item has), never `in_progress`.
   */
  fail(code: string, message: string): string {
    if (this.#finished) return '';
    this.#start(null);
    this.#finished = true;
    for (const item of this.#output) if (item.status === 'in_progress') item.status = 'incomplete';
    this.#emit('error', { code, message, param: null });
    this.#emit('response.failed', this.#response({ status: 'failed', error: { code, message }, incompleteDetails: null }));
    return this.#take();
  }

  #start(chunk: Json | null): void {
    if (this.#started) return;
    this.#started = true;
    this.#id = this.#ids('resp');
    this.#createdAt = typeof chunk?.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000);
    this.#model = typeof chunk?.model === 'string' ? chunk.model : this.#fallbackModel;
    const response = this.#response({ status: 'in_progress', error: null, incompleteDetails: null });
    this.#emit('response.created', response);
    this.#emit('response.in_progress', response);
  }

  #text(kind: PartKind, delta: string): void {
    const message = this.#message ?? this.#openMessage();
    const { item } = message;
    if (message.kind !== kind) {
      this.#closePart(message);
      message.part = kind === 'output_text' ? textPart('') : refusalPart('');
      message.kind = kind;
      item.content.push(message.part);
      this.#emit('response.content_part.added', { item_id: item.id, output_index: message.index, content_index: item.content.length - 1, part: message.part });
    }
    const part = message.part as Json;
    const at = { item_id: item.id, output_index: message.index, content_index: item.content.length - 1 };
    if (kind === 'output_text') {
      part.text += delta;
      this.#emit('response.output_text.delta', { ...at, delta, logprobs: [] });
    } else {
      part.refusal += delta;
      this.#emit('response.refusal.delta', { ...at, delta });
    }
  }

  #openMessage(): OpenMessage {
    const item = messageItem(this.#ids('msg'), 'in_progress', []) as OpenMessage['item'];
    const message: OpenMessage = { index: this.#output.length, item, part: null, kind: null };
    this.#output.push(item);
    this.#message = message;
    this.#emit('response.output_item.added', { output_index: message.index, item });
    return message;
  }

  #closePart(message: OpenMessage): void {
    const { part, item } = message;
    if (part === null) return;
    const at = { item_id: item.id, output_index: message.index, content_index: item.content.length - 1 };
    if (message.kind === 'output_text') this.#emit('response.output_text.done', { ...at, text: part.text, logprobs: [] });
    else this.#emit('response.refusal.done', { ...at, refusal: part.refusal });
    this.#emit('response.content_part.done', { ...at, part });
    message.part = null;
    message.kind = null;
  }

  #closeMessage(): void {
    const message = this.#message;
    if (message === null) return;
    this.#closePart(message);
    message.item.status = this.#itemStatus();
    this.#emit('response.output_item.done', { output_index: message.index, item: message.item });
    this.#message = null;
  }

  #toolCall(delta: Json): void {
    const index = typeof delta.index === 'number' ? delta.index : 0;
    const fn = isRecord(delta.function) ? delta.function : {};
    let call = this.#calls.get(index);
    if (call === undefined || call.done) {
      // CONTRACT.md, Streams: a call's first delta carries its id and name.
      this.#closeMessage();
      const callId = typeof delta.id === 'string' ? delta.id : `call_${index}`;
      const item = functionCallItem(this.#ids('fc'), 'in_progress', '', callId, typeof fn.name === 'string' ? fn.name : '') as OpenCall['item'];
      call = { index: this.#output.length, item, done: false };
      this.#output.push(item);
      this.#calls.set(index, call);
      this.#emit('response.output_item.added', { output_index: call.index, item });
    }
    if (typeof fn.arguments === 'string' && fn.arguments.length > 0) {
      call.item.arguments += fn.arguments;
      this.#emit('response.function_call_arguments.delta', { item_id: call.item.id, output_index: call.index, delta: fn.arguments });
    }
  }

  #closeItems(): void {
    this.#closeMessage();
    for (const call of this.#calls.values()) {
      if (call.done) continue;
      call.done = true;
      const { item } = call;
      this.#emit('response.function_call_arguments.done', { item_id: item.id, output_index: call.index, arguments: item.arguments, name: item.name });
      item.status = this.#itemStatus();
      this.#emit('response.output_item.done', { output_index: call.index, item });
    }
  }

  #itemStatus(): ItemStatus {
    return outcomeOf(this.#finishReason).status;
  }

  /** The `"response":…` field of a lifecycle event, as JSON text. */
  #response(state: Pick<Answer, 'status' | 'error' | 'incompleteDetails'>): string {
    const usage = state.status === 'in_progress' ? null : this.#usage;
    return `"response":${responseJson(this.#echo, { ...state, id: this.#id, createdAt: this.#createdAt, model: this.#model, output: this.#output, usage, serviceTier: this.#serviceTier })}`;
  }

  /** Serialised at once: the items are mutated as the stream goes on. `fields` as text is already JSON (a lifecycle event's response). */
  #emit(type: string, fields: Json | string): void {
    const head = `{"type":"${type}","sequence_number":${this.#sequence++}`;
    const rest = typeof fields === 'string' ? fields : JSON.stringify(fields).slice(1, -1);
    this.#out += `event: ${type}\ndata: ${head}${rest.length > 0 ? ',' : ''}${rest}}\n\n`;
  }

  #take(): string {
    const out = this.#out;
    this.#out = '';
    return out;
  }
}
