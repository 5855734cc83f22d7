/**
 * What the adapters that speak Anthropic's Messages API natively share for
 * its passthrough (CONTRACT.md, Anthropic Messages API (inbound): "To an
 * `anthropic` deployment: passed through", "To a `bedrock` deployment of an
 * Anthropic model"): the stream's events as sent, the usage they report
 * (for the access log and metrics), and the commit point read from their
 * names. The anthropic adapter (anthropic/passthrough.ts) and the bedrock
 * adapter (bedrock/passthrough.ts) each make their own request; neither
 * goes near the chat translators.
 *
 * The commit gate (routing/commit-gate.ts) reads chat chunks; an Anthropic
 * stream opens with `message_start`, `content_block_start` and `ping`,
 * none of which is content. So the relay judges its own events and tells
 * the gate (`contentSent`): content is a `content_block_delta`, a
 * `message_delta` (its stop reason) or `message_stop`. An `event: error`
 * before that fails the attempt, which the loop may still retry; after it,
 * the event goes to the client as sent, the stream's last.
 */
import type { Usage } from '../../protocol/frames.js';
import { GatewayError } from '../../protocol/errors.js';
import { streamErrorFailure } from './anthropic/errors.js';
import { isRecord, tryParse } from './compatible.js';
import type { StreamTranslator } from './translating-relay.js';

/** The events that carry content, as the commit gate counts it. */
const CONTENT_EVENTS: ReadonlySet<string> = new Set(['content_block_delta', 'message_delta', 'message_stop']);
/** `"type":"…"` first, as Anthropic writes every event's data: the name of an event that came without one. */
const TYPE_FIELD = /^\{\s*"type"\s*:\s*"([A-Za-z_]+)"/;

/** Anthropic's usage → the gateway's counts: every input token the model read (uncached, cache read, cache write) and the output. */
export function messagesUsage(usage: unknown, known: Usage | null): Usage | null {
  if (!isRecord(usage)) return known;
  const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
  const input = usage.input_tokens === undefined ? (known?.prompt ?? 0) : n(usage.input_tokens) + n(usage.cache_read_input_tokens) + n(usage.cache_creation_input_tokens);
  return { prompt: input, completion: usage.output_tokens === undefined ? (known?.completion ?? 0) : n(usage.output_tokens) };
}

/** The usage of a whole Message (null for a count, or a body without one). */
export function messageReplyUsage(text: string): Usage | null {
  const json = tryParse(text);
  return isRecord(json) ? messagesUsage(json.usage, null) : null;
}

/**
 * A Messages stream passed on event by event, each as `event: <type>` and its data unchanged.
 * `unwrap`: how a provider's own framing gives the event (Bedrock's chunk payloads); absent, the
 * SSE events are Anthropic's.
 */
export class MessagesEvents implements StreamTranslator {
  readonly #unwrap: ((name: string | null, data: string) => string | null) | null;
  #content = false;
  #stopped = false;
  #usage: Usage | null = null;

  constructor(unwrap: ((name: string | null, data: string) => string | null) | null = null) {
    this.#unwrap = unwrap;
  }

  get usage(): Usage | null {
    return this.#usage;
  }

  get contentSent(): boolean {
    return this.#content;
  }

  event(name: string | null, raw: string): string {
    const data = this.#unwrap === null ? raw : this.#unwrap(name, raw);
    if (data === null) return '';
    const type = (this.#unwrap === null ? name : null) ?? TYPE_FIELD.exec(data)?.[1] ?? null;
    if (type === null) throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event with no type');
    this.note(type, data);
    // Data of several lines keeps them, each a `data:` line (a client's parser joins them back).
    return `event: ${type}\ndata: ${data.includes('\n') ? data.replaceAll('\n', '\ndata: ') : data}\n\n`;
  }

  /** Whether note() needs the data of an event of `type`: an error's before content. */
  readsData(type: string): boolean {
    return type === 'error' && !this.#content;
  }

  /** The `usage` of a message_start's message or of a message_delta, found by the caller: counted, as note() does with the whole event's data. */
  count(usage: unknown): void {
    this.#usage = messagesUsage(usage, this.#usage);
  }

  /**
   * One event of the stream judged by its type, whoever relays it (event() here, or the anthropic
   * passthrough's byte relay, which passes the events on as their bytes): the usage, the commit
   * point, the end; throws an error event's failure before content. `data` is null only where
   * readsData(type) is false; for message_start and message_delta, null means the caller counted
   * their usage itself (count()).
   */
  note(type: string, data: string | null): void {
    if (type === 'error' && !this.#content) throw streamErrorFailure(tryParse(data ?? ''));
    if ((type === 'message_start' || type === 'message_delta') && data !== null) {
      const event = tryParse(data);
      this.count(isRecord(event) ? (type === 'message_start' && isRecord(event.message) ? event.message.usage : event.usage) : null);
    }
    if (type === 'message_stop' || type === 'error') this.#stopped = true;
    if (CONTENT_EVENTS.has(type)) this.#content = true;
  }

  end(): string {
    // A stream that ended before message_stop (or its error event) was cut short: the attempt fails, as a chat stream's would.
    if (!this.#stopped) throw new GatewayError('upstream_reset', 'the provider stream ended before message_stop');
    return '';
  }
}
