// CONTRACT.md, Tracing: the built server, turned on by the standard OTEL_* variables, exports a
// server span per provider request and a client span per upstream attempt to a fake OTLP/HTTP
// collector (test/support/otlp-collector.ts), in protobuf and in JSON; a collector that hangs or
// is gone costs no request latency, and the spans it cannot take are dropped and counted.
import * as semconv from '@opentelemetry/semantic-conventions';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ATTR, REQUEST_PARAMS } from '../protocol/genai.js';
import { TEST_KEY, useGateway, type GatewayEndpoint } from './support/gateway.js';
import { SPAN_KIND, STATUS_CODE, startOtlpCollector, type CollectedSpan, type CollectorMode, type OtlpCollector } from './support/otlp-collector.js';
import { expectNoRefusals } from './support/routing.js';
import { deploymentYaml, startScriptedUpstream, type ScriptedUpstream } from './support/scripted-upstream.js';
import { REFUSED_PORT } from './support/start-command.js';
import { sleep } from './support/waits.js';

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const MESSAGES = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'hi' },
];

/** The config every traced gateway here serves: `pair` (east first, then west), `solo` (one deployment), `embed` (east), `mock-chat`. */
function yamlFor(up: ScriptedUpstream): string {
  return `
model_list:${deploymentYaml('pair', up.at('east'), ', order: 1')}${deploymentYaml('pair', up.at('west'), ', order: 2')}${deploymentYaml('solo', up.at('solo'))}
  - model_name: embed
    params: { model: openai/embed-east, api_base: ${up.at('east').url}, api_key: sk-key-of-east }
    model_info: { id: embed-east }
  - model_name: mock-chat
    params: { model: mock/chat-small, mock_stream_chunks: 3, mock_chunk_interval_ms: 2 }
router_settings: { num_retries: 1 }
`;
}

/** The env of a traced gateway exporting to `collector`, quickly (the batch delay is 5 s by default). */
const traced = (collector: OtlpCollector, more: Record<string, string> = {}) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '20', ...more });

/**
 * For the enclosing describe: a fake collector (in `mode`), scripted deployments `east`, `west`, `solo`, and the
 * built server serving `yamlFor` with tracing on: exporting to the collector, `env` on top. Reset before each test.
 */
function useTracedGateway(env: Record<string, string> = {}, mode: CollectorMode = { kind: 'ok' }, workers?: number): { readonly gw: GatewayEndpoint; readonly t: { collector: OtlpCollector; up: ScriptedUpstream } } {
  const t = {} as { collector: OtlpCollector; up: ScriptedUpstream };
  beforeAll(async () => {
    t.collector = await startOtlpCollector();
    t.up = await startScriptedUpstream(['east', 'west', 'solo']);
  });
  afterAll(async () => {
    await t.up?.close();
    await t.collector?.close();
  });
  const { gw } = useGateway({ upstreams: 0, process: true, gateway: () => ({ yaml: yamlFor(t.up), env: traced(t.collector, env), workers }) });
  beforeEach(() => {
    t.up.reset();
    t.collector.reset();
    t.collector.mode(mode);
  });
  afterEach(() => expectNoRefusals(t.up));
  return { gw, t };
}

let requestNumber = 0;
/** A request id of its own for each request: its server span is found by it. */
const nextRequestId = (label: string) => `trace-${label}-${++requestNumber}`;

async function post(gw: GatewayEndpoint, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await gw.fetch(path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The server span of request `requestId` and its `children` attempt spans, once all have arrived. */
async function traceOf(collector: OtlpCollector, requestId: string, children: number): Promise<{ server: CollectedSpan; attempts: CollectedSpan[] }> {
  const find = () => collector.spans.find((s) => s.attributes[ATTR.requestId] === requestId);
  const attemptsOf = (server: CollectedSpan) => collector.spans.filter((s) => s.parentSpanId === server.spanId).sort((a, b) => Number(a.attributes[ATTR.attempt]) - Number(b.attributes[ATTR.attempt]));
  await collector.waitFor(() => {
    const server = find();
    return server !== undefined && attemptsOf(server).length >= children;
  });
  const server = find() as CollectedSpan;
  return { server, attempts: attemptsOf(server) };
}

/** The W3C traceparent an upstream request carried, split. */
function traceparentOf(headers: Record<string, string | string[] | undefined>): { traceId: string; spanId: string; flags: string } {
  const [version, traceId, spanId, flags] = String(headers.traceparent ?? '').split('-');
  expect(version).toBe('00');
  return { traceId: traceId as string, spanId: spanId as string, flags: flags as string };
}

describe('tracing over OTLP/HTTP protobuf (the default)', () => {
  const { gw, t } = useTracedGateway();

  it('chat: one SERVER span that continues the caller\'s trace, with the GenAI, HTTP and routing attributes, and one CLIENT span whose id went upstream', async () => {
    const requestId = nextRequestId('chat');
    const answer = await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES, temperature: 0.2, top_p: 0.9, max_tokens: 50, stop: ['END'], seed: 7, n: 1 }, {
      traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      tracestate: 'vendor=abc',
      'x-request-id': requestId,
    });
    expect(answer.status).toBe(200);
    const { server, attempts } = await traceOf(t.collector, requestId, 1);

    expect(server).toMatchObject({ name: 'chat pair', kind: SPAN_KIND.server, traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN, traceState: 'vendor=abc', status: { code: STATUS_CODE.unset } });
    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'pair',
      'gen_ai.request.stream': false,
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.max_tokens': 50,
      'gen_ai.request.stop_sequences': ['END'],
      'gen_ai.request.seed': 7,
      'gen_ai.response.model': 'model-east',
      'gen_ai.response.id': 'chatcmpl-east',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 3,
      'gen_ai.usage.output_tokens': 2,
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'url.path': '/v1/chat/completions',
      'server.address': '127.0.0.1',
      'server.port': gw.port,
      'switchyard.request_id': requestId,
      'switchyard.deployment': 'east',
      'switchyard.attempts': 1,
    });
    // n = 1 is the default, which the conventions say not to record; no content without the opt-in.
    expect(server.attributes).not.toHaveProperty('gen_ai.request.choice.count');
    expect(server.attributes).not.toHaveProperty('gen_ai.input.messages');
    expect(server.attributes).not.toHaveProperty('gen_ai.output.messages');
    expect(server.resource).toMatchObject({ 'service.name': 'switchyard', 'service.version': expect.any(String) as string });

    expect(attempts).toHaveLength(1);
    const [attempt] = attempts as [CollectedSpan];
    expect(attempt).toMatchObject({ name: 'chat model-east', kind: SPAN_KIND.client, traceId: CALLER_TRACE, traceState: 'vendor=abc', status: { code: STATUS_CODE.unset } });
    expect(attempt.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'model-east',
      'switchyard.deployment': 'east',
      'switchyard.attempt': 1,
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(t.up.at('east').url).port),
      'http.response.status_code': 200,
    });
    expect(attempt.startNs).toBeGreaterThanOrEqual(server.startNs);
    expect(attempt.endNs).toBeLessThanOrEqual(server.endNs);
    // The upstream request carried the attempt span as its parent, and the caller's tracestate.
    const received = t.up.at('east').received[0]?.headers ?? {};
    expect(traceparentOf(received)).toEqual({ traceId: CALLER_TRACE, spanId: attempt.spanId, flags: '01' });
    expect(received.tracestate).toBe('vendor=abc');
    // Nothing of a key anywhere in what was exported.
    const exported = JSON.stringify(t.collector.spans, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    for (const secret of [TEST_KEY, 'sk-key-of-east', 'Bearer']) expect(exported).not.toContain(secret);
  });

  it('a stream: the server span ends with the stream, with its time to first chunk; the attempt span has the first-chunk event', async () => {
    t.up.at('east').script({ kind: 'slow-first-content', ms: 60 });
    const requestId = nextRequestId('stream');
    const answer = await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES, stream: true }, { 'x-request-id': requestId });
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('data: [DONE]');
    const { server, attempts } = await traceOf(t.collector, requestId, 1);
    expect(server.name).toBe('chat pair');
    expect(server.attributes).toMatchObject({ 'gen_ai.request.stream': true, 'gen_ai.response.model': 'model-east', 'gen_ai.response.finish_reasons': ['stop'], 'http.response.status_code': 200 });
    expect(server.attributes['gen_ai.response.time_to_first_chunk']).toBeGreaterThanOrEqual(0.05);
    expect(server.status.code).toBe(STATUS_CODE.unset);
    const [attempt] = attempts as [CollectedSpan];
    expect(attempt.events.map((e) => e.name)).toEqual(['switchyard.first_chunk']);
    const firstChunk = attempt.events[0]?.timeNs as bigint;
    expect(firstChunk - attempt.startNs).toBeGreaterThanOrEqual(50_000_000n);
    expect(attempt.attributes['gen_ai.response.time_to_first_chunk']).toBeGreaterThanOrEqual(0.05);
    // The server span ends when the stream does: after the attempt's first chunk and end.
    expect(server.endNs).toBeGreaterThanOrEqual(attempt.endNs);
  });

  it('a stream with usage (mock provider): token counts from the usage chunk; no server address for a provider without network', async () => {
    const requestId = nextRequestId('mock-stream');
    const answer = await post(gw, '/v1/chat/completions', { model: 'mock-chat', messages: MESSAGES, stream: true, stream_options: { include_usage: true } }, { 'x-request-id': requestId });
    expect(answer.status).toBe(200);
    const { server, attempts } = await traceOf(t.collector, requestId, 1);
    expect(server.attributes).toMatchObject({ 'gen_ai.provider.name': 'mock', 'gen_ai.response.model': 'chat-small', 'gen_ai.usage.output_tokens': 3, 'gen_ai.response.finish_reasons': ['stop'] });
    // The mock counts the words of the last message.
    expect(server.attributes['gen_ai.usage.input_tokens']).toBe(1);
    expect(attempts[0]?.attributes).not.toHaveProperty('server.address');
  });

  it('embeddings: `embeddings <alias>` with the embeddings parameters', async () => {
    const requestId = nextRequestId('embed');
    const answer = await post(gw, '/v1/embeddings', { model: 'embed', input: 'hello', encoding_format: 'float', dimensions: 2 }, { 'x-request-id': requestId });
    expect(answer.status).toBe(200);
    const { server, attempts } = await traceOf(t.collector, requestId, 1);
    expect(server).toMatchObject({ name: 'embeddings embed', kind: SPAN_KIND.server });
    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'embeddings',
      'gen_ai.request.model': 'embed',
      'gen_ai.request.encoding_formats': ['float'],
      'gen_ai.embeddings.dimension.count': 2,
      'gen_ai.response.model': 'embed-east',
      'gen_ai.usage.input_tokens': 1,
      'url.path': '/v1/embeddings',
    });
    expect(server.attributes).not.toHaveProperty('gen_ai.request.stream');
    expect(attempts[0]).toMatchObject({ name: 'embeddings embed-east', attributes: { 'switchyard.deployment': 'embed-east' } });
  });

  it('a retried call: one CLIENT span per attempt, the failed one ERROR with its status and code, each upstream given its own span as parent', async () => {
    t.up.at('east').script({ kind: 'status', status: 500 });
    const requestId = nextRequestId('retry');
    const answer = await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES }, { 'x-request-id': requestId });
    expect(answer.status).toBe(200);
    const { server, attempts } = await traceOf(t.collector, requestId, 2);
    expect(server.status.code).toBe(STATUS_CODE.unset);
    expect(server.attributes).toMatchObject({ 'switchyard.attempts': 2, 'switchyard.deployment': 'west', 'gen_ai.response.model': 'model-west' });
    const [first, second] = attempts as [CollectedSpan, CollectedSpan];
    expect(first.attributes).toMatchObject({ 'switchyard.attempt': 1, 'switchyard.deployment': 'east', 'http.response.status_code': 500, 'error.type': 'upstream_error' });
    expect(first.status).toEqual({ code: STATUS_CODE.error, message: 'upstream_error' });
    expect(second.attributes).toMatchObject({ 'switchyard.attempt': 2, 'switchyard.deployment': 'west', 'http.response.status_code': 200 });
    expect(second.attributes).not.toHaveProperty('error.type');
    expect(second.status.code).toBe(STATUS_CODE.unset);
    expect(second.startNs).toBeGreaterThanOrEqual(first.endNs - 1_000_000n);
    expect(traceparentOf(t.up.at('east').received[0]?.headers ?? {}).spanId).toBe(first.spanId);
    expect(traceparentOf(t.up.at('west').received[0]?.headers ?? {}).spanId).toBe(second.spanId);
    // A new trace (no traceparent came): the server span is its root.
    expect(server.parentSpanId).toBe('');
    expect(traceparentOf(t.up.at('west').received[0]?.headers ?? {}).traceId).toBe(server.traceId);
  });

  it('a failed call: 502 after every attempt failed is ERROR on the server span and on each attempt', async () => {
    t.up.at('solo').always({ kind: 'status', status: 503 });
    const requestId = nextRequestId('failed');
    const answer = await post(gw, '/v1/chat/completions', { model: 'solo', messages: MESSAGES }, { 'x-request-id': requestId });
    expect(answer.status).toBe(502);
    const { server, attempts } = await traceOf(t.collector, requestId, 2);
    expect(server).toMatchObject({ name: 'chat solo', status: { code: STATUS_CODE.error } });
    expect(server.attributes).toMatchObject({ 'http.response.status_code': 502, 'error.type': 'upstream_error', 'switchyard.attempts': 2 });
    expect(attempts.map((a) => [a.attributes['switchyard.attempt'], a.status.code, a.attributes['http.response.status_code']])).toEqual([
      [1, STATUS_CODE.error, 503],
      [2, STATUS_CODE.error, 503],
    ]);
  });

  it("a wait its provider asked for is on the next attempt's span (and the server span): how long and why", async () => {
    t.up.at('solo').script({ kind: 'status', status: 429, headers: { 'retry-after-ms': '300' } });
    const requestId = nextRequestId('backoff');
    const answer = await post(gw, '/v1/chat/completions', { model: 'solo', messages: MESSAGES }, { 'x-request-id': requestId });
    expect(answer.status).toBe(200);
    const { server, attempts } = await traceOf(t.collector, requestId, 2);
    const [first, second] = attempts as [CollectedSpan, CollectedSpan];
    expect(first.attributes).toMatchObject({ 'switchyard.attempt': 1, 'http.response.status_code': 429 });
    expect(first.attributes).not.toHaveProperty('switchyard.backoff_ms');
    expect(second.attributes).toMatchObject({ 'switchyard.attempt': 2, 'switchyard.backoff_reason': '429 Retry-After from solo' });
    expect(second.attributes['switchyard.backoff_ms']).toBeGreaterThanOrEqual(295);
    expect(second.attributes['switchyard.backoff_ms']).toBeLessThan(900);
    expect(second.startNs - first.endNs).toBeGreaterThanOrEqual(295_000_000n);
    expect(server.attributes).toMatchObject({ 'switchyard.attempts': 2, 'switchyard.backoff_reason': '429 Retry-After from solo' });
  });

  it('a stream that fails after its first byte ends with an error event: its server span is ERROR, its status 200', async () => {
    t.up.at('east').script({ kind: 'reset-after-content' });
    const requestId = nextRequestId('broken-stream');
    const answer = await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES, stream: true }, { 'x-request-id': requestId });
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('"error"');
    const { server, attempts } = await traceOf(t.collector, requestId, 1);
    expect(server.status.code).toBe(STATUS_CODE.error);
    expect(server.attributes['http.response.status_code']).toBe(200);
    expect(server.attributes['error.type']).toMatch(/^upstream_/);
    expect(attempts[0]?.status.code).toBe(STATUS_CODE.error);
  });

  it('refused requests get a server span too (401, unknown model, bad body): status unset for a 4xx, no attempt spans', async () => {
    const unauthorized = nextRequestId('401');
    expect((await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES }, { authorization: 'Bearer wrong', 'x-request-id': unauthorized })).status).toBe(401);
    const unknown = nextRequestId('404');
    expect((await post(gw, '/v1/chat/completions', { model: 'no-such-model', messages: MESSAGES }, { 'x-request-id': unknown })).status).toBe(404);
    const bad = nextRequestId('400');
    expect((await post(gw, '/v1/embeddings', '{"model":', { 'x-request-id': bad })).status).toBe(400);
    const spans = await Promise.all([unauthorized, unknown, bad].map((id) => traceOf(t.collector, id, 0)));
    expect(spans.map(({ server: s }) => [s.name, s.kind, s.status.code, s.attributes['http.response.status_code'], s.attributes['error.type']])).toEqual([
      ['chat', SPAN_KIND.server, STATUS_CODE.unset, 401, 'invalid_api_key'],
      ['chat', SPAN_KIND.server, STATUS_CODE.unset, 404, 'model_not_found'],
      ['embeddings', SPAN_KIND.server, STATUS_CODE.unset, 400, 'invalid_json'],
    ]);
    // The unknown name is an attribute, never part of a span name.
    expect(spans[1]?.server.attributes['gen_ai.request.model']).toBe('no-such-model');
    for (const { attempts } of spans) expect(attempts).toEqual([]);
  });

  it('the Responses API is a chat: `chat <alias>` on /v1/responses', async () => {
    const requestId = nextRequestId('responses');
    const answer = await post(gw, '/v1/responses', { model: 'pair', input: 'hi', max_output_tokens: 20 }, { 'x-request-id': requestId });
    expect(answer.status).toBe(200);
    const { server, attempts } = await traceOf(t.collector, requestId, 1);
    expect(server).toMatchObject({ name: 'chat pair', attributes: { 'url.path': '/v1/responses', 'gen_ai.operation.name': 'chat', 'gen_ai.request.max_tokens': 20, 'gen_ai.response.model': 'model-east' } });
    expect(attempts[0]?.name).toBe('chat model-east');
  });

  it('a caller\'s unsampled trace is propagated upstream (flags 00) and nothing is exported for it', async () => {
    const unsampled = '1234567890abcdef1234567890abcdef';
    const answer = await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES }, { traceparent: `00-${unsampled}-${CALLER_SPAN}-00` });
    expect(answer.status).toBe(200);
    const sent = traceparentOf(t.up.at('east').received[0]?.headers ?? {});
    expect(sent).toMatchObject({ traceId: unsampled, flags: '00' });
    expect(sent.spanId).not.toBe(CALLER_SPAN);
    // Spans leave in order: once a later request's are in, the unsampled one's would have been too.
    const later = nextRequestId('after-unsampled');
    await post(gw, '/v1/chat/completions', { model: 'mock-chat', messages: MESSAGES }, { 'x-request-id': later });
    await traceOf(t.collector, later, 1);
    expect(t.collector.spans.filter((s) => s.traceId === unsampled)).toEqual([]);
  });

  it('every attribute name Switchyard records is the conventions\' own, or its own under switchyard.', () => {
    // The packages' attribute constants (ATTR_*), stable and incubating.
    const known = new Set<unknown>([...Object.entries(semconv), ...Object.entries(incubating)].filter(([key]) => key.startsWith('ATTR_')).map(([, value]) => value as unknown));
    const names = [...Object.values(ATTR), ...REQUEST_PARAMS.map(([, attribute]) => attribute)];
    expect(names.filter((name) => !name.startsWith('switchyard.') && !known.has(name))).toEqual([]);
  });
});

// Inline (GATEWAY_WORKERS=0): the session on the front thread reports over the in-thread channel alike.
describe('tracing over OTLP/HTTP JSON, with the resource, headers and content capture variables, inline', () => {
  const { gw, t } = useTracedGateway(
    {
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'edge-gateway',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test,team=ml',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=blue',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    },
    { kind: 'ok' },
    0,
  );

  it('exports JSON with the configured service name, resource attributes and headers; messages recorded once opted in', async () => {
    const requestId = nextRequestId('json');
    expect((await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES }, { 'x-request-id': requestId })).status).toBe(200);
    const { server, attempts } = await traceOf(t.collector, requestId, 1);
    expect(t.collector.exports[0]).toMatchObject({ path: '/v1/traces', contentType: expect.stringContaining('application/json') as string });
    expect(t.collector.exports[0]?.headers['x-tenant']).toBe('blue');
    expect(server.resource).toMatchObject({ 'service.name': 'edge-gateway', 'deployment.environment': 'test', team: 'ml' });
    expect(server.attributes).toMatchObject({ 'gen_ai.request.model': 'pair', 'gen_ai.response.finish_reasons': ['stop'] });
    expect(JSON.parse(server.attributes['gen_ai.system_instructions'] as string)).toEqual([{ type: 'text', content: 'be brief' }]);
    expect(JSON.parse(server.attributes['gen_ai.input.messages'] as string)).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'hi' }] }]);
    expect(JSON.parse(server.attributes['gen_ai.output.messages'] as string)).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'from east' }], finish_reason: 'stop' }]);
    expect(attempts).toHaveLength(1);
    const exported = JSON.stringify(t.collector.spans, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    for (const secret of [TEST_KEY, 'sk-key-of-east']) expect(exported).not.toContain(secret);
  });

  it('a stream\'s output is assembled from its chunks when content is captured', async () => {
    const requestId = nextRequestId('json-stream');
    expect((await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES, stream: true }, { 'x-request-id': requestId })).status).toBe(200);
    const { server } = await traceOf(t.collector, requestId, 1);
    expect(JSON.parse(server.attributes['gen_ai.output.messages'] as string)).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'from east' }], finish_reason: 'stop' }]);
  });
});

describe('tracing with OTEL_TRACES_SAMPLER=always_off', () => {
  const { gw, t } = useTracedGateway({ OTEL_TRACES_SAMPLER: 'always_off' });

  it('exports nothing, and still sends a traceparent upstream, not sampled', async () => {
    for (let i = 0; i < 3; i++) expect((await post(gw, '/v1/chat/completions', { model: 'pair', messages: MESSAGES })).status).toBe(200);
    expect(traceparentOf(t.up.at('east').received[0]?.headers ?? {}).flags).toBe('00');
    // Nothing to wait on (the point is that nothing is exported): a batch would go OTEL_BSP_SCHEDULE_DELAY (20 ms) after
    // its first span, plus the export's loopback round trip; 300 ms covers both on a loaded host.
    await sleep(300);
    expect(t.collector.exports).toEqual([]);
  });
});

/** `n` chat requests to the mock alias, 8 at a time; the slowest one's milliseconds. */
async function slowestOf(gw: GatewayEndpoint, n: number): Promise<number> {
  let slowest = 0;
  for (let done = 0; done < n; done += 8) {
    await Promise.all(
      Array.from({ length: Math.min(8, n - done) }, async () => {
        const started = performance.now();
        expect((await post(gw, '/v1/chat/completions', { model: 'mock-chat', messages: MESSAGES })).status).toBe(200);
        slowest = Math.max(slowest, performance.now() - started);
      }),
    );
  }
  return slowest;
}

async function droppedSpans(gw: GatewayEndpoint): Promise<number> {
  const text = await (await gw.fetch('/metrics')).text();
  return Number(/^switchyard_spans_dropped_total (\d+)/m.exec(text)?.[1] ?? NaN);
}

// A small queue (OTEL_BSP_MAX_QUEUE_SIZE) so that it fills in a few requests; each request is two spans.
const SMALL_QUEUE = { OTEL_BSP_MAX_QUEUE_SIZE: '16', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '8', OTEL_BSP_SCHEDULE_DELAY: '10' };
/** Generous: a request to the mock alias takes a few ms; a request that waited on an export would take the export's 30 s timeout. */
const BOUNDED_MS = 2_000;

describe('a collector that never answers costs no request latency; the spans it cannot take are dropped and counted', () => {
  const { gw, t } = useTracedGateway({ ...SMALL_QUEUE, OTEL_EXPORTER_OTLP_TIMEOUT: '30000' }, { kind: 'hang' });

  it('100 requests while the first export hangs: every one answered in bounded time, the queue held at its bound, the rest dropped and counted', async () => {
    expect(await slowestOf(gw, 100)).toBeLessThan(BOUNDED_MS);
    // 200 spans: one batch of 8 hangs in export, 16 wait in the queue, the rest are dropped.
    await t.collector.waitFor(() => t.collector.exports.length >= 1);
    expect(t.collector.exports.length).toBeLessThanOrEqual(2);
    expect(await droppedSpans(gw)).toBeGreaterThanOrEqual(200 - 16 - 2 * 8);
  });
});

describe('a collector that is gone costs no request latency either', () => {
  let up: ScriptedUpstream;
  let endpoint = '';
  beforeAll(async () => {
    endpoint = `http://127.0.0.1:${REFUSED_PORT}`;
    up = await startScriptedUpstream(['east', 'west', 'solo']);
  });
  afterAll(() => up?.close());
  afterEach(() => expectNoRefusals(up));
  const { gw } = useGateway({
    upstreams: 0,
    process: true,
    gateway: () => ({ yaml: yamlFor(up), env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces`, ...SMALL_QUEUE, OTEL_EXPORTER_OTLP_TIMEOUT: '3000' } }),
  });

  it('requests are answered in bounded time while exports fail; spans dropped (queue full, failed exports) are counted', async () => {
    expect(await slowestOf(gw, 60)).toBeLessThan(BOUNDED_MS);
    expect(await droppedSpans(gw)).toBeGreaterThanOrEqual(120 - 16 - 2 * 8);
  });
});
