/**
 * A fake OpenTelemetry collector: OTLP/HTTP on 127.0.0.1, `POST /v1/traces`,
 * in both encodings the exporters speak (`application/x-protobuf`,
 * `application/json`), gzip or not. Every span it receives is decoded into
 * one plain shape, whatever the encoding: hex ids, attributes as a record,
 * times in nanoseconds, the resource and scope beside it. It can also be
 * slow, or refuse, to test that a collector in trouble costs the gateway no
 * request latency. Decoding is proved against the official exporters in
 * otlp-collector.test.ts.
 *
 * Point a gateway at it with `OTEL_EXPORTER_OTLP_ENDPOINT: collector.url`.
 */
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { fakeTimers, listenOnLoopback } from './listen.js';
import { until } from './waits.js';

export type AttributeValue = string | number | boolean | null | AttributeValue[] | { readonly [key: string]: AttributeValue };

export interface CollectedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly traceState: string;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly events: ReadonlyArray<{ readonly name: string; readonly timeNs: bigint; readonly attributes: Readonly<Record<string, AttributeValue>> }>;
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message: string };
  readonly resource: Readonly<Record<string, AttributeValue>>;
  readonly scope: { readonly name: string; readonly version: string };
}

export const SPAN_KIND = { server: 2, client: 3 } as const;
export const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const;

/** What the collector does with the next exports. */
export type CollectorMode =
  /** 200 with an empty response. */
  | { readonly kind: 'ok' }
  /** This status, no spans kept. */
  | { readonly kind: 'status'; readonly status: number }
  /** Holds each export this long before answering 200 (spans kept on arrival). */
  | { readonly kind: 'slow'; readonly ms: number }
  /** Never answers (until it closes). */
  | { readonly kind: 'hang' };

export interface OtlpCollector {
  /** http://127.0.0.1:PORT, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  readonly spans: CollectedSpan[];
  /** Every export request: its path, content type and headers. */
  readonly exports: Array<{ readonly path: string; readonly contentType: string; readonly headers: IncomingHttpHeaders }>;
  mode(mode: CollectorMode): void;
  /** Polls `pred` every 10 ms; rejects after `timeoutMs`. */
  waitFor(pred: () => boolean, timeoutMs?: number): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const exports: OtlpCollector['exports'] = [];
  let mode: CollectorMode = { kind: 'ok' };
  const timers = fakeTimers();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const contentType = String(req.headers['content-type'] ?? '');
      exports.push({ path: req.url ?? '', contentType, headers: req.headers });
      const now = mode;
      if (now.kind === 'hang') return;
      if (now.kind === 'status') {
        res.writeHead(now.status, { 'content-type': 'text/plain' }).end('refused');
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      try {
        spans.push(...(contentType.startsWith('application/json') ? fromJson(JSON.parse(body.toString('utf8'))) : fromProtobuf(body)));
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(err));
        return;
      }
      const answer = () => {
        if (contentType.startsWith('application/json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      };
      if (now.kind === 'slow') timers.later(now.ms, answer);
      else answer();
    });
  });
  const { port, sockets } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    exports,
    mode: (next) => void (mode = next),
    async waitFor(pred, timeoutMs = 5000) {
      await until(pred, 'a condition on the collector', timeoutMs, 10).catch((err: Error) => {
        throw new Error(`${err.message} (${spans.length} spans so far: ${spans.map((s) => s.name).join(', ')})`);
      });
    },
    reset() {
      spans.length = 0;
      exports.length = 0;
      mode = { kind: 'ok' };
    },
    close: () =>
      new Promise<void>((resolve) => {
        timers.clear();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// ── OTLP/JSON ─────────────────────────────────────────────────────────────

type Json = Record<string, unknown>;
const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function fromJson(request: Json): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const rs of list(request.resourceSpans)) {
    const resource = jsonAttributes((rs.resource as Json | undefined)?.attributes);
    for (const ss of list(rs.scopeSpans)) {
      const scope = (ss.scope ?? {}) as Json;
      for (const s of list(ss.spans)) {
        const status = (s.status ?? {}) as Json;
        out.push({
          traceId: str(s.traceId),
          spanId: str(s.spanId),
          parentSpanId: str(s.parentSpanId),
          traceState: str(s.traceState),
          name: str(s.name),
          kind: Number(s.kind ?? 0),
          startNs: BigInt(String(s.startTimeUnixNano ?? 0)),
          endNs: BigInt(String(s.endTimeUnixNano ?? 0)),
          attributes: jsonAttributes(s.attributes),
          events: list(s.events).map((e) => ({ name: str(e.name), timeNs: BigInt(String(e.timeUnixNano ?? 0)), attributes: jsonAttributes(e.attributes) })),
          status: { code: Number(status.code ?? 0), message: str(status.message) },
          resource,
          scope: { name: str(scope.name), version: str(scope.version) },
        });
      }
    }
  }
  return out;
}

function jsonAttributes(v: unknown): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list(v)) out[str(kv.key)] = jsonValue((kv.value ?? {}) as Json);
  return out;
}

function jsonValue(v: Json): AttributeValue {
  if ('stringValue' in v) return str(v.stringValue);
  if ('boolValue' in v) return v.boolValue === true;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('arrayValue' in v) return list((v.arrayValue as Json).values).map(jsonValue);
  if ('kvlistValue' in v) return jsonAttributes((v.kvlistValue as Json).values);
  return null;
}

// ── OTLP/protobuf (opentelemetry/proto/collector/trace/v1) ─────────────────

/** A protobuf message's fields as read from the wire: field number → values in order. */
type Fields = Map<number, Array<bigint | Uint8Array | number>>;

/** One message's fields (wire types 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
function readFields(bytes: Uint8Array): Fields {
  const fields: Fields = new Map();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (at >= bytes.length) throw new Error('protobuf: a varint runs past the end');
      const b = bytes[at++] as number;
      value |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return value;
    }
  };
  while (at < bytes.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    let value: bigint | Uint8Array | number;
    switch (tag & 7) {
      case 0:
        value = varint();
        break;
      case 1:
        value = view.getBigUint64(at, true);
        at += 8;
        break;
      case 2: {
        const length = Number(varint());
        value = bytes.subarray(at, at + length);
        at += length;
        break;
      }
      case 5:
        value = view.getUint32(at, true);
        at += 4;
        break;
      default:
        throw new Error(`protobuf: wire type ${tag & 7} of field ${field} is not used by OTLP`);
    }
    const seen = fields.get(field);
    if (seen) seen.push(value);
    else fields.set(field, [value]);
  }
  return fields;
}

const messages = (f: Fields, n: number): Uint8Array[] => (f.get(n) ?? []) as Uint8Array[];
const message = (f: Fields, n: number): Fields => readFields(messages(f, n)[0] ?? new Uint8Array());
const text = (f: Fields, n: number): string => Buffer.from(messages(f, n)[0] ?? []).toString('utf8');
const hex = (f: Fields, n: number): string => Buffer.from(messages(f, n)[0] ?? []).toString('hex');
const integer = (f: Fields, n: number): bigint => BigInt((f.get(n) ?? [0n])[0] as bigint | number);

function fromProtobuf(body: Uint8Array): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const rsBytes of messages(readFields(body), 1)) {
    const rs = readFields(rsBytes);
    const resource = pbAttributes(message(rs, 1), 1);
    for (const ssBytes of messages(rs, 2)) {
      const ss = readFields(ssBytes);
      const scope = message(ss, 1);
      for (const spanBytes of messages(ss, 2)) {
        const s = readFields(spanBytes);
        const status = message(s, 15);
        out.push({
          traceId: hex(s, 1),
          spanId: hex(s, 2),
          traceState: text(s, 3),
          parentSpanId: hex(s, 4),
          name: text(s, 5),
          kind: Number(integer(s, 6)),
          startNs: integer(s, 7),
          endNs: integer(s, 8),
          attributes: pbAttributes(s, 9),
          events: messages(s, 11).map((e) => {
            const event = readFields(e);
            return { timeNs: integer(event, 1), name: text(event, 2), attributes: pbAttributes(event, 3) };
          }),
          status: { message: text(status, 2), code: Number(integer(status, 3)) },
          resource,
          scope: { name: text(scope, 1), version: text(scope, 2) },
        });
      }
    }
  }
  return out;
}

/** The repeated KeyValue field `n` of a message. */
function pbAttributes(f: Fields, n: number): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kvBytes of messages(f, n)) {
    const kv = readFields(kvBytes);
    out[text(kv, 1)] = pbValue(message(kv, 2));
  }
  return out;
}

/** AnyValue: string 1, bool 2, int64 3, double 4, ArrayValue 5, KeyValueList 6, bytes 7. */
function pbValue(v: Fields): AttributeValue {
  if (v.has(1)) return text(v, 1);
  if (v.has(2)) return integer(v, 2) !== 0n;
  if (v.has(3)) return Number(BigInt.asIntN(64, integer(v, 3)));
  if (v.has(4)) {
    const bits = integer(v, 4);
    const view = new DataView(new ArrayBuffer(8));
    view.setBigUint64(0, bits, true);
    return view.getFloat64(0, true);
  }
  if (v.has(5)) return messages(message(v, 5), 1).map((b) => pbValue(readFields(b)));
  if (v.has(6)) return pbAttributes(message(v, 6), 1);
  if (v.has(7)) return hex(v, 7);
  return null;
}
