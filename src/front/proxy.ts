/**
 * The provider routes (chat, embeddings, responses) on the front thread: collect the
 * body within the limit, hand it to a worker, and write what comes back:
 * a whole reply, or an SSE stream relayed chunk by chunk with backpressure
 * and keep-alive comments. The front never parses a body.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errorBody, errorStatus, type ErrorCode } from '../../protocol/errors.js';
import { errorEvent, errorTypeOf, PING_EVENT } from '../../protocol/anthropic-errors.js';
import { isMessagesOperation, type EndFrame, type FailFrame, type HeadFrame, type HeaderList, type Operation, type ReplyFrame, type RouteLabels, type RoutingFacts, type SpanFacts, type Usage } from '../../protocol/frames.js';
import { payloadLength, type Payload } from '../../protocol/channel.js';
import type { CallHandlers } from '../supervisor/worker-pool.js';
import { collectBody, discardBody } from './body.js';
import type { FrontContext } from './context.js';
import { asksToClose, errorBodyFor, JSON_TYPE, send, sendBody, writeHead, type AfterAnswer, type Exchange } from './http.js';
import type { KeptAlive } from './keepalive.js';
import type { Interruptible } from './lifecycle.js';
import type { RouteSpec } from './routes.js';
import type { HistogramSeries } from '../metrics/families.js';
import type { RequestSpan } from '../tracing/tracing.js';

const SSE_HEADERS = ['cache-control', 'no-cache', 'x-accel-buffering', 'no'] as const;
const KEEPALIVE_COMMENT = ': keepalive\n\n';
const RETRY_AFTER = ['retry-after', '1'] as const;
const UNROUTED: RouteLabels = { model: 'unrouted', provider: 'none' };

/**
 * Handler for a provider route; the server has already checked the method
 * and the bearer token and made the request id.
 */
export function providerHandler(ctx: FrontContext, route: RouteSpec, op: Operation) {
  return (res: HttpResponse, req: HttpRequest, requestId: string): void => {
    // uWS: the request object dies when this function returns, so read every header now.
    const contentLength = req.getHeader('content-length');
    const span = ctx.tracing === null ? null : ctx.tracing.begin(req, op, route.path, requestId);
    const messages = isMessagesOperation(op);
    // The HTTP errors of a request that carries anthropic-version are Anthropic's on every route (server.ts's rule), its stream stays its route's.
    const anthropicErrors = messages || req.getHeader('anthropic-version') !== '';
    const call = new ProviderCall(ctx, route, res, requestId, span, asksToClose(req), messages ? anthropicHeaders(req) : null, anthropicErrors);
    call.sheddable = isSheddable(req.getHeader('x-switchyard-priority'));
    // The server has refused a malformed Content-Length (a framing error); none means chunked or empty.
    const declared = contentLength === '' ? null : Number(contentLength);
    res.onAborted(() => call.onAborted());
    if (ctx.lifecycle.active.size >= ctx.config.maxInFlight) {
      // Overload: answer without waiting on a worker rather than let latency grow without limit;
      // the body is dropped as it comes (CONTRACT.md, errors before the body is read).
      if (declared === 0) call.finishError('overloaded', undefined, 'keep', RETRY_AFTER);
      else discardBody(res, declared, (cut) => call.ex.aborted || call.finishError('overloaded', undefined, cut ?? 'keep', RETRY_AFTER));
      return;
    }
    collectBody(res, declared, ctx.config.maxRequestBodyBytes, (outcome) => {
      if (call.ex.aborted) return;
      if (!outcome.ok) {
        // The rest of the body was dropped; past a discard bound, the connection closes once the client is quiet.
        call.finishError('body_too_large', undefined, outcome.cut ?? 'keep');
        return;
      }
      call.bytesIn = outcome.body.length;
      call.start(op, outcome.body);
    });
  };
}

/**
 * CONTRACT.md, Inference-aware routing, Shedding: `x-switchyard-priority: sheddable` or a negative integer
 * may be shed; `0`, a positive integer and absent are normal. Any other value (a typo, `high`, `-1.5`) is
 * normal too: a priority the gateway cannot read never costs the caller its answer (docs/ROUTING.md).
 */
export function isSheddable(priority: string): boolean {
  if (priority === '') return false;
  const value = priority.trim().toLowerCase();
  return value === 'sheddable' || /^-0*[1-9][0-9]*$/.test(value);
}

/**
 * The headers of a Messages request a passthrough forwards byte for byte (CONTRACT.md, Anthropic
 * Messages API (inbound)): `anthropic-version` and `anthropic-beta`, as a flat list, only those sent.
 */
function anthropicHeaders(req: HttpRequest): HeaderList {
  const out: string[] = [];
  const version = req.getHeader('anthropic-version');
  if (version !== '') out.push('anthropic-version', version);
  const beta = req.getHeader('anthropic-beta');
  if (beta !== '') out.push('anthropic-beta', beta);
  return out;
}

/** One request to a provider route, from body to last byte; it is also the pool's handler for its frames. */
class ProviderCall implements CallHandlers, KeptAlive, Interruptible {
  readonly ex: Exchange;
  readonly #ctx: FrontContext;
  readonly #route: RouteSpec;
  readonly #started = performance.now();
  #id = 0;
  #labels: RouteLabels = UNROUTED;
  #streaming = false;
  #paused = false;
  #upstreamMs = 0;
  /** Milliseconds from request start to the first data event written; -1 until then (streams only). */
  #ttftMs = -1;
  /** Streams, from the first data event on: the pace histogram, and when the last data event came. */
  #pacing: HistogramSeries | null = null;
  #lastDataAt = 0;
  /** Tracing on: the request's server span. */
  readonly #span: RequestSpan | null;
  /** The error code answered (a stream: its error event), for the span. */
  #error: ErrorCode | null = null;
  /** A sampled call's GenAI facts from the worker, for the span. */
  #facts: SpanFacts | null = null;
  #usage: Usage | null = null;
  bytesIn = 0;
  /** x-switchyard-priority said the request may be shed. */
  sheddable = false;
  #bytesOut = 0;
  #finished = false;
  lastWrite = 0;
  /**
   * A stream's head and first chunks, held until the end of the turn they
   * came in (see `holdHead`), or until the end that follows them.
   */
  #heldHead: { readonly headers: HeaderList; readonly chunks: Uint8Array[] } | null = null;

  /** A Messages call: the caller's anthropic-* headers (sent to the worker); null on every other route, whose stream events and keepalives are the compatible ones (its HTTP errors follow `ex.anthropic`). */
  readonly #anthropic: HeaderList | null;

  constructor(ctx: FrontContext, route: RouteSpec, res: HttpResponse, requestId: string, span: RequestSpan | null, closeAsked: boolean, anthropic: HeaderList | null, anthropicErrors: boolean) {
    this.#ctx = ctx;
    this.#route = route;
    this.#span = span;
    this.#anthropic = anthropic;
    this.ex = { res, requestId, aborted: false, started: false, closeAsked, routing: null, calledAt: 0, overheadMs: -1, anthropic: anthropicErrors };
  }

  start(op: Operation, body: Uint8Array): void {
    this.#ctx.lifecycle.add(this);
    // The in-flight and open-stream gauges read these counters when scraped.
    this.#ctx.counters.inFlight++;
    this.ex.calledAt = performance.now();
    this.#id = this.#ctx.pool.call(op, this.ex.requestId, body, this, this.#span === null ? null : this.#span.context, this.#anthropic, this.sheddable);
  }

  onAborted(): void {
    this.ex.aborted = true;
    if (this.#id !== 0) this.#ctx.pool.cancel(this.#id);
    this.#finish(499);
  }

  // ── CallHandlers: frames from the worker ──

  reply(frame: ReplyFrame, body: Payload): void {
    this.#labels = frame.labels;
    this.ex.routing = frame;
    this.#upstreamMs = frame.upstreamMs;
    if (frame.trace !== undefined) this.#facts = frame.trace;
    this.#bytesOut = payloadLength(body);
    sendBody(this.ex, frame.status, frame.contentType, body, frame.headers);
    this.#usage = frame.usage;
    this.#finish(frame.status);
  }

  head(frame: HeadFrame): void {
    if (this.ex.aborted) return;
    this.#labels = frame.labels;
    this.ex.routing = frame;
    this.#streaming = true;
    this.#ctx.counters.streamsOpen++;
    this.#heldHead = { headers: frame.headers, chunks: [] };
    this.lastWrite = performance.now();
    this.#ctx.keepalive.add(this);
    holdHead(this);
  }

  data(bytes: Uint8Array): void {
    if (this.ex.aborted) return;
    const now = performance.now();
    if (this.#heldHead) {
      this.#heldHead.chunks.push(bytes);
      this.#bytesOut += bytes.byteLength;
    } else {
      this.#write(bytes, now);
    }
    if (this.#pacing === null) {
      // Time to first token: the first data event reaches the client (keep-alive comments do not count).
      this.#ttftMs = now - this.#started;
      const { model, provider } = this.#labels;
      const series = this.#ctx.metrics.forModel(model, provider);
      series.timeToFirstToken.observe(this.#ttftMs / 1000);
      this.#pacing = series.timePerOutputToken;
    } else {
      // The gap since the last data event, each one (docs/METRICS.md: ~10 ns, with the clock read above shared).
      this.#pacing.observe((now - this.#lastDataAt) / 1000);
    }
    this.#lastDataAt = now;
  }

  end(frame: EndFrame): void {
    this.#upstreamMs = frame.upstreamMs;
    if (frame.trace !== undefined) this.#facts = frame.trace;
    // The usage of a stream's last chunk, as the adapter reported it on `end`.
    this.#usage = frame.usage;
    if (!this.ex.aborted) {
      this.ex.res.cork(() => {
        this.#writeHeldHead();
        this.ex.res.end();
      });
    }
    this.#finish(200);
  }

  fail(frame: FailFrame): void {
    if (frame.trace !== undefined) this.#facts = frame.trace;
    if (frame.labels) {
      this.#labels = frame.labels;
      // Routed (a group was resolved), even when no attempt could be made.
      if (!this.#streaming) this.ex.routing = frame;
    }
    const code = frame.code;
    if (code.startsWith('upstream_')) this.#countUpstreamError(code);
    if (!this.#streaming) {
      this.finishError(code, frame.message, 'keep', frame.headers.length > 0 ? frame.headers : undefined);
      return;
    }
    // CONTRACT.md: a stream that fails after its first byte ends with one SSE error event, then closes
    // (a Responses API stream with its own: `error` and `response.failed`, made by the worker).
    this.#error = code;
    if (!this.ex.aborted) {
      // A Messages stream's failure is Anthropic's `event: error` (its sink writes it; this is for one the front ends itself).
      const event = frame.events ?? (this.#anthropic !== null ? errorEvent(errorTypeOf(errorStatus(code)), frame.message) : `data: ${errorBody(code, frame.message)}\n\n`);
      this.#bytesOut += Buffer.byteLength(event);
      this.ex.res.cork(() => {
        this.#writeHeldHead();
        this.ex.res.write(event);
        this.ex.res.end();
      });
    }
    this.#finish(errorStatus(code));
  }

  writeComment(): void {
    // CONTRACT.md, Anthropic Messages API (inbound): `ping` is a Messages stream's keepalive.
    if (!this.ex.aborted && !this.#paused) this.#write(this.#anthropic === null ? KEEPALIVE_COMMENT : PING_EVENT);
  }

  finishError(code: ErrorCode, message: string | undefined, after: AfterAnswer, headers?: readonly string[]): void {
    const body = errorBodyFor(this.ex, code, message);
    this.#error = code;
    this.#bytesOut = Buffer.byteLength(body);
    send(this.ex, errorStatus(code), JSON_TYPE, body, headers, after);
    this.#finish(errorStatus(code));
  }

  /** The drain timeout passed: end now with `shutting_down` (an SSE error event once streaming). */
  interrupt(): void {
    if (this.#finished) return;
    this.#ctx.pool.cancel(this.#id);
    this.fail({ t: 'fail', id: this.#id, code: 'shutting_down', message: 'the gateway is shutting down', labels: null, headers: [], deployment: null, attempts: 0, fallback: null, waitedMs: 0, backoff: null });
  }

  /** The end of the turn the head came in: it goes out with the chunks held behind it. */
  releaseHeldHead(): void {
    if (this.#heldHead) this.#write(null);
  }

  /** Writes `chunk`, after the held head if there is one, in one cork; pauses the upstream when the socket is full. */
  #write(chunk: Uint8Array | string | null, now = performance.now()): void {
    if (this.ex.aborted || this.#finished) return;
    const { res } = this.ex;
    let ok = true;
    res.cork(() => {
      ok = this.#writeHeldHead();
      if (chunk !== null) {
        ok = res.write(chunk) && ok;
        this.#bytesOut += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      }
    });
    this.lastWrite = now;
    if (!ok && !this.#paused) {
      // The client reads slower than the upstream writes: stop reading upstream until it drains.
      this.#paused = true;
      this.#ctx.pool.pause(this.#id);
      res.onWritable(() => {
        this.#paused = false;
        this.#ctx.pool.resume(this.#id);
        return true;
      });
    }
  }

  /** Inside a cork: the held head and its chunks, if any; false when the socket is full. */
  #writeHeldHead(): boolean {
    const held = this.#heldHead;
    if (held === null) return true;
    this.#heldHead = null;
    const { res } = this.ex;
    writeHead(this.ex, 200, 'text/event-stream', held.headers);
    for (let i = 0; i < SSE_HEADERS.length; i += 2) res.writeHeader(SSE_HEADERS[i] as string, SSE_HEADERS[i + 1] as string);
    if (held.chunks.length === 0) {
      // An empty write sends the status line and headers now: the client learns the stream started.
      // Its result is no backpressure signal (no body byte was written), as before heads were held.
      res.write('');
      return true;
    }
    let ok = true;
    for (const chunk of held.chunks) ok = res.write(chunk) && ok;
    return ok;
  }

  #countUpstreamError(code: ErrorCode): void {
    const { model, provider } = this.#labels;
    this.#ctx.counters.upstreamErrors++;
    this.#ctx.metrics.upstreamErrors.inc({ model, provider, code });
  }

  /** The server span ends with the request (a stream's with its last event). */
  #endSpan(status: number, routing: RoutingFacts | null, usage: Usage | null): void {
    (this.#span as RequestSpan).end({
      // A stream's status line said 200 even when it ended with an error event or its client left.
      status: this.#streaming && this.ex.started ? 200 : status,
      error: this.#error,
      streamed: this.#streaming,
      labels: this.#labels === UNROUTED ? null : this.#labels,
      routing,
      usage,
      ttftMs: this.#ttftMs,
      facts: this.#facts,
    });
  }


  /**
   * Counts, logs and releases the request, exactly once. `status` 499: the client left first.
   * docs/METRICS.md, "/status and /metrics": both count here, together, by one rule.
   */
  #finish(status: number): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#ctx.lifecycle.delete(this);
    const ctx = this.#ctx;
    if (this.#id !== 0) ctx.counters.inFlight--;
    if (this.#streaming) {
      ctx.counters.streamsOpen--;
      ctx.keepalive.delete(this);
    }
    const durationMs = performance.now() - this.#started;
    const { model, provider } = this.#labels;
    ctx.counters.record(status);
    const series = ctx.metrics.forResult(this.#route.path, model, provider, status);
    series.requests.inc();
    series.duration.observe(durationMs / 1000);
    // Only a body read in full has a size; one refused or abandoned on the way in does not.
    if (this.#id !== 0) series.requestBytes.observe(this.bytesIn);
    series.responseBytes.observe(this.#bytesOut);
    if (this.#upstreamMs > 0) series.model.upstreamDuration.observe(this.#upstreamMs / 1000);
    // What x-switchyard-overhead-ms said, when the answer had one (a routed answer whose headers went out).
    const overheadMs = this.ex.overheadMs ?? -1;
    if (overheadMs >= 0) series.model.overhead.observe(overheadMs / 1000);
    const routing = this.ex.routing ?? null;
    if (routing !== null && (routing.attempts > 1 || routing.fallback !== null)) ctx.metrics.recordRouting(model, routing);
    if (routing?.inference !== undefined) ctx.metrics.recordInferencePick(model, routing.inference);
    if (this.#error === 'capacity_exhausted') ctx.metrics.inferenceShed.inc({ model });
    const usage = this.#usage;
    if (usage) {
      series.model.promptTokens.inc(usage.prompt);
      series.model.completionTokens.inc(usage.completion);
    }
    if (this.#span !== null) this.#endSpan(status, routing, usage);
    ctx.access.write({
      requestId: this.ex.requestId,
      method: this.#route.method,
      route: this.#route.path,
      model,
      provider,
      status,
      stream: this.#streaming,
      durationMs,
      upstreamMs: this.#upstreamMs,
      ttftMs: this.#ttftMs < 0 ? null : this.#ttftMs,
      bytesIn: this.bytesIn,
      bytesOut: this.#bytesOut,
      deployment: routing?.deployment ?? null,
      attempts: routing?.attempts ?? 0,
      fallback: routing?.fallback ?? null,
      backoff: routing?.backoff ?? null,
    });
  }
}

/**
 * Streams whose head is held until the end of this turn of the event loop.
 * A stream's head, first chunk and often its end arrive as separate frames
 * in the same turn; held, they leave in one cork and one syscall instead of
 * one each. setImmediate runs right after the turn's I/O callbacks, so the
 * head is not delayed. Only the first turn is held: later chunks are
 * written as they come (holding every chunk cost 8 MB of RSS per 5,000 slow
 * streams, chunks surviving into old space).
 */
let heldHeads: ProviderCall[] = [];

function holdHead(call: ProviderCall): void {
  if (heldHeads.length === 0) setImmediate(releaseHeldHeads);
  heldHeads.push(call);
}

function releaseHeldHeads(): void {
  const calls = heldHeads;
  heldHeads = [];
  for (const call of calls) call.releaseHeldHead();
}
