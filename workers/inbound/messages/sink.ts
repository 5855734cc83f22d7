/**
 * An Anthropic Messages call on the chat path (ARCHITECTURE.md, "Turn 3
 * shapes": a second inbound API beside the first): the session routes it
 * like a chat call, asks `attempt` what to send the deployment it picked,
 * and gives the attempt loop this sink, which turns the chat answer back
 * into Anthropic's before passing it on. A deployment whose adapter speaks
 * Messages itself (anthropic, Bedrock's Claude: `Provider.speaksMessages`)
 * gets the request as the caller sent it (`messages`, only `model`
 * replaced, the caller's anthropic-* headers with it), and its answer goes
 * through as it is: the passthrough is a kind of call of those adapters,
 * not a branch of the translators here.
 *
 * Errors are Anthropic's whatever the path (CONTRACT.md, Anthropic
 * Messages API (inbound), Errors): a provider 4xx in the compatible
 * envelope is rewritten into Anthropic's shape here; the gateway's own
 * failures go to the front as codes, which writes them in Anthropic's shape
 * (src/front/http.ts, errorBodyFor); a failure after a stream's commit is
 * one `event: error`.
 */
import { wholePayload, type Payload } from '../../../protocol/channel.js';
import type { Upstream } from '../../../protocol/config.js';
import { errorEvent, errorTypeOf, fromCompatibleError, statusOfCode } from '../../../protocol/anthropic-errors.js';
import type { ErrorCode } from '../../../protocol/errors.js';
import type { Backoff, HeaderList, InferencePick, Operation, RouteLabels, Usage } from '../../../protocol/frames.js';
import { utf8Text } from '../../bytes.js';
import type { ClientSink } from '../../routing/attempts.js';
import { SseParser, type SseBatch } from '../../sse.js';
import { replyTranslated } from '../whole-reply.js';
import { uniqueIds, type IdSource } from './ids.js';
import { toMessage } from './reply.js';
import { showsThinking, toChatRequest, type ChatTranslation, type Thinking } from './request.js';
import { MessagesEventStream } from './stream.js';

type Json = Record<string, unknown>;

/** The adapter has bounded each event by the response limit already; this only keeps the parser's own check meaningful. */
const MAX_EVENT_BYTES = 64 * 1024 * 1024;
const NO_HEADERS: HeaderList = [];
/**
 * What the chat translation derives from a field only Anthropic has (`disable_parallel_tool_use` →
 * `parallel_tool_calls: false`): an adapter with no equivalent (gemini, Bedrock's Converse) drops it
 * as `drop_params` would, since an Anthropic-only field is never an error (CONTRACT.md); a chat
 * caller's own `parallel_tool_calls: false` is still refused there.
 */
const DERIVED_HINTS: ReadonlySet<string> = new Set(['parallel_tool_calls']);

/** What the attempt loop sends one deployment: the operation, its body and the caller's headers a passthrough forwards. */
export interface MessagesAttempt {
  readonly op: Operation;
  readonly body: Json;
  readonly headers?: HeaderList;
  /** The chat translation's derived parameters an adapter drops rather than refuses (ProviderCall.droppable). */
  readonly droppable?: ReadonlySet<string>;
  /** The request's `thinking`, for an adapter with a reasoning control of its own (ProviderCall.thinking). */
  readonly thinking?: Thinking;
}

export interface MessagesSinkOptions {
  /** The caller's `anthropic-version` / `anthropic-beta` (the call frame's headers). */
  readonly headers: HeaderList;
  /** Whether the deployment's adapter speaks Messages itself (PROVIDERS[…].speaksMessages). */
  readonly native: (upstream: Upstream) => boolean;
  /** Named in the Anthropic error bodies this sink writes. */
  readonly requestId: string;
  /** `count_tokens`: the count passes as it comes, from either path (session.ts picks the counter). */
  readonly op: 'messages' | 'count_tokens';
  readonly ids?: IdSource;
}

/**
 * The attempt loop's client sink for a Messages call: it sees only what an attempt committed (the
 * loop's commit gate holds the rest), and `attempt` starts each attempt's translation afresh.
 */
export class MessagesSink implements ClientSink {
  readonly #inner: ClientSink;
  readonly #request: Json;
  readonly #options: MessagesSinkOptions;
  readonly #ids: IdSource;
  #translation: ChatTranslation | null = null;
  #passThrough = false;
  #streaming = false;
  #model = '';
  #stream: MessagesEventStream | null = null;
  #parser: SseParser | null = null;

  /** `request`: the Messages body, checked (protocol/request-body.ts plainMessages, or the schema). */
  constructor(inner: ClientSink, request: Json, options: MessagesSinkOptions) {
    this.#inner = inner;
    this.#request = request;
    this.#options = options;
    this.#ids = options.ids ?? uniqueIds;
  }

  /**
   * The messages of its chat translation (made now, once, as `attempt` makes it): what an inference-aware
   * pick hashes, before any attempt. Null when it cannot be translated (its attempt fails the same way).
   */
  chatMessages(): readonly unknown[] | null {
    try {
      this.#translation ??= toChatRequest(this.#request);
    } catch {
      return null;
    }
    const messages = this.#translation.chat.messages;
    return Array.isArray(messages) ? messages : null;
  }

  /**
   * What to send the deployment `upstream`: the Messages body as it is (only `model` replaced) to an
   * adapter that speaks Messages, otherwise its chat translation (made once, on the first attempt
   * that needs it; a 400 for a block chat cannot carry). A count goes as it is either way.
   */
  attempt(upstream: Upstream): MessagesAttempt {
    this.#stream = null;
    this.#parser = null;
    this.#model = upstream.upstreamModel;
    this.#passThrough = this.#options.op === 'count_tokens' || this.#options.native(upstream);
    if (this.#passThrough) return { op: this.#options.op, body: { ...this.#request, model: upstream.upstreamModel }, headers: this.#options.headers };
    const translation = (this.#translation ??= toChatRequest(this.#request));
    translation.chat.model = upstream.upstreamModel;
    return { op: 'chat', body: translation.chat, droppable: DERIVED_HINTS, ...(translation.thinking === null ? {} : { thinking: translation.thinking }) };
  }

  reply(status: number, contentType: string, headers: HeaderList, body: Payload, usage: Usage | null, upstreamMs: number): void {
    if (status < 200 || status >= 300) {
      // A provider 4xx, from whichever attempt was last: Anthropic's own passes as sent, the compatible envelope is rewritten.
      const text = utf8Text(wholePayload(body));
      if (isAnthropicError(text)) this.#inner.reply(status, contentType, headers, body, usage, upstreamMs);
      else this.#inner.reply(status, 'application/json', headers, Buffer.from(fromCompatibleError(status, text, this.#options.requestId)), usage, upstreamMs);
      return;
    }
    if (this.#passThrough) {
      this.#inner.reply(status, contentType, headers, body, usage, upstreamMs);
      return;
    }
    replyTranslated(this.#inner, status, headers, body, usage, upstreamMs, (completion: Json) => JSON.stringify(toMessage(completion, { thinking: this.#thinking(), model: this.#model, ids: this.#ids })));
  }

  head(headers: HeaderList): void {
    this.#streaming = true;
    this.#inner.head(headers);
  }

  data(bytes: Payload): void {
    if (this.#passThrough) {
      this.#inner.data(bytes);
      return;
    }
    const stream = this.#eventStream();
    const parser = (this.#parser ??= new SseParser(MAX_EVENT_BYTES));
    let out = '';
    if (bytes instanceof Uint8Array) out = translated(stream, parser.push(bytes));
    else for (const piece of bytes) out += translated(stream, parser.push(piece));
    if (out.length > 0) this.#inner.data(Buffer.from(out));
  }

  end(usage: Usage | null, upstreamMs: number): void {
    if (!this.#passThrough) {
      const stream = this.#eventStream();
      const failure = stream.failure;
      if (failure !== null) {
        // Its `event: error` went out with the chunk that carried it; the front is told of the failure and writes nothing more.
        this.#inner.fail({ ...failure, events: '' }, NO_HEADERS);
        return;
      }
      const tail = stream.end();
      if (tail.length > 0) this.#inner.data(Buffer.from(tail));
      usage ??= stream.usage;
    }
    this.#inner.end(usage, upstreamMs);
  }

  routed(deployment: string | null, attempts: number, fallback: string | null, labels: RouteLabels, waitedMs: number, backoff: Backoff | null, inference?: InferencePick | null): void {
    this.#inner.routed(deployment, attempts, fallback, labels, waitedMs, backoff, inference);
  }

  fail(error: { code: ErrorCode; message: string }, headers: HeaderList = NO_HEADERS): void {
    if (!this.#streaming) {
      // Before any byte: the HTTP error, which the front writes in Anthropic's shape (never a 200).
      this.#inner.fail(error, headers);
      return;
    }
    // After the commit: one `event: error` (CONTRACT.md), whichever path the stream took.
    const events = this.#passThrough ? errorEvent(errorTypeOf(statusOfCode(error.code)), error.message) : this.#eventStream().fail(error);
    this.#inner.fail({ ...error, events }, NO_HEADERS);
  }

  #eventStream(): MessagesEventStream {
    return (this.#stream ??= new MessagesEventStream({ thinking: this.#thinking(), model: this.#model, ids: this.#ids }));
  }

  #thinking(): boolean {
    return showsThinking(this.#translation?.thinking ?? null);
  }
}

/** The Anthropic events of one batch of chat events. */
function translated(stream: MessagesEventStream, batch: SseBatch): string {
  let out = '';
  if (!batch.verbatim) {
    for (const data of batch.events) out += stream.chunk(data);
    return out;
  }
  const { chunk, bounds } = batch;
  // Decoded once: text of ASCII alone (as long as its bytes) has its events at their byte offsets.
  const text = utf8Text(chunk);
  if (text.length === chunk.length) for (let i = 0; i < bounds.length; i += 2) out += stream.chunk(text.slice(bounds[i], bounds[i + 1]));
  else for (let i = 0; i < bounds.length; i += 2) out += stream.chunk(utf8Text(chunk, bounds[i], bounds[i + 1]));
  return out;
}

/** Whether an error body is already Anthropic's `{"type":"error","error":{"type",…}}`. */
function isAnthropicError(text: string): boolean {
  try {
    const json = JSON.parse(text) as { type?: unknown; error?: { type?: unknown } } | null;
    return json?.type === 'error' && typeof json.error?.type === 'string';
  } catch {
    return false;
  }
}
