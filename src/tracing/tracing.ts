/**
 * What the front needs of tracing (CONTRACT.md, Tracing): a server span per
 * provider request, the attempt spans a worker reports, the count of spans
 * dropped, a bounded flush at shutdown. `FrontContext.tracing` is null when
 * tracing is off, and then the request path pays a null check and nothing
 * else: this file has no OpenTelemetry import; src/tracing/otel.ts loads the
 * SDK with import() only when tracing is on.
 */
import type { HttpRequest } from 'uWebSockets.js';
import type { ErrorCode } from '../../protocol/errors.js';
import type { Operation, RouteLabels, RoutingFacts, SpanFacts, SpansFrame, TraceContext, Usage } from '../../protocol/frames.js';

export interface Tracing {
  /**
   * A request to a provider route arrived: its server span, continuing the caller's `traceparent`
   * (read now: uWS's request object dies with its handler).
   */
  begin(req: HttpRequest, op: Operation, route: string, requestId: string): RequestSpan;
  /** A worker's report of a sampled call's upstream attempts: one CLIENT span each, children of the server span. */
  attempts(frame: SpansFrame): void;
  /** Spans dropped so far: the export queue was full, or their export failed (switchyard_spans_dropped_total). */
  readonly dropped: number;
  /** Exports what is queued, for at most `ms`, then stops. */
  shutdown(ms: number): Promise<void>;
}

export interface RequestSpan {
  /** What the call frame carries to the worker. */
  readonly context: TraceContext;
  /** The request is over: the span gets its name, attributes and status, and ends now. */
  end(result: RequestResult): void;
}

/** How a provider request ended, as the front saw it. */
export interface RequestResult {
  /** The HTTP status sent (a stream's 200 even when it ended with an error event); 499: the client left first. */
  readonly status: number;
  /** The gateway's error code when it answered with one (a stream: its error event); else null. */
  readonly error: ErrorCode | null;
  readonly streamed: boolean;
  /** Null when the request was answered before routing. */
  readonly labels: RouteLabels | null;
  readonly routing: RoutingFacts | null;
  readonly usage: Usage | null;
  /** Time to the first data event written, ms from the request's arrival; -1 for none. */
  readonly ttftMs: number;
  /** The worker's GenAI facts (protocol/frames.ts); null when it sent none. */
  readonly facts: SpanFacts | null;
}

/** The result of a request refused before it reached a worker (a 401). */
export function refusal(status: number, error: ErrorCode): RequestResult {
  return { status, error, streamed: false, labels: null, routing: null, usage: null, ttftMs: -1, facts: null };
}
