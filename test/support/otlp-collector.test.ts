// The fake collector is proved against the official exporters: whatever they send, in either
// encoding (gzip too), it reads back as the span that was made.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SPAN_KIND, STATUS_CODE, startOtlpCollector, type OtlpCollector } from './otlp-collector.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_ID = 'b7ad6b7169203331';

describe('the fake OTLP collector', () => {
  let collector: OtlpCollector;
  beforeAll(async () => {
    collector = await startOtlpCollector();
  });
  afterAll(() => collector.close());
  beforeEach(() => collector.reset());

  const exporters: Array<[string, string, (url: string) => SpanExporter]> = [
    ['http/protobuf', 'application/x-protobuf', (url) => new ProtobufExporter({ url, headers: { 'x-probe': 'yes' } })],
    ['http/protobuf, gzip', 'application/x-protobuf', (url) => new ProtobufExporter({ url, headers: { 'x-probe': 'yes' }, compression: 'gzip' as never })],
    ['http/json', 'application/json', (url) => new JsonExporter({ url, headers: { 'x-probe': 'yes' } })],
  ];

  for (const [protocol, contentType, exporter] of exporters) {
    it(`reads back every part of a span the official ${protocol} exporter sends`, async () => {
      const provider = new BasicTracerProvider({
        resource: resourceFromAttributes({ 'service.name': 'probe-service', 'deployment.environment': 'test' }),
        spanProcessors: [new SimpleSpanProcessor(exporter(`${collector.url}/v1/traces`))],
      });
      const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE_ID, spanId: PARENT_ID, traceFlags: 1, traceState: new TraceState('vendor=abc,other=1'), isRemote: true });
      const started = Date.now();
      const span = provider.getTracer('probe-scope', '1.2.3').startSpan(
        'chat probe',
        { kind: SpanKind.CLIENT, startTime: started, attributes: { text: 'héllo', int: 42, negative: -7, double: 0.25, flag: true, strings: ['a', 'b'], numbers: [1, 2] } },
        parent,
      );
      span.addEvent('first', { at: 'once' }, started + 5);
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
      span.end(started + 10);
      await provider.forceFlush();
      await collector.waitFor(() => collector.spans.length === 1);
      await provider.shutdown();

      const [got] = collector.spans;
      expect(collector.exports[0]).toMatchObject({ path: '/v1/traces', contentType: expect.stringContaining(contentType) as string });
      expect(collector.exports[0]?.headers['x-probe']).toBe('yes');
      expect(got).toMatchObject({
        traceId: TRACE_ID,
        parentSpanId: PARENT_ID,
        traceState: 'vendor=abc,other=1',
        name: 'chat probe',
        kind: SPAN_KIND.client,
        attributes: { text: 'héllo', int: 42, negative: -7, double: 0.25, flag: true, strings: ['a', 'b'], numbers: [1, 2] },
        status: { code: STATUS_CODE.error, message: 'boom' },
        scope: { name: 'probe-scope', version: '1.2.3' },
      });
      expect(got?.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(got?.spanId).toBe(span.spanContext().spanId);
      expect(got?.resource).toMatchObject({ 'service.name': 'probe-service', 'deployment.environment': 'test' });
      expect(got?.startNs).toBe(BigInt(started) * 1_000_000n);
      expect(got?.endNs).toBe(BigInt(started + 10) * 1_000_000n);
      expect(got?.events).toEqual([{ name: 'first', timeNs: BigInt(started + 5) * 1_000_000n, attributes: { at: 'once' } }]);
    });
  }

  it('refuses, hangs or answers slowly when told to, and keeps no spans it refused', async () => {
    collector.mode({ kind: 'status', status: 503 });
    const refused = await fetch(`${collector.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"resourceSpans":[]}' });
    expect(refused.status).toBe(503);
    collector.mode({ kind: 'slow', ms: 150 });
    const started = performance.now();
    const slow = await fetch(`${collector.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"resourceSpans":[]}' });
    expect(slow.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    collector.mode({ kind: 'hang' });
    await expect(fetch(`${collector.url}/v1/traces`, { method: 'POST', body: '', signal: AbortSignal.timeout(200) })).rejects.toThrow();
    expect(collector.exports).toHaveLength(3);
    expect(collector.spans).toHaveLength(0);
  });
});
