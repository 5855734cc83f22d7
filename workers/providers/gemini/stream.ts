/**
 * A Gemini `streamGenerateContent?alt=sse` stream as
 * `chat.completion.chunk` events (pure: events in, SSE text out; examples
 * in gemini/golden/). Each Gemini event is a whole GenerateContentResponse
 * holding what is new since the last one. CONTRACT.md, Native providers,
 * Streams:
 * - the first event of each candidate → its role chunk (`delta: {role:
 *   "assistant", content: ""}`), exactly once;
 * - text parts → `delta.content`; thought parts → `delta.reasoning_content`
 *   when the request asked for them (`options.thoughts`), before the text
 *   of their event, otherwise not carried;
 * - each `functionCall` part → one tool call, numbered from 0 in order of
 *   appearance: Gemini sends a call whole, so its one delta has `index`,
 *   `id` (with the thought signature, tool-call-id.ts), `type`,
 *   `function.name` and all of `function.arguments`;
 * - a candidate's `finishReason` → its finish chunk (response.ts maps it);
 *   a blocked prompt (no candidate, `promptFeedback.blockReason`) → a role
 *   and a `content_filter` finish chunk;
 * - `usageMetadata` (every event may carry it; the last is the total) →
 *   the usage chunk (empty `choices`) when the caller asked for
 *   `stream_options.include_usage`, at the end, then `data: [DONE]`;
 * - an event with an `error` (an error chunk, or the error body Gemini
 *   writes after its events, stream-parser.ts) is thrown as the attempt's
 *   failure (errors.ts). Gemini marks no end besides the finish reasons: a
 *   stream that ends before every candidate has one was cut short
 *   (upstream_reset).
 */
import { GatewayError } from '../../../protocol/errors.js';
import type { Usage } from '../../../protocol/frames.js';
import { isRecord, tryParse } from '../compatible.js';
import type { StreamTranslator } from '../translating-relay.js';
import { streamErrorFailure } from './errors.js';
import { blockReasonOf, compatibleUsage, counter, finishReason, readParts, type CandidateParts, type ResponseOptions } from './response.js';

export interface StreamOptions extends ResponseOptions {
  /** The caller asked for `stream_options.include_usage`. */
  readonly includeUsage: boolean;
}

interface CandidateState {
  /** Tool calls so far (the next one's index). */
  tools: number;
  finished: boolean;
}

export class GenerateContentStreamTranslator implements StreamTranslator {
  readonly #options: StreamOptions;
  readonly #candidates = new Map<number, CandidateState>();
  readonly #next = counter();
  #usage: unknown = null;
  #id: unknown = null;
  #model: unknown = null;
  /** Every chunk's text up to its choice's index, made at the first event. */
  #head: string | null = null;
  /** A text, a tool call, a finish reason or [DONE] was written (a role chunk or an empty text is not content). */
  #content = false;

  constructor(options: StreamOptions) {
    this.#options = options;
  }

  get contentSent(): boolean {
    return this.#content;
  }

  get usage(): Usage | null {
    return this.#usage === null ? null : compatibleUsage(this.#usage).usage;
  }

  event(_name: string | null, data: string): string {
    const event = tryParse(data);
    if (!isRecord(event)) throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose data is not a JSON object');
    if (event.error !== undefined) throw streamErrorFailure(event.error);
    if (this.#head === null) this.#start(event);
    if (event.usageMetadata !== undefined) this.#usage = event.usageMetadata;
    const candidates = Array.isArray(event.candidates) ? event.candidates : [];
    let out = '';
    candidates.forEach((candidate, position) => {
      if (isRecord(candidate)) out += this.#candidate(candidate, typeof candidate.index === 'number' ? candidate.index : position);
    });
    if (candidates.length === 0 && blockReasonOf(event) !== undefined) out += this.#finish(0, this.#state(0).out, 'content_filter');
    return out;
  }

  end(): string {
    if (this.#candidates.size === 0 || [...this.#candidates.values()].some((c) => !c.finished)) {
      throw new GatewayError('upstream_reset', 'the provider stream ended before its finish reason');
    }
    let out = '';
    if (this.#options.includeUsage) {
      const usage = compatibleUsage(this.#usage).json;
      out += `data: ${JSON.stringify({ id: this.#id, object: 'chat.completion.chunk', created: this.#options.created, model: this.#model, choices: [], usage })}\n\n`;
    }
    this.#content = true;
    return `${out}data: [DONE]\n\n`;
  }

  #start(event: Record<string, unknown>): void {
    this.#id = typeof event.responseId === 'string' ? event.responseId : `chatcmpl-${this.#options.idSeed}`;
    this.#model = typeof event.modelVersion === 'string' ? event.modelVersion : this.#options.model;
    // The envelope as JSON.stringify writes it (same keys, same order), made once per stream.
    this.#head = `data: {"id":${JSON.stringify(this.#id)},"object":"chat.completion.chunk","created":${this.#options.created},"model":${JSON.stringify(this.#model)},"choices":[{"index":`;
  }

  /** A candidate's state, and its role chunk when this is its first event. */
  #state(index: number): { state: CandidateState; out: string } {
    const known = this.#candidates.get(index);
    if (known !== undefined) return { state: known, out: '' };
    const state: CandidateState = { tools: 0, finished: false };
    this.#candidates.set(index, state);
    return { state, out: this.#chunk(index, { role: 'assistant', content: '' }, null) };
  }

  #candidate(candidate: Record<string, unknown>, index: number): string {
    const { state, out: role } = this.#state(index);
    if (state.finished) return role;
    let out = role;
    const read: CandidateParts = { text: null, reasoning: null, toolCalls: [] };
    readParts(candidate.content, this.#options.idSeed, this.#next, read, this.#options.thoughts);
    if (read.reasoning !== null) out += this.#chunk(index, { reasoning_content: read.reasoning }, null);
    if (read.text !== null) out += this.#chunk(index, { content: read.text }, null);
    for (const call of read.toolCalls) out += this.#chunk(index, { tool_calls: [{ index: state.tools++, ...call }] }, null);
    if ((read.text !== null && read.text.length > 0) || read.reasoning !== null || read.toolCalls.length > 0) this.#content = true;
    const reason = candidate.finishReason;
    if (typeof reason === 'string' && reason !== 'FINISH_REASON_UNSPECIFIED') out = this.#finish(index, out, finishReason(reason, state.tools > 0));
    return out;
  }

  #finish(index: number, before: string, reason: string): string {
    (this.#candidates.get(index) as CandidateState).finished = true;
    this.#content = true;
    return before + this.#chunk(index, {}, reason);
  }

  #chunk(index: number, delta: Record<string, unknown>, finish: string | null): string {
    return `${this.#head as string}${index},"delta":${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
  }
}
