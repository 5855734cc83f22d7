/**
 * A traced call on the worker's side (CONTRACT.md, Tracing; docs/ARCHITECTURE.md,
 * "Tracing"). The front made the server span and sent its context in the call
 * frame. Here each upstream attempt gets its span id, which goes upstream as
 * the `traceparent` parent, sampled or not. When the call is sampled, the
 * worker also keeps what only it can read: the request's model and parameters
 * (from the parsed body), the answer's model, id and finish reasons (found in
 * the answer's bytes as they pass, without parsing a stream), the messages
 * when content capture is on, and each attempt's times and outcome. The facts
 * ride on the frame that ends the call; the attempts go in a `spans` frame
 * once the call is over here, so a call whose client left still has them. The
 * front turns both into spans: no OpenTelemetry code runs in a worker.
 */
import type { Payload } from '../protocol/channel.js';
import { joinForNow } from '../protocol/channel.js';
import type { AttemptSpan, Backoff, Operation, SpanFacts, SpansFrame, TraceContext } from '../protocol/frames.js';
import type { Upstream } from '../protocol/config.js';
import { ATTR, REQUEST_PARAMS } from '../protocol/genai.js';
import { utf8Text } from './bytes.js';
import { inputContent, OutputContent } from './trace-content.js';

/** performance.now() + this is epoch milliseconds, on every thread alike (the front's spans use the same clock). */
const EPOCH = performance.timeOrigin;
/** An answer larger than this is searched at its two ends only: the model, id and finish reasons sit there in every compatible format. */
const SCAN_WHOLE_BYTES = 64 * 1024;
const SCAN_END_BYTES = 8 * 1024;

/** What the attempt loop tells the trace when an attempt is over. */
export interface AttemptOutcome {
  readonly deployment: string;
  readonly attempt: number;
  readonly op: Operation;
  readonly upstream: Upstream;
  /** performance.now() when the attempt began, and when its request was sent (0: never). */
  readonly startedAt: number;
  readonly sentAt: number;
  /** The upstream's HTTP status; 0 when none. */
  readonly status: number;
  readonly error: string | null;
  /** performance.now() of a stream's first content; 0 when none. */
  readonly firstChunkAt: number;
  /** The wait just before the attempt; null when none. */
  readonly backoff: Backoff | null;
}

export class CallTrace {
  readonly sampled: boolean;
  readonly tracestate: string;
  readonly #traceId: string;
  readonly #parentId: string;
  readonly #flags: string;
  /** The span id of the attempt under way (or last made). */
  #spanId = '';
  readonly #attempts: AttemptSpan[] = [];
  readonly #request: SpanFacts;
  #responseModel: string | null = null;
  #responseId: string | null = null;
  readonly #finishReasons: string[] = [];
  readonly #output: OutputContent | null;

  /** `body`: the parsed request body; null when it could not be read. */
  constructor(context: TraceContext, op: Operation, body: Record<string, unknown> | null) {
    this.sampled = context.sampled;
    this.tracestate = context.state;
    this.#traceId = context.traceId;
    this.#parentId = context.spanId;
    this.#flags = context.sampled ? '01' : '00';
    this.#request = context.sampled && body !== null ? requestFacts(op, body, context.content) : [];
    this.#output = context.sampled && context.content && op !== 'embeddings' ? new OutputContent() : null;
  }

  /** A new attempt: its span id, and the `traceparent` that names it for the upstream. */
  begin(): string {
    this.#spanId = randomSpanId();
    return `00-${this.#traceId}-${this.#spanId}-${this.#flags}`;
  }

  /** The attempt begun last is over. */
  attempted(o: AttemptOutcome): void {
    if (!this.sampled) return;
    const [address, port] = hostOf(o.upstream);
    this.#attempts.push({
      spanId: this.#spanId,
      deployment: o.deployment,
      attempt: o.attempt,
      operation: o.op === 'embeddings' ? 'embeddings' : 'chat',
      provider: o.upstream.provider,
      model: o.upstream.upstreamModel,
      address,
      port,
      start: EPOCH + (o.sentAt || o.startedAt),
      end: EPOCH + performance.now(),
      // A provider with no network (mock) made no HTTP request: its answer's status is no upstream's.
      status: address === null ? 0 : o.status,
      error: o.error,
      firstChunk: o.firstChunkAt === 0 ? 0 : EPOCH + o.firstChunkAt,
      backoff: o.backoff,
    });
  }

  /** The bytes of the answer as the client gets them: a whole reply, or stream events (`stream`). */
  observe(bytes: Payload, stream: boolean): void {
    const whole = bytes instanceof Uint8Array ? bytes : joinForNow(bytes);
    const text = whole.length <= SCAN_WHOLE_BYTES ? utf8Text(whole) : `${utf8Text(whole, 0, SCAN_END_BYTES)}\n${utf8Text(whole, whole.length - SCAN_END_BYTES)}`;
    this.#responseModel ??= firstString(MODEL, text);
    this.#responseId ??= firstString(ID, text);
    for (const m of text.matchAll(FINISH_REASON)) this.#finishReasons.push(unescape(m[1] as string));
    if (this.#output !== null) this.#output.observe(whole.length === text.length ? text : utf8Text(whole), stream);
  }

  /** The GenAI attributes for the server span, on the frame that ends the call. */
  facts(): SpanFacts {
    const out: (string | number | boolean | readonly string[])[] = [...this.#request];
    if (this.#responseModel !== null) out.push(ATTR.responseModel, this.#responseModel);
    if (this.#responseId !== null) out.push(ATTR.responseId, this.#responseId);
    if (this.#finishReasons.length > 0) out.push(ATTR.finishReasons, this.#finishReasons);
    const output = this.#output?.messages() ?? null;
    if (output !== null) out.push(ATTR.outputMessages, output);
    return out;
  }

  /** The attempts, once the call is over in this worker; null when there is nothing to report. */
  spans(): SpansFrame | null {
    if (!this.sampled || this.#attempts.length === 0) return null;
    return { t: 'spans', traceId: this.#traceId, parentId: this.#parentId, state: this.tracestate, attempts: this.#attempts };
  }
}

/** The request's model, stream flag and the parameters the conventions name; its messages when captured. */
function requestFacts(op: Operation, body: Record<string, unknown>, content: boolean): SpanFacts {
  const out: (string | number | boolean | readonly string[])[] = [];
  if (typeof body.model === 'string') out.push(ATTR.requestModel, body.model);
  if (op !== 'embeddings') out.push(ATTR.requestStream, body.stream === true);
  for (const [field, attribute] of REQUEST_PARAMS) {
    const value = body[field];
    if (typeof value === 'number' && Number.isFinite(value)) {
      if (field !== 'n' || value !== 1) out.push(attribute, value);
    } else if (typeof value === 'string') {
      out.push(attribute, [value]);
    } else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
      out.push(attribute, value as string[]);
    }
  }
  if (content) out.push(...inputContent(op, body));
  return out;
}

const MODEL = /"model"\s*:\s*"((?:[^"\\]|\\.)*)"/;
const ID = /"id"\s*:\s*"((?:[^"\\]|\\.)*)"/;
const FINISH_REASON = /"finish_reason"\s*:\s*"((?:[^"\\]|\\.)*)"/g;

function firstString(pattern: RegExp, text: string): string | null {
  const m = pattern.exec(text);
  return m === null ? null : unescape(m[1] as string);
}

/** A JSON string's inside as its value (a model id with an escape is rare; JSON says how to read it). */
function unescape(raw: string): string {
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

const hosts = new WeakMap<Upstream, readonly [string | null, number]>();

/** `server.address` and `server.port` of an upstream (its api_base's origin; none for mock). */
function hostOf(upstream: Upstream): readonly [string | null, number] {
  let found = hosts.get(upstream);
  if (found === undefined) {
    const url = upstream.apiBase === null ? null : new URL(upstream.apiBase);
    found = url === null ? [null, 0] : [url.hostname, url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)];
    hosts.set(upstream, found);
  }
  return found;
}

/** 16 hex digits, not all zero (W3C Trace Context), as OpenTelemetry's own generator makes them: from Math.random, which is fast. */
export function randomSpanId(): string {
  let id = '';
  for (let i = 0; i < 2; i++) id += ((Math.random() * 0x1_0000_0000) >>> 0).toString(16).padStart(8, '0');
  return id === '0000000000000000' ? '0000000000000001' : id;
}
