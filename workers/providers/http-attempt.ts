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

/**
 * How a stream's bytes become the units its relay translates: SSE events (the default), or
 * another framing a provider streams in (Bedrock's AWS event stream). Flow control, deadlines
 * and the cap on one unit stay the transport's.
 */
export interface StreamFraming<B> {
  /** The content type of a stream answer in this framing; the request's `accept`. */
  readonly contentType: string;
  /** A parser for one stream: whole units out of each chunk, none kept beyond `maxUnitBytes`; `finish` at the end. */
  parser(maxUnitBytes: number): { push(chunk: Uint8Array): B; finish(): B };
}

/** SSE, every provider's stream but Bedrock's. */
const SSE: StreamFraming<SseBatch> = { contentType: 'text/event-stream', parser: (max) => new SseParser(max) };

/** A provider's side of an attempt: everything that differs between providers. `B`: what its stream framing yields. */
export interface HttpDialect<B = SseBatch> {
  /**
   * The call as the provider's request. `headers` already has the common ones (content type,
   * user agent, request id, accept); the dialect adds its credentials and versions (a promise when
   * making them is asynchronous: a signature). Throws a GatewayError (a 400: unsupported parameter
   * or operation) for a call the provider cannot take.
   */
  request(call: ProviderCall, headers: Record<string, string>): UpstreamRequest | Promise<UpstreamRequest>;
  /** The answer's headers a caller may see: the allowlist, the provider's own rate-limit headers renamed onto it. */
  headers(raw: IncomingHttpHeaders): HeaderList;
  /** A provider 4xx body (whole, in the pieces read) as the compatible error object; `raw`: the answer's headers (Bedrock names its error type there). */
  error(status: number, body: readonly Uint8Array[], raw: IncomingHttpHeaders): { readonly contentType: string; readonly body: Payload };
  /** A success body (whole) as the compatible answer, with its usage; throws upstream_invalid_response for one it cannot read. */
  reply(call: ProviderCall, body: readonly Uint8Array[], raw: IncomingHttpHeaders): { readonly body: Payload; readonly usage: Usage | null };
  /** A stream's relay for one call. */
  stream(call: ProviderCall): StreamRelay<B>;
  /** How its streams are framed; SSE when absent. */
  readonly framing?: StreamFraming<B>;
  /** A 5xx body is read (bounded) so the log can say what the provider said; otherwise it is dropped unread. */
  readonly readsServerErrors: boolean;
}

/** Turns a provider's stream into compatible SSE events, batch by batch. */
export interface StreamRelay<B = SseBatch> {
  /** What to send for one parsed batch (null: nothing yet); throws the attempt's failure on an in-band error event. */
  batch(batch: B): Payload | null;
  /** The upstream ended (`rest`: the parser's last events): what is left to send; a stream cut short fails (thrown, or by failure()). */
  end(rest: B): Payload | null;
  /** The usage the stream reported, for the access log and metrics. */
  usage(): Usage | null;
  /**
   * The stream's in-band failure (an error event), once the events before it were handed on: the
   * attempt ends with it right after they are sent, so the client keeps what came first.
   */
  failure?(): unknown;
}

const USER_AGENT = `switchyard/${VERSION}`;
/** Cap on one stream event (SSE event, event-stream message), so an upstream that never ends one cannot grow memory. */
const MAX_EVENT_BYTES = 8 * 1024 * 1024;
/** What of a 5xx body is kept for the log. */
const SERVER_ERROR_DETAIL_BYTES = 2048;

export async function httpAttempt<B = SseBatch>(dialect: HttpDialect<B>, call: ProviderCall, sink: AttemptSink): Promise<void> {
  const started = performance.now();
  const { upstream, control } = call;
  if (upstream.apiBase === null) throw new GatewayError('internal_error', 'this provider has no api_base');
  // A dialect without a framing of its own streams SSE, so its B is SseBatch.
  const framing = dialect.framing ?? (SSE as unknown as StreamFraming<B>);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-request-id': call.requestId,
    accept: call.stream ? framing.contentType : 'application/json',
  };
  // Before any timer or connection: a request the provider cannot take is the caller's 400.
  const made = dialect.request(call, headers);
  const request = made instanceof Promise ? await made : made;
  // call.control is "stop now": the client left, or a deadline passed (then its reason is the GatewayError).
  const deadlines = new Deadlines((reason) => control.abort(reason), upstream.timeouts, call.budgetMs);
  const isStream = ({ status, headers }: UpstreamHead): boolean => status >= 200 && status < 300 && String(headers['content-type'] ?? '').startsWith(framing.contentType);
  const exchange = new UpstreamExchange(call.maxResponseBytes, deadlines, call.stream ? isStream : null);
  control.onAbort((reason) => exchange.abort(reason));
  let answered = false;
  try {
    upstreamExchange(upstream.apiBase, upstream.timeouts.connectMs, 'POST', request.path, request.body, headers, exchange);
    const { status, headers: responseHeaders } = await exchange.head;
    call.headersAt = performance.now();
    answered = true;
    const passHeaders = dialect.headers(responseHeaders);
    if (status >= 300 && status < 400) throw new AttemptFailure('transient', 'upstream_redirect', 'the provider answered with a redirect, which the gateway does not follow', status, passHeaders);
    if (status >= 500 || status < 200 || status === 408) throw await serverFailure(dialect, exchange, status, passHeaders, responseHeaders);
    if (status >= 400) {
      // CONTRACT.md: provider 4xx pass through with their status and message (when no other deployment should be tried).
      const error = dialect.error(status, await exchange.body, responseHeaders);
      throw providerFailure(status, passHeaders, retryAfterMs(responseHeaders), error.contentType, error.body);
    }
    if (call.stream) {
      if (!isStream({ status, headers: responseHeaders })) {
        throw new GatewayError('upstream_invalid_response', 'the provider answered a stream request without an event stream');
      }
      sink.head(passHeaders);
      const usage = await relayEvents(exchange, call, sink, deadlines, dialect.stream(call), framing);
      sink.end(usage, performance.now() - started);
      return;
    }
    const answer = dialect.reply(call, await exchange.body, responseHeaders);
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

/** A 5xx (or 408, or 1xx) answer: transient. The caller gets the gateway's message; the provider's, redacted, is kept for the log. */
async function serverFailure<B>(dialect: HttpDialect<B>, exchange: UpstreamExchange, status: number, passHeaders: HeaderList, raw: IncomingHttpHeaders): Promise<AttemptFailure> {
  const failure = providerFailure(status, passHeaders, retryAfterMs(raw), '', null);
  if (!dialect.readsServerErrors) return failure;
  const body = await exchange.body.catch(() => null);
  if (body === null || body.length === 0) return failure;
  const bytes = joinForNow(body);
  const detail = redactKeys(utf8Text(bytes, 0, Math.min(bytes.length, SERVER_ERROR_DETAIL_BYTES)));
  return new AttemptFailure(failure.kind, failure.code, failure.message, status, passHeaders, null, failure.retryAfterMs, detail);
}

/**
 * Relays a stream: each upstream chunk is parsed into whole events (the
 * framing's parser: SSE, which keeps event names, or the dialect's own)
 * and handed to the dialect's relay, whose output goes on as one data
 * frame. Pausing the flow pauses the upstream read and holds the idle
 * deadline.
 */
async function relayEvents<B>(exchange: UpstreamExchange, call: ProviderCall, sink: AttemptSink, deadlines: Deadlines, relay: StreamRelay<B>, framing: StreamFraming<B>): Promise<Usage | null> {
  const parser = framing.parser(Math.min(MAX_EVENT_BYTES, call.maxResponseBytes));
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
      if (out !== null) sink.data(out);
      const failure = relay.failure?.() ?? null;
      if (failure !== null) throw failure;
    };
    exchange.relay((chunk) => {
      try {
        send(relay.batch(parser.push(chunk)));
      } catch (err) {
        exchange.abort(err);
      }
    });
    await exchange.body;
    send(relay.end(parser.finish()));
    return relay.usage();
  } finally {
    off();
  }
}
