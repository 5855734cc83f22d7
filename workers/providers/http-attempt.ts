/**
 * One attempt on an HTTP provider, whatever its dialect: the transport
 * every network adapter shares. Deadlines, cancellation, backpressure (a
 * paused client pauses the upstream read), the response limit, the SSE
 * framing and the failure classification live here once; a provider
 * supplies only its dialect: how a call becomes its request, how its
 * answers, errors, headers and stream events become the compatible form
 * (workers/providers/<name>/). A success goes to the sink; anything else is
 * thrown, classified (workers/routing/failure.ts) for the attempt loop.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { joinForNow, type Payload } from '../../protocol/channel.js';
import type { HeaderList, Usage } from '../../protocol/frames.js';
import { GatewayError } from '../../protocol/errors.js';
import { VERSION } from '../../protocol/version.js';
import { Deadlines } from '../deadlines.js';
import { SseParser, type SseBatch } from '../sse.js';
import { toUpstreamError, upstreamExchange, UpstreamExchange, type UpstreamHead } from '../upstream-http.js';
import { AttemptFailure, providerFailure, redactKeys, retryAfterMs } from '../routing/failure.js';
import { utf8Text } from '../bytes.js';
import type { AttemptSink, ProviderCall } from './adapter.js';

/** What a provider request is, besides the headers every call carries. */
export interface UpstreamRequest {
  /** After the api_base's own path, query included. */
  readonly path: string;
  readonly body: string;
}

/** A provider's side of an attempt: everything that differs between providers. */
export interface HttpDialect {
  /**
   * The call as the provider's request. `headers` already has the common ones (content type,
   * user agent, request id, accept); the dialect adds its credentials and versions (a promise when
   * making them is asynchronous: bedrock's signature). Throws a GatewayError (a 400: unsupported
   * parameter or operation) for a call the provider cannot take.
   */
  request(call: ProviderCall, headers: Record<string, string>): UpstreamRequest | Promise<UpstreamRequest>;
  /** The answer's headers a caller may see: the allowlist, the provider's own rate-limit headers renamed onto it. */
  headers(raw: IncomingHttpHeaders): HeaderList;
  /** A provider 4xx body (whole, in the pieces read) as the compatible error object; `raw`: the answer's headers (bedrock names its error type there). */
  error(status: number, body: readonly Uint8Array[], raw: IncomingHttpHeaders): ProviderErrorAnswer;
  /** A success body (whole) as the compatible answer, with its usage; throws upstream_invalid_response for one it cannot read. `raw`: the answer's headers. */
  reply(call: ProviderCall, body: readonly Uint8Array[], raw: IncomingHttpHeaders): { readonly body: Payload; readonly usage: Usage | null };
  /** A stream's relay for one call. */
  stream(call: ProviderCall): StreamRelay;
  /**
   * The parser of a stream's bytes, for a provider that writes something besides SSE events into
   * one (Gemini's error body after its events); absent: the SSE parser.
   */
  streamParser?(maxEventBytes: number): StreamParser;
  /**
   * The content type of a stream answer (and the stream request's `accept`), for a provider whose
   * streams are not SSE (bedrock's AWS event stream, which its streamParser decodes into events);
   * absent: `text/event-stream`.
   */
  readonly streamContentType?: string;
  /** A 5xx body is read (bounded) so the log can say what the provider said; otherwise it is dropped unread. */
  readonly readsServerErrors: boolean;
  /**
   * Anthropic's 529 (overloaded) is kept whole, so that it reaches the caller as 529 when it is the
   * last failure (CONTRACT.md, Anthropic Messages API (inbound): "Anthropic's 529 as 529"); still
   * transient (retried, cooled). Only a passthrough sets it: a translated answer is a 502.
   */
  readonly passesOverloaded?: boolean;
}

/** A provider 4xx as the compatible error object, with what the body says about how the attempt failed. */
export interface ProviderErrorAnswer {
  readonly contentType: string;
  readonly body: Payload;
  /** The provider refused the gateway's key with a status other than 401/403 (Gemini's 400 API_KEY_INVALID): the same failure as those. */
  readonly credentialsRejected?: boolean;
  /** A retry delay the body gives and no header does (Gemini's RetryInfo), in ms: kept as `retry-after`. */
  readonly retryAfterMs?: number;
}

/** Bytes of a stream in, whole events out (workers/sse.ts's SseParser, or a provider's own around it). */
export type StreamParser = Pick<SseParser, 'push' | 'finish'>;

/** Turns a provider's stream into compatible SSE events, batch by batch. */
export interface StreamRelay {
  /** What to send for one parsed batch (null: nothing yet); throws the attempt's failure on an in-band error event. */
  batch(batch: SseBatch): Payload | null;
  /**
   * For a relay that reads the upstream's bytes itself (the anthropic passthrough's, which passes
   * Anthropic's events on as their bytes): what to send for one chunk as read, instead of batch();
   * no SSE parser is made, and end() gets an empty batch.
   */
  push?(chunk: Uint8Array): Payload | null;
  /** The upstream ended (`rest`: the parser's last events): what is left to send; a stream cut short fails (thrown, or by failure()). */
  end(rest: SseBatch): Payload | null;
  /** The usage the stream reported, for the access log and metrics. */
  usage(): Usage | null;
  /**
   * The stream's in-band failure (an error event), once the events before it were handed on: the
   * attempt ends with it right after they are sent, so the client keeps what came first.
   */
  failure?(): unknown;
  /** Whether what was sent so far carries content, when the relay made the events itself (translated); absent when it passes the provider's on. */
  contentSent?(): boolean;
}

const USER_AGENT = `switchyard/${VERSION}`;
/** Cap on one SSE event, so an upstream that never ends an event cannot grow memory. */
const MAX_EVENT_BYTES = 8 * 1024 * 1024;
/** The bound on one event of a call's stream (a relay that reads the bytes itself keeps it too). */
export const streamEventLimit = (call: ProviderCall): number => Math.min(MAX_EVENT_BYTES, call.maxResponseBytes);
/** What of a 5xx body is kept for the log. */
const SERVER_ERROR_DETAIL_BYTES = 2048;

export async function httpAttempt(dialect: HttpDialect, call: ProviderCall, sink: AttemptSink): Promise<void> {
  const started = performance.now();
  const { upstream, control } = call;
  if (upstream.apiBase === null) throw new GatewayError('internal_error', 'this provider has no api_base');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-request-id': call.requestId,
    accept: call.stream ? (dialect.streamContentType ?? SSE_CONTENT_TYPE) : 'application/json',
  };
  // CONTRACT.md, Tracing: the upstream request carries the attempt's span as its parent.
  if (call.traceparent !== null) {
    headers.traceparent = call.traceparent;
    if (call.tracestate !== '') headers.tracestate = call.tracestate;
  }
  // Before any timer or connection: a request the provider cannot take is the caller's 400.
  const made = dialect.request(call, headers);
  const request = made instanceof Promise ? await made : made;
  // call.control is "stop now": the client left, or a deadline passed (then its reason is the GatewayError).
  const deadlines = new Deadlines((reason) => control.abort(reason), upstream.timeouts, call.budgetMs);
  const isEventStream = dialect.streamContentType === undefined ? isSse : streamOf(dialect.streamContentType);
  const exchange = new UpstreamExchange(call.maxResponseBytes, deadlines, call.stream ? isEventStream : null);
  control.onAbort((reason) => exchange.abort(reason));
  let answered = false;
  try {
    call.sentAt = performance.now();
    upstreamExchange(upstream.apiBase, upstream.connectTo, upstream.timeouts.connectMs, 'POST', request.path, request.body, headers, exchange);
    const { status, headers: responseHeaders } = await exchange.head;
    call.headersAt = performance.now();
    answered = true;
    const passHeaders = dialect.headers(responseHeaders);
    if (status >= 300 && status < 400) throw new AttemptFailure('transient', 'upstream_redirect', 'the provider answered with a redirect, which the gateway does not follow', status, passHeaders);
    if (status >= 500 || status < 200 || status === 408) throw await serverFailure(dialect, exchange, status, passHeaders, responseHeaders);
    if (status >= 400) {
      // CONTRACT.md: provider 4xx pass through with their status and message (when no other deployment should be tried).
      throw clientFailure(status, passHeaders, responseHeaders, dialect.error(status, await exchange.body, responseHeaders));
    }
    if (call.stream) {
      if (!isEventStream({ status, headers: responseHeaders })) {
        throw new GatewayError('upstream_invalid_response', 'the provider answered a stream request without an event stream');
      }
      sink.head(passHeaders);
      const relay = dialect.stream(call);
      const limit = streamEventLimit(call);
      const parser = relay.push !== undefined ? null : (dialect.streamParser?.(limit) ?? new SseParser(limit));
      const usage = await relayEvents(exchange, parser, call, sink, deadlines, relay);
      sink.end(usage, performance.now() - started);
      return;
    }
    const body = await exchange.body;
    call.readAt = performance.now();
    const answer = dialect.reply(call, body, responseHeaders);
    sink.reply(status, 'application/json', passHeaders, answer.body, answer.usage, performance.now() - started);
  } catch (err) {
    if (control.aborted && control.reason instanceof GatewayError) throw control.reason;
    if (err instanceof AttemptFailure) throw err;
    throw toUpstreamError(err, answered);
  } finally {
    control.onAbort(null);
    deadlines.clear();
    // Whatever is not read by now is not wanted: the connection is dropped rather than drained.
    exchange.release();
  }
}

/** A provider 4xx: its compatible error, classified; a retry delay only its body gave becomes the answer's `retry-after`. */
function clientFailure(status: number, passHeaders: HeaderList, raw: IncomingHttpHeaders, error: ProviderErrorAnswer): AttemptFailure {
  let retryAfter = retryAfterMs(raw);
  let headers = passHeaders;
  if (retryAfter === 0 && error.retryAfterMs !== undefined && error.retryAfterMs > 0) {
    retryAfter = error.retryAfterMs;
    headers = [...passHeaders, 'retry-after', String(Math.ceil(retryAfter / 1000))];
  }
  return providerFailure(status, headers, retryAfter, error.contentType, error.body, error.credentialsRejected === true);
}

/** A 5xx (or 408, or 1xx) answer: transient. The caller gets the gateway's message; the provider's, redacted, is kept for the log. */
async function serverFailure(dialect: HttpDialect, exchange: UpstreamExchange, status: number, passHeaders: HeaderList, raw: IncomingHttpHeaders): Promise<AttemptFailure> {
  const failure = providerFailure(status, passHeaders, retryAfterMs(raw), '', null);
  if (status === OVERLOADED && dialect.passesOverloaded === true) {
    const body = await exchange.body.catch(() => null);
    if (body !== null) {
      const answer = { status, contentType: 'application/json', headers: passHeaders, body: joinForNow(body).slice() };
      return new AttemptFailure(failure.kind, failure.code, failure.message, status, passHeaders, answer, failure.retryAfterMs);
    }
  }
  if (!dialect.readsServerErrors) return failure;
  const body = await exchange.body.catch(() => null);
  if (body === null || body.length === 0) return failure;
  const bytes = joinForNow(body);
  const detail = redactKeys(utf8Text(bytes, 0, Math.min(bytes.length, SERVER_ERROR_DETAIL_BYTES)));
  return new AttemptFailure(failure.kind, failure.code, failure.message, status, passHeaders, null, failure.retryAfterMs, detail);
}

const NO_EVENTS: SseBatch = { verbatim: false, events: [], names: null };

/** Anthropic's "overloaded" status. */
const OVERLOADED = 529;

/** A stream request's success answer (relayed as it comes; anything else is collected), unless the dialect names another. */
const SSE_CONTENT_TYPE = 'text/event-stream';

/** Whether a stream request's answer is the stream itself (2xx, of the type): then it is relayed as it comes, else collected. */
const streamOf = (type: string) => ({ status, headers }: UpstreamHead): boolean => status >= 200 && status < 300 && String(headers['content-type'] ?? '').startsWith(type);
/** The SSE dialects' test, made once rather than per call. */
const isSse = streamOf(SSE_CONTENT_TYPE);

/**
 * Relays a stream: each upstream chunk is parsed into whole events (the
 * SSE parser, which keeps event names) and handed to the dialect's relay,
 * whose output goes on as one data frame. Pausing the flow pauses the
 * upstream read and holds the idle deadline.
 */
async function relayEvents(exchange: UpstreamExchange, parser: StreamParser | null, call: ProviderCall, sink: AttemptSink, deadlines: Deadlines, relay: StreamRelay): Promise<Usage | null> {
  const follow = (paused: boolean) => {
    if (paused) {
      exchange.pause();
      deadlines.hold();
    } else {
      deadlines.release();
      exchange.resume();
    }
  };
  const off = call.flow.onChange(follow);
  if (call.flow.paused) follow(true);
  try {
    const send = (out: Payload | null) => {
      if (out !== null) sink.data(out, relay.contentSent?.());
      const failure = relay.failure?.() ?? null;
      if (failure !== null) throw failure;
    };
    exchange.relay((chunk) => {
      try {
        send(parser !== null ? relay.batch(parser.push(chunk)) : relay.push !== undefined ? relay.push(chunk) : null);
      } catch (err) {
        exchange.abort(err);
      }
    });
    await exchange.body;
    send(relay.end(parser === null ? NO_EVENTS : parser.finish()));
    return relay.usage();
  } finally {
    off();
  }
}
