/**
 * A ConverseStream as `chat.completion.chunk` events (pure: decoded
 * event-stream messages in, SSE text out; examples in bedrock/golden/).
 * The event-stream parser (aws.ts) hands each message on as an event:
 * its `:event-type` as the name and its payload as the data; an exception
 * frame as `exception:<:exception-type>`, an error frame as
 * `error:<:error-code>` with its `:error-message` as the data.
 * CONTRACT.md, Native providers, Streams:
 * - `messageStart` → the role chunk (`delta: {role: "assistant", content: ""}`), exactly once;
 * - `contentBlockDelta` text → `delta.content` (Converse sends no start
 *   event for a text block);
 * - `contentBlockStart` with a `toolUse` → a tool call, numbered from 0 in
 *   order of appearance: its first delta has `id` (`toolUseId`), `type`
 *   and `function.name` (and empty arguments); each `toolUse.input`
 *   fragment of that block goes under the same `index` as
 *   `function.arguments` (in JSON mode, request.ts, the forced tool's
 *   fragments are `delta.content` instead);
 * - `messageStop` → the finish chunk, its reason mapped as response.ts
 *   maps it; `metadata` (Converse's last event, with the usage) → the
 *   usage chunk (empty `choices`) when the caller asked for
 *   `stream_options.include_usage`, then `data: [DONE]` (at the stream's
 *   end when no metadata came);
 * - reasoning deltas, `contentBlockStop` and event types this does not
 *   know are not forwarded; the padding field `p` of each event is ignored;
 * - an exception or error frame is thrown as the attempt's failure
 *   (errors.ts); a stream that ends before `messageStop` was cut short
 *   (upstream_reset).
 */
import { GatewayError } from '../../../protocol/errors.js';
import type { Usage } from '../../../protocol/frames.js';
import { JSON_TOOL } from '../chat-request.js';
import { isRecord, tryParse } from '../compatible.js';
import { digitsValue, isStringBody, type TextInPlace } from '../json-in-place.js';
import { RoleChunkFirst, type StreamTranslator } from '../translating-relay.js';
import { streamExceptionFailure } from './errors.js';
import { compatibleUsage, finishReason } from './response.js';

/** The event name of an exception frame (`exception:throttlingException`) and of an error frame (`error:<code>`). */
export const EXCEPTION = 'exception:';
export const ERROR = 'error:';

export interface StreamOptions {
  readonly id: string;
  /** The upstream model id. */
  readonly model: string;
  /** Seconds since the epoch, for `created`. */
  readonly created: number;
  /** The caller asked for `stream_options.include_usage`. */
  readonly includeUsage: boolean;
  /** The request forced the JSON tool (request.ts). */
  readonly jsonMode: boolean;
}

/** What a content block of the stream becomes (text blocks have no start event: any unknown index is text). */
type BlockKind = { readonly kind: 'tool'; readonly index: number } | { readonly kind: 'json' };

export class ConverseStreamTranslator implements StreamTranslator {
  readonly #options: StreamOptions;
  readonly #blocks = new Map<unknown, BlockKind>();
  #usage: Usage = { prompt: 0, completion: 0 };
  #usageJson: Record<string, unknown> | null = null;
  #started = false;
  #stopped = false;
  #done = false;
  #tools = 0;
  readonly #writes = new RoleChunkFirst();
  /** Every chunk's text up to its delta, made once: a chunk is then two concatenations. */
  readonly #head: string;

  constructor(options: StreamOptions) {
    this.#options = options;
    // The envelope as JSON.stringify writes it (same keys, same order).
    this.#head = `data: {"id":${JSON.stringify(options.id)},"object":"chat.completion.chunk","created":${options.created},"model":${JSON.stringify(options.model)},"choices":[{"index":0,"delta":`;
  }

  /** The usage the stream reported (complete once its metadata came). */
  get usage(): Usage {
    return this.#usage;
  }

  /** One message (its name and payload, as aws.ts names them); returns the SSE text to send, '' for none. Throws the attempt's failure on an exception or error frame. */
  event(name: string | null, data: string): string {
    return this.#writes.written(this.#event(name, data));
  }

  get contentSent(): boolean {
    return this.#writes.contentSent;
  }

  #event(name: string | null, data: string): string {
    if (name === null) throw new GatewayError('upstream_invalid_response', 'the provider stream sent a message without a type');
    if (name.startsWith(EXCEPTION)) throw streamExceptionFailure(name.slice(EXCEPTION.length), data);
    if (name.startsWith(ERROR)) throw streamExceptionFailure(name.slice(ERROR.length), data);
    if (this.#done) return '';
    // Most events of a stream are text deltas: their text goes on as it came, escaped, without a parse.
    if (this.#started && name === 'contentBlockDelta') {
      const text = textDeltaInPlace(data);
      if (text !== null && !this.#blocks.has(text.index)) return `${this.#head}{"content":"${text.escaped}"}${OPEN_TAIL}`;
    }
    const event = tryParse(data);
    if (!isRecord(event)) throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose payload is not a JSON object');
    if (name === 'messageStart') return this.#start();
    if (!this.#started) throw new GatewayError('upstream_invalid_response', `the provider stream sent "${name}" before messageStart`);
    switch (name) {
      case 'contentBlockStart':
        return this.#blockStart(event.contentBlockIndex, event.start);
      case 'contentBlockDelta':
        return this.#delta(event.contentBlockIndex, event.delta);
      case 'messageStop':
        return this.#stop(event.stopReason);
      case 'metadata': {
        const { json, usage } = compatibleUsage(event.usage);
        this.#usage = usage;
        this.#usageJson = json;
        return this.#stopped ? this.#finish() : '';
      }
      default:
        // contentBlockStop, and event types added after this was written.
        return '';
    }
  }

  /** The upstream ended; throws when it ended before messageStop. */
  end(): string {
    if (!this.#stopped) throw new GatewayError('upstream_reset', 'the provider stream ended before its messageStop event');
    return this.#writes.written(this.#done ? '' : this.#finish());
  }

  #start(): string {
    if (this.#started) return '';
    this.#started = true;
    return this.#chunk({ role: 'assistant', content: '' }, null);
  }

  #blockStart(index: unknown, start: unknown): string {
    const use = isRecord(start) ? start.toolUse : undefined;
    if (!isRecord(use)) return '';
    if (this.#options.jsonMode && use.name === JSON_TOOL) {
      this.#blocks.set(index, { kind: 'json' });
      return '';
    }
    const tool = this.#tools++;
    this.#blocks.set(index, { kind: 'tool', index: tool });
    return this.#chunk({ tool_calls: [{ index: tool, id: use.toolUseId, type: 'function', function: { name: use.name, arguments: '' } }] }, null);
  }

  #delta(index: unknown, delta: unknown): string {
    if (!isRecord(delta)) return '';
    const block = this.#blocks.get(index);
    // The deltas of every token are written without building their objects.
    if (typeof delta.text === 'string') return block === undefined && delta.text.length > 0 ? `${this.#head}{"content":${JSON.stringify(delta.text)}}${OPEN_TAIL}` : '';
    const input = isRecord(delta.toolUse) ? delta.toolUse.input : undefined;
    if (typeof input !== 'string' || input.length === 0 || block === undefined) return '';
    if (block.kind === 'json') return `${this.#head}{"content":${JSON.stringify(input)}}${OPEN_TAIL}`;
    return `${this.#head}{"tool_calls":[{"index":${block.index},"function":{"arguments":${JSON.stringify(input)}}}]}${OPEN_TAIL}`;
  }

  #stop(stopReason: unknown): string {
    if (this.#stopped) return '';
    this.#stopped = true;
    return this.#chunk({}, finishReason(stopReason, this.#tools > 0, this.#options.jsonMode));
  }

  /** The usage chunk when asked for, and [DONE]. */
  #finish(): string {
    this.#done = true;
    const usage = this.#options.includeUsage
      ? `data: ${JSON.stringify({ id: this.#options.id, object: 'chat.completion.chunk', created: this.#options.created, model: this.#options.model, choices: [], usage: this.#usageJson ?? compatibleUsage(null).json })}\n\n`
      : '';
    return `${usage}data: [DONE]\n\n`;
  }

  #chunk(delta: Record<string, unknown>, finish: string | null): string {
    return `${this.#head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
  }
}

/**
 * A text delta read in place: `{"contentBlockIndex":<n>,"delta":{"text":
 * "<escaped>"}}`, with or without Bedrock's padding `,"p":"<letters>"`
 * before the last brace, exactly as Bedrock writes it, the text still
 * JSON-escaped (spliced into the chunk as it is: an equivalent JSON
 * string). Null for anything else, an empty text, or a text or padding
 * that is not a well-formed JSON string body: the parse then judges the
 * event.
 */
export function textDeltaInPlace(data: string): TextInPlace | null {
  if (!data.startsWith(DELTA_PREFIX)) return null;
  const textAt = data.indexOf(TEXT_DELTA, DELTA_PREFIX.length);
  if (textAt === -1) return null;
  const index = digitsValue(data, DELTA_PREFIX.length, textAt);
  const start = textAt + TEXT_DELTA.length;
  // The text ends at the padding's opening, or at the event's end; a quote inside the text is escaped, so the first such opening is the text's end unless the text is malformed (which isStringBody finds).
  const padding = data.indexOf(PADDING_OPEN, start);
  let end: number;
  if (padding === -1) {
    if (!data.endsWith(TEXT_CLOSE)) return null;
    end = data.length - TEXT_CLOSE.length;
  } else {
    end = padding;
    const padStart = padding + PADDING_OPEN.length;
    const padEnd = data.length - PADDING_CLOSE.length;
    if (!data.endsWith(PADDING_CLOSE) || padEnd < padStart || !isStringBody(data, padStart, padEnd)) return null;
  }
  if (index === -1 || end <= start || !isStringBody(data, start, end)) return null;
  return { index, escaped: data.slice(start, end) };
}

const DELTA_PREFIX = '{"contentBlockIndex":';
const TEXT_DELTA = ',"delta":{"text":"';
const TEXT_CLOSE = '"}}';
const PADDING_OPEN = '"},"p":"';
const PADDING_CLOSE = '"}';

/** The rest of a chunk whose choice has no finish reason yet. */
const OPEN_TAIL = ',"logprobs":null,"finish_reason":null}]}\n\n';
