/**
 * An Anthropic Messages stream as `chat.completion.chunk` events (pure:
 * events in, SSE text out; examples in anthropic/golden/). CONTRACT.md,
 * Native providers, Streams:
 * - `message_start` → the role chunk (`delta: {role: "assistant", content: ""}`), exactly once;
 * - text deltas → `delta.content`;
 * - each `tool_use` block → a tool call, numbered from 0 in order of
 *   appearance: its first delta has `id`, `type` and `function.name` (and
 *   empty arguments), then every `input_json_delta` fragment goes under the
 *   same `index` as `function.arguments` (in JSON mode, request.ts, the
 *   forced tool's fragments are `delta.content` instead);
 * - `message_delta` carries the stop reason and usage; at `message_stop`
 *   come the finish chunk, the usage chunk (empty `choices`) when the
 *   caller asked for `stream_options.include_usage`, and `data: [DONE]`;
 * - `ping`, thinking and signature deltas, and event types this does not
 *   know (Anthropic's versioning policy adds some) are not forwarded;
 * - `event: error` is thrown as the attempt's failure (errors.ts): before
 *   the commit point the routing layer retries it, after it the client
 *   gets one SSE error event. A stream that ends before `message_stop` was
 *   cut short (upstream_reset).
 */
import { GatewayError } from '../../../protocol/errors.js';
import type { Usage } from '../../../protocol/frames.js';
import { isRecord, tryParse } from '../compatible.js';
import { digitsValue, isStringBody, type TextInPlace } from '../json-in-place.js';
import { RoleChunkFirst } from '../translating-relay.js';
import { streamErrorFailure } from './errors.js';
import { JSON_TOOL } from './request.js';
import { compatibleUsage, emptyUsage, finishReason, readUsage } from './response.js';

export interface StreamOptions {
  /** Seconds since the epoch, for `created`. */
  readonly created: number;
  /** The caller asked for `stream_options.include_usage`. */
  readonly includeUsage: boolean;
  /** The request forced the JSON tool (request.ts). */
  readonly jsonMode: boolean;
}

/** What a content block of the Anthropic stream becomes. */
type BlockKind = { readonly kind: 'text' } | { readonly kind: 'tool'; readonly index: number } | { readonly kind: 'json' } | { readonly kind: 'other' };

const OTHER: BlockKind = { kind: 'other' };

export class MessagesStreamTranslator {
  readonly #options: StreamOptions;
  readonly #blocks = new Map<unknown, BlockKind>();
  readonly #counters = emptyUsage();
  #id: unknown = null;
  #model: unknown = null;
  #started = false;
  #stopped = false;
  #tools = 0;
  #stopReason: unknown = null;
  readonly #writes = new RoleChunkFirst();
  /** Every chunk's text up to its delta, made once at message_start: a chunk is then two concatenations. */
  #head = '';

  constructor(options: StreamOptions) {
    this.#options = options;
  }

  /** The usage counted so far (complete once the stream stopped). */
  get usage(): Usage {
    return compatibleUsage(this.#counters).usage;
  }

  /** One event (its `event:` name, null when it had none, and its data); returns the SSE text to send, '' for none. */
  event(name: string | null, data: string): string {
    return this.#writes.written(this.#event(name, data));
  }

  get contentSent(): boolean {
    return this.#writes.contentSent;
  }

  #event(name: string | null, data: string): string {
    // Most events of a stream are text deltas: their text goes on as it came, escaped, without a parse.
    const text = this.#started && !this.#stopped && (name === null || name === 'content_block_delta') ? textDeltaInPlace(data) : null;
    if (text !== null && this.#blocks.get(text.index)?.kind === 'text') return `${this.#head}{"content":"${text.escaped}"}${OPEN_TAIL}`;
    const event = tryParse(data);
    if (!isRecord(event)) throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose data is not a JSON object');
    const type = name ?? event.type;
    if (type === 'error') throw streamErrorFailure(event);
    if (this.#stopped || type === 'ping') return '';
    if (!this.#started && type !== 'message_start') {
      throw new GatewayError('upstream_invalid_response', `the provider stream sent "${String(type)}" before message_start`);
    }
    switch (type) {
      case 'message_start':
        return this.#start(event.message);
      case 'content_block_start':
        return this.#blockStart(event.index, event.content_block);
      case 'content_block_delta':
        return this.#delta(event.index, event.delta);
      case 'message_delta':
        if (isRecord(event.delta) && event.delta.stop_reason !== undefined) this.#stopReason = event.delta.stop_reason;
        readUsage(event.usage, this.#counters);
        return '';
      case 'message_stop':
        return this.#stop();
      default:
        // content_block_stop, and event types added after this was written.
        return '';
    }
  }

  /** The upstream ended; throws when it ended before message_stop. */
  end(): string {
    if (!this.#stopped) throw new GatewayError('upstream_reset', 'the provider stream ended before its message_stop event');
    return '';
  }

  #start(message: unknown): string {
    if (this.#started) return '';
    this.#started = true;
    if (isRecord(message)) {
      this.#id = message.id;
      this.#model = message.model;
      readUsage(message.usage, this.#counters);
    }
    // The envelope as JSON.stringify writes it (same keys, same order), made once per stream.
    this.#head = `data: {"id":${JSON.stringify(this.#id ?? null)},"object":"chat.completion.chunk","created":${this.#options.created},"model":${JSON.stringify(this.#model ?? null)},"choices":[{"index":0,"delta":`;
    return this.#chunk({ role: 'assistant', content: '' }, null);
  }

  #blockStart(index: unknown, block: unknown): string {
    if (!isRecord(block)) return '';
    if (block.type === 'text') {
      this.#blocks.set(index, { kind: 'text' });
      return typeof block.text === 'string' && block.text.length > 0 ? this.#chunk({ content: block.text }, null) : '';
    }
    if (block.type === 'tool_use' && this.#options.jsonMode && block.name === JSON_TOOL) {
      this.#blocks.set(index, { kind: 'json' });
      return '';
    }
    if (block.type === 'tool_use') {
      const tool = this.#tools++;
      this.#blocks.set(index, { kind: 'tool', index: tool });
      return this.#chunk({ tool_calls: [{ index: tool, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] }, null);
    }
    this.#blocks.set(index, OTHER);
    return '';
  }

  #delta(index: unknown, delta: unknown): string {
    if (!isRecord(delta)) return '';
    const block = this.#blocks.get(index) ?? OTHER;
    // The two deltas of every token are written without building their objects.
    if (delta.type === 'text_delta' && block.kind === 'text' && typeof delta.text === 'string' && delta.text.length > 0) {
      return `${this.#head}{"content":${JSON.stringify(delta.text)}}${OPEN_TAIL}`;
    }
    if (delta.type !== 'input_json_delta' || typeof delta.partial_json !== 'string' || delta.partial_json.length === 0) return '';
    if (block.kind === 'json') return `${this.#head}{"content":${JSON.stringify(delta.partial_json)}}${OPEN_TAIL}`;
    if (block.kind === 'tool') return `${this.#head}{"tool_calls":[{"index":${block.index},"function":{"arguments":${JSON.stringify(delta.partial_json)}}}]}${OPEN_TAIL}`;
    return '';
  }

  #stop(): string {
    this.#stopped = true;
    let out = this.#chunk({}, finishReason(this.#stopReason, this.#options.jsonMode));
    if (this.#options.includeUsage) {
      out += event({ id: this.#id, object: 'chat.completion.chunk', created: this.#options.created, model: this.#model, choices: [], usage: compatibleUsage(this.#counters).json });
    }
    return `${out}data: [DONE]\n\n`;
  }

  #chunk(delta: Record<string, unknown>, finish: string | null): string {
    return `${this.#head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
  }
}

/**
 * A text delta read in place: `{"type":"content_block_delta","index":<n>,
 * "delta":{"type":"text_delta","text":"<escaped>"}}`, exactly as Anthropic
 * writes it, with the text still JSON-escaped (it is spliced into the
 * chunk as it is: an equivalent JSON string, though its escapes may be
 * spelled otherwise than JSON.stringify's). Null for anything else, an
 * empty text, or a text that is not a well-formed JSON string body: the
 * parse then judges the event.
 */
export function textDeltaInPlace(data: string): TextInPlace | null {
  if (!data.startsWith(DELTA_PREFIX) || !data.endsWith(DELTA_SUFFIX)) return null;
  const textAt = data.indexOf(TEXT_DELTA, DELTA_PREFIX.length);
  if (textAt === -1) return null;
  const index = digitsValue(data, DELTA_PREFIX.length, textAt);
  const start = textAt + TEXT_DELTA.length;
  const end = data.length - DELTA_SUFFIX.length;
  if (index === -1 || end <= start || !isStringBody(data, start, end)) return null;
  return { index, escaped: data.slice(start, end) };
}

const DELTA_PREFIX = '{"type":"content_block_delta","index":';
const TEXT_DELTA = ',"delta":{"type":"text_delta","text":"';
const DELTA_SUFFIX = '"}}';

/** The rest of a chunk whose choice has no finish reason yet. */
const OPEN_TAIL = ',"logprobs":null,"finish_reason":null}]}\n\n';

const event = (chunk: Record<string, unknown>): string => `data: ${JSON.stringify(chunk)}\n\n`;
