/**
 * Tracing with the OpenTelemetry JS SDK (CONTRACT.md, Tracing;
 * docs/ARCHITECTURE.md, "Tracing"). Every span is made here, on the front
 * thread: the server span from the request as the front sees it, and each
 * attempt's CLIENT span from the times and outcome its worker reports. The
 * SDK is loaded with import() when tracing starts (the front's bundle
 * leaves it in node_modules), so with tracing off not one of its modules
 * is loaded.
 *
 * Export never delays a request: spans go to a BatchSpanProcessor, which
 * sends them from its own timer; its queue is bounded
 * (`OTEL_BSP_MAX_QUEUE_SIZE`, default 2048), and a span that finds it full
 * is dropped, as is every span of an export that failed (a collector down,
 * slow past `OTEL_EXPORTER_OTLP_TIMEOUT`, or refusing): both are counted
 * (`dropped`, switchyard_spans_dropped_total).
 */
import type * as Api from '@opentelemetry/api';
import type * as Core from '@opentelemetry/core';
import type * as Resources from '@opentelemetry/resources';
import type * as Sdk from '@opentelemetry/sdk-trace-base';
import type { HttpRequest } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Operation, SpansFrame, TraceContext } from '../../protocol/frames.js';
import { ATTR, FIRST_CHUNK_EVENT, genAiOperation, genAiProvider } from '../../protocol/genai.js';
import { PRODUCT, VERSION } from '../../protocol/version.js';
import type { TracingSettings } from './settings.js';
import type { RequestResult, RequestSpan, Tracing } from './tracing.js';

interface OpenTelemetry {
  readonly api: typeof Api;
  readonly core: typeof Core;
  readonly resources: typeof Resources;
  readonly sdk: typeof Sdk;
  readonly Exporter: new () => Sdk.SpanExporter;
}

/** The BatchSpanProcessor's queue bound when OTEL_BSP_MAX_QUEUE_SIZE does not set one (the SDK's default). */
const DEFAULT_QUEUE = 2048;
/** How often the span clock's distance to the wall clock is measured again. */
const CLOCK_CHECK_MS = 60_000;
/** One line per kind of export trouble at most this often: a collector that is down fails every batch. */
const WARN_EVERY_MS = 60_000;

/** Loads the SDK and the exporter of the configured protocol, and starts the tracer. */
export async function startTracing(settings: TracingSettings, log: Logger): Promise<Tracing> {
  const [api, core, resources, sdk, exporter] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    settings.protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  return new OtelTracing({ api, core, resources, sdk, Exporter: exporter.OTLPTraceExporter }, settings, log);
}

class OtelTracing implements Tracing {
  readonly #otel: OpenTelemetry;
  readonly #provider: Sdk.BasicTracerProvider;
  readonly #tracer: Api.Tracer;
  readonly #ids: PrimedIds;
  readonly #accounting: ExportAccounting;
  readonly #propagator: Core.W3CTraceContextPropagator;
  readonly #content: boolean;
  readonly #clock = new SpanClock();
  /** The last Host header and its address and port. */
  #lastHost: readonly [string, readonly [string, number]] = ['', ['', 0]];

  constructor(otel: OpenTelemetry, settings: TracingSettings, log: Logger) {
    const { api, core, resources, sdk } = otel;
    this.#otel = otel;
    this.#content = settings.captureContent;
    const warn = rateLimited((event, message) => log.warn({ event }, message));
    // The SDK reports trouble through its diag logger and global error handler; both go to the log, rate limited.
    api.diag.setLogger(
      { error: (m) => warn('otel_error', m), warn: (m) => warn('otel_warning', m), info: () => undefined, debug: () => undefined, verbose: () => undefined },
      api.DiagLogLevel.WARN,
    );
    core.setGlobalErrorHandler((err) => warn('trace_export_failed', `traces not exported: ${err instanceof Error ? err.message : String(err)}`));
    const maxQueueSize = core.getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE') ?? DEFAULT_QUEUE;
    this.#accounting = new ExportAccounting(new otel.Exporter(), core.ExportResultCode.SUCCESS, maxQueueSize);
    const batches = new sdk.BatchSpanProcessor(this.#accounting, { maxQueueSize });
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over Switchyard's own name.
    const resource = resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ 'service.name': PRODUCT, 'service.version': VERSION }))
      .merge(resources.detectResources({ detectors: [resources.envDetector] }));
    this.#ids = new PrimedIds(new sdk.RandomIdGenerator());
    // The sampler comes from OTEL_TRACES_SAMPLER / _ARG (the provider reads them).
    this.#provider = new sdk.BasicTracerProvider({ resource, idGenerator: this.#ids, spanProcessors: [new BoundedProcessor(batches, this.#accounting)] });
    this.#tracer = this.#provider.getTracer(PRODUCT, VERSION);
    this.#propagator = new core.W3CTraceContextPropagator();
  }

  /** `server.address` and `server.port` of a Host header; the last one is kept (a pod's clients send one or two). */
  #hostAndPort(host: string): readonly [string, number] {
    if (host !== this.#lastHost[0]) this.#lastHost = [host, hostAndPort(host)];
    return this.#lastHost[1];
  }
  get dropped(): number {
    return this.#accounting.dropped;
  }

  begin(req: HttpRequest, op: Operation, route: string, requestId: string): RequestSpan {
    const { api } = this.#otel;
    const traceparent = req.getHeader('traceparent');
    const parent = traceparent === '' ? api.ROOT_CONTEXT : this.#propagator.extract(api.ROOT_CONTEXT, { traceparent, tracestate: req.getHeader('tracestate') }, api.defaultTextMapGetter);
    const [address, port] = this.#hostAndPort(req.getHeader('host'));
    const operation = genAiOperation(op);
    const attributes: Api.Attributes = {
      [ATTR.operationName]: operation,
      [ATTR.httpMethod]: 'POST',
      [ATTR.urlPath]: route,
      [ATTR.urlScheme]: 'http',
      [ATTR.requestId]: requestId,
    };
    if (address !== '') attributes[ATTR.serverAddress] = address;
    if (port > 0) attributes[ATTR.serverPort] = port;
    const span = this.#tracer.startSpan(operation, { kind: api.SpanKind.SERVER, startTime: this.#clock.now(), attributes }, parent);
    const c = span.spanContext();
    const context: TraceContext = {
      traceId: c.traceId,
      spanId: c.spanId,
      sampled: (c.traceFlags & api.TraceFlags.SAMPLED) !== 0,
      state: c.traceState?.serialize() ?? '',
      content: this.#content,
    };
    return new ServerSpan(this.#otel.api, span, operation, context, this.#clock);
  }

  attempts(frame: SpansFrame): void {
    const { api, core } = this.#otel;
    const parent = api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: frame.traceId,
      spanId: frame.parentId,
      traceFlags: api.TraceFlags.SAMPLED,
      ...(frame.state !== '' && { traceState: new core.TraceState(frame.state) }),
    });
    for (const a of frame.attempts) {
      const attributes: Api.Attributes = {
        [ATTR.operationName]: a.operation,
        [ATTR.providerName]: genAiProvider(a.provider),
        [ATTR.requestModel]: a.model,
        [ATTR.deployment]: a.deployment,
        [ATTR.attempt]: a.attempt,
      };
      if (a.address !== null) {
        attributes[ATTR.serverAddress] = a.address;
        attributes[ATTR.serverPort] = a.port;
      }
      if (a.status > 0) attributes[ATTR.httpStatus] = a.status;
      if (a.error !== null) attributes[ATTR.errorType] = a.error;
      if (a.firstChunk > 0) attributes[ATTR.timeToFirstChunk] = (a.firstChunk - a.start) / 1000;
      if (a.backoff !== null) {
        attributes[ATTR.backoffMs] = Math.round(a.backoff.ms);
        attributes[ATTR.backoffReason] = a.backoff.reason;
      }
      // The span gets the id the worker made and sent upstream as its traceparent.
      this.#ids.next = a.spanId;
      const clock = this.#clock;
      const span = this.#tracer.startSpan(`${a.operation} ${a.model}`, { kind: api.SpanKind.CLIENT, startTime: clock.wall(a.start), attributes }, parent);
      if (a.firstChunk > 0) span.addEvent(FIRST_CHUNK_EVENT, clock.wall(a.firstChunk));
      if (a.error !== null) span.setStatus({ code: api.SpanStatusCode.ERROR, message: a.error });
      span.end(clock.wall(a.end));
    }
  }

  async shutdown(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    try {
      await Promise.race([this.#provider.shutdown().catch(() => undefined), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A provider request's server span. */
class ServerSpan implements RequestSpan {
  readonly #api: typeof Api;
  readonly #span: Api.Span;
  readonly #operation: string;
  readonly #clock: SpanClock;
  readonly context: TraceContext;

  constructor(api: typeof Api, span: Api.Span, operation: string, context: TraceContext, clock: SpanClock) {
    this.#api = api;
    this.#span = span;
    this.#operation = operation;
    this.context = context;
    this.#clock = clock;
  }

  end(r: RequestResult): void {
    const span = this.#span;
    // Not sampled: nothing to record (the context still went upstream).
    if (!span.isRecording()) return;
    let requested: string | null = null;
    const facts = r.facts ?? [];
    for (let i = 0; i < facts.length; i += 2) {
      const name = facts[i] as string;
      const value = facts[i + 1] as Api.AttributeValue;
      if (name === ATTR.requestModel) requested = value as string;
      span.setAttribute(name, value);
    }
    if (r.labels !== null) {
      // `chat <alias>`: the name the caller asked for, once the gateway routed it (an unknown name stays out of span names).
      span.updateName(`${this.#operation} ${requested ?? r.labels.model}`);
      span.setAttribute(ATTR.providerName, genAiProvider(r.labels.provider));
      if (requested === null) span.setAttribute(ATTR.requestModel, r.labels.model);
    }
    span.setAttribute(ATTR.httpStatus, r.status);
    const routing = r.routing;
    if (routing !== null) {
      if (routing.deployment !== null) span.setAttribute(ATTR.deployment, routing.deployment);
      span.setAttribute(ATTR.attempts, routing.attempts);
      if (routing.fallback !== null) span.setAttribute(ATTR.fallback, routing.fallback);
      if (routing.backoff !== null) {
        span.setAttribute(ATTR.backoffMs, Math.round(routing.backoff.ms));
        span.setAttribute(ATTR.backoffReason, routing.backoff.reason);
      }
    }
    if (r.usage !== null) {
      span.setAttribute(ATTR.inputTokens, r.usage.prompt);
      span.setAttribute(ATTR.outputTokens, r.usage.completion);
    }
    if (r.ttftMs >= 0) span.setAttribute(ATTR.timeToFirstChunk, r.ttftMs / 1000);
    if (r.error !== null) span.setAttribute(ATTR.errorType, r.error);
    // HTTP server conventions: ERROR for a 5xx, unset for a 4xx; and a stream that ended with an error event.
    if ((r.status >= 500 && r.status <= 599) || (r.streamed && r.error !== null)) span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message: r.error ?? `status ${r.status}` });
    span.end(this.#clock.now());
  }
}

/**
 * The times of every span, in epoch milliseconds. The workers report theirs as performance.timeOrigin +
 * performance.now(), one clock on every thread (coherent to the microsecond); the front's spans use it
 * too, so an attempt sits inside its request. A process's timeOrigin drifts from the wall clock, which
 * NTP keeps, as it runs: times are moved by the difference, measured again each minute.
 */
class SpanClock {
  #offset = 0;
  #measuredAt = -Infinity;

  /** Now. */
  now(): number {
    return this.wall(performance.timeOrigin + performance.now());
  }

  /** A time on the threads' shared clock (timeOrigin + now) as wall-clock epoch milliseconds. */
  wall(at: number): number {
    const now = performance.now();
    if (now - this.#measuredAt > CLOCK_CHECK_MS) {
      this.#offset = Date.now() - (performance.timeOrigin + now);
      this.#measuredAt = now;
    }
    return at + this.#offset;
  }
}

/**
 * The span ids the SDK makes, except the one the worker already sent upstream for an attempt: set
 * `next` just before starting that attempt's span (one thread, nothing in between).
 */
class PrimedIds implements Sdk.IdGenerator {
  next: string | null = null;
  readonly #random: Sdk.IdGenerator;

  constructor(random: Sdk.IdGenerator) {
    this.#random = random;
  }

  generateTraceId(): string {
    return this.#random.generateTraceId();
  }

  generateSpanId(): string {
    const primed = this.next;
    if (primed === null) return this.#random.generateSpanId();
    this.next = null;
    return primed;
  }
}

/**
 * The exporter, with the counts the bound and the drop counter need. The BatchSpanProcessor hands a
 * batch to `export` in the same turn it takes it off its queue, so spans accepted minus spans handed
 * on is its queue's length, read without reaching into it.
 */
class ExportAccounting implements Sdk.SpanExporter {
  dropped = 0;
  #accepted = 0;
  #handedOn = 0;
  readonly #inner: Sdk.SpanExporter;
  readonly #success: number;
  readonly #maxQueue: number;

  constructor(inner: Sdk.SpanExporter, success: number, maxQueue: number) {
    this.#inner = inner;
    this.#success = success;
    this.#maxQueue = maxQueue;
  }

  /** Whether the processor's queue has room for one more span: counted as queued if so, as dropped if not. */
  admit(): boolean {
    if (this.#accepted - this.#handedOn >= this.#maxQueue) {
      this.dropped++;
      return false;
    }
    this.#accepted++;
    return true;
  }

  export(spans: Sdk.ReadableSpan[], done: (result: Core.ExportResult) => void): void {
    this.#handedOn += spans.length;
    this.#inner.export(spans, (result) => {
      if (result.code !== this.#success) this.dropped += spans.length;
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** The BatchSpanProcessor behind the queue bound: a span the queue has no room for is counted and dropped. */
class BoundedProcessor implements Sdk.SpanProcessor {
  readonly #inner: Sdk.SpanProcessor;
  readonly #accounting: ExportAccounting;

  constructor(inner: Sdk.SpanProcessor, accounting: ExportAccounting) {
    this.#inner = inner;
    this.#accounting = accounting;
  }

  onStart(span: Sdk.Span, parent: Api.Context): void {
    this.#inner.onStart(span, parent);
  }

  onEnd(span: Sdk.ReadableSpan): void {
    // Unsampled spans never reach the queue (the processor skips them too).
    if ((span.spanContext().traceFlags & 1) === 0) return;
    if (this.#accounting.admit()) this.#inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }
}

/** `server.address` and `server.port` from a Host header (`name`, `name:port`, `[v6]:port`). */
function hostAndPort(host: string): readonly [string, number] {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(host);
  if (m === null) return ['', 0];
  return [(m[1] as string).replace(/^\[|\]$/g, ''), m[2] === undefined ? 0 : Number(m[2])];
}

/** `warn(event, message)`, at most once per event per minute, with how many were left out since. */
function rateLimited(write: (event: string, message: string) => void): (event: string, message: string) => void {
  const last = new Map<string, { at: number; skipped: number }>();
  return (event, message) => {
    const now = performance.now();
    const seen = last.get(event);
    if (seen !== undefined && now - seen.at < WARN_EVERY_MS) {
      seen.skipped++;
      return;
    }
    write(event, seen !== undefined && seen.skipped > 0 ? `${message} (${seen.skipped} more like it in the last minute)` : message);
    last.set(event, { at: now, skipped: 0 });
  };
}
