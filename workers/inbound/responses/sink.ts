/**
 * A Responses API call on the chat path (ARCHITECTURE.md, "Inbound formats
 * = translators too"): the session routes it like a chat call, asks
 * `attempt` what to send the deployment it picked, and gives the adapter
 * this sink, which turns the chat answer back into the Responses API's
 * before passing it on. A deployment with params.responses_api gets the
 * request itself (as `responses`, `store: false`), and its answer goes
 * through as it is.
 */
import type { Payload } from '../../../protocol/channel.js';
import type { Upstream } from '../../../protocol/config.js';
import type { ErrorCode } from '../../../protocol/errors.js';
import type { Backoff, HeaderList, InferencePick, Operation, RouteLabels, Usage } from '../../../protocol/frames.js';
import { utf8Text } from '../../bytes.js';
import type { ClientSink } from '../../routing/attempts.js';
import { SseParser } from '../../sse.js';
import { replyTranslated } from '../whole-reply.js';
import { toChatRequest } from './request.js';
import { echoOf, toResponse, uniqueIds, type Echo, type IdSource, type Json } from './response.js';
import { ResponsesStream } from './stream.js';

/** The adapter has bounded each event by the response limit already; this only keeps the parser's own check meaningful. */
const MAX_EVENT_BYTES = 64 * 1024 * 1024;
const LF = 0x0a;

type FailData = { code: ErrorCode; message: string; events?: string };

const NO_HEADERS: HeaderList = [];

/**
 * The attempt loop's client sink for a Responses call: it sees only what an attempt committed (the
 * loop's commit gate holds the rest), and `attempt` starts each attempt's translation afresh.
 */
export class ResponsesSink implements ClientSink {
  readonly #inner: ClientSink;
  readonly #request: Json;
  readonly #ids: IdSource;
  #echo: Echo | null = null;
  #chat: Json | null = null;
  #passThrough = false;
  #streaming = false;
  #stream: ResponsesStream | null = null;
  #parser: SseParser | null = null;
  /** An error event inside the chat stream: answered as the stream's failure when it ends. */
  #inBandError: FailData | null = null;
  /** Pass-through: events relayed so far, which is the next event's sequence number. */
  #relayed = 0;

  /** `request`: the Responses API body, checked (protocol/requests.ts). */
  constructor(inner: ClientSink, request: Json, ids: IdSource = uniqueIds) {
    this.#inner = inner;
    this.#request = request;
    this.#ids = ids;
  }

  /**
   * The messages of its chat translation (made now, once, as `attempt` makes it): what an inference-aware
   * pick hashes, before any attempt. Null when it cannot be translated (its attempt fails the same way).
   */
  chatMessages(): readonly unknown[] | null {
    try {
      this.#chat ??= toChatRequest(this.#request);
    } catch {
      return null;
    }
    const messages = this.#chat.messages;
    return Array.isArray(messages) ? messages : null;
  }

  /**
   * What to send the deployment `upstream`: the Responses body as it is, or
   * its chat translation (made once, on the first attempt that needs it;
   * an `unsupported_parameter` for what chat cannot carry).
   */
  attempt(upstream: Upstream): { op: Operation; body: Json } {
    this.#stream = null;
    this.#parser = null;
    this.#inBandError = null;
    this.#relayed = 0;
    this.#passThrough = upstream.responsesApi;
    if (this.#passThrough) return { op: 'responses', body: { ...this.#request, model: upstream.upstreamModel, store: false } };
    const chat = (this.#chat ??= toChatRequest(this.#request));
    chat.model = upstream.upstreamModel;
    return { op: 'chat', body: chat };
  }

  reply(status: number, contentType: string, headers: HeaderList, body: Payload, usage: Usage | null, upstreamMs: number): void {
    // A provider 4xx passes through: its error object is the same in both APIs.
    if (this.#passThrough || status < 200 || status >= 300) {
      this.#inner.reply(status, contentType, headers, body, usage, upstreamMs);
      return;
    }
    replyTranslated(this.#inner, status, headers, body, usage, upstreamMs, (completion: Json) => toResponse(completion, this.#echoOf(), this.#ids));
  }

  head(headers: HeaderList): void {
    this.#streaming = true;
    this.#inner.head(headers);
  }

  data(bytes: Payload): void {
    if (this.#passThrough) {
      this.#relayed += countEvents(bytes);
      this.#inner.data(bytes);
      return;
    }
    const stream = (this.#stream ??= new ResponsesStream(this.#echoOf(), this.#ids, String(this.#chat?.model ?? '')));
    const parser = (this.#parser ??= new SseParser(MAX_EVENT_BYTES));
    let out = '';
    for (const piece of bytes instanceof Uint8Array ? [bytes] : bytes) {
      const batch = parser.push(piece);
      if (batch.verbatim) {
        for (let i = 0; i < batch.bounds.length; i += 2) out += this.#event(stream, utf8Text(batch.chunk, batch.bounds[i], batch.bounds[i + 1]));
      } else {
        for (const data of batch.events) out += this.#event(stream, data);
      }
    }
    if (out.length > 0) this.#inner.data(Buffer.from(out));
  }

  end(usage: Usage | null, upstreamMs: number): void {
    if (!this.#passThrough) {
      const stream = (this.#stream ??= new ResponsesStream(this.#echoOf(), this.#ids, String(this.#chat?.model ?? '')));
      if (this.#inBandError) {
        // Its events went out with the chunk; the front is told of the failure and writes nothing more.
        this.#inner.fail({ ...this.#inBandError, events: '' }, NO_HEADERS);
        return;
      }
      const tail = stream.end();
      if (tail.length > 0) this.#inner.data(Buffer.from(tail));
    }
    this.#inner.end(usage, upstreamMs);
  }

  routed(deployment: string | null, attempts: number, fallback: string | null, labels: RouteLabels, waitedMs: number, backoff: Backoff | null, inference?: InferencePick | null): void {
    this.#inner.routed(deployment, attempts, fallback, labels, waitedMs, backoff, inference);
  }

  fail(error: { code: ErrorCode; message: string }, headers: HeaderList = NO_HEADERS): void {
    if (!this.#streaming) {
      this.#inner.fail(error, headers);
      return;
    }
    // After the head the answer is an event stream: the failure is the Responses API's events, not chat's `data: {"error":…}`.
    const events = this.#passThrough ? errorEvent(error, this.#relayed) : (this.#stream ?? new ResponsesStream(this.#echoOf(), this.#ids, String(this.#chat?.model ?? ''))).fail(error.code, error.message);
    this.#inner.fail({ ...error, events }, NO_HEADERS);
  }

  #event(stream: ResponsesStream, data: string): string {
    if (data === '[DONE]' || stream.finished) return '';
    const chunk = JSON.parse(data) as Json;
    const error = chunk.error as { code?: unknown; message?: unknown } | undefined;
    if (error && typeof error === 'object') {
      // A provider's in-band error (CONTRACT.md, Streams): the stream fails with the provider's words.
      const message = typeof error.message === 'string' ? error.message : 'the provider stream reported an error';
      this.#inBandError = { code: 'upstream_error', message };
      return stream.fail(typeof error.code === 'string' ? error.code : 'upstream_error', message);
    }
    return stream.chunk(chunk);
  }

  #echoOf(): Echo {
    return (this.#echo ??= echoOf(this.#request));
  }
}

/** The Responses API's `error` event, for a passed-through stream that broke after `relayed` events. */
function errorEvent(error: { code: ErrorCode; message: string }, relayed: number): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: relayed, code: error.code, message: error.message, param: null })}\n\n`;
}

/** Whole SSE events in `bytes`: each ends with a blank line, the only `\n\n` the adapter's canonical events have. */
function countEvents(bytes: Payload): number {
  let events = 0;
  let before = 0;
  for (const piece of bytes instanceof Uint8Array ? [bytes] : bytes) {
    for (let i = piece.indexOf(LF); i !== -1; i = piece.indexOf(LF, i + 1)) if ((i === 0 ? before : piece[i - 1]) === LF) events++;
    if (piece.length > 0) before = piece[piece.length - 1] as number;
  }
  return events;
}
