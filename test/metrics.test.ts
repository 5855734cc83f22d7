/**
 * /metrics end to end (docs/METRICS.md): the real gateway in front of the
 * fake upstream, its output read by a Prometheus text-format parser
 * (prom2javascript), and values checked to move as requests are made:
 * requests, durations, upstream time, time to first token, tokens, upstream
 * errors, body sizes, in-flight and stream gauges, workers, health checks;
 * /status agrees with it; no key reaches a metric or a log line; the docs
 * table and the registered metrics agree.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { getMetricsFromIterator, type PromData, type PromHistogramData, type PromMetrics } from 'prom2javascript';
import { beforeAll, describe, expect, it } from 'vitest';
import { Health } from '../src/health/types.js';
import type { FakeUpstream } from './support/fake-upstream.js';
import { TEST_KEY, UPSTREAM_KEY, useGateway } from './support/gateway.js';
import { chatBody } from './support/requests.js';
import { sseData } from './support/sse.js';
import { sleep, until } from './support/waits.js';

const CHAT = '/v1/chat/completions';
const EMBED = '/v1/embeddings';
const MAX_BODY = 64 * 1024;

type Json = Record<string, unknown>;
type Labels = Record<string, string>;

interface Scrape {
  readonly text: string;
  readonly m: PromMetrics;
}

const { gw, upstream } = useGateway({ gateway: { env: { GATEWAY_MAX_BODY_BYTES: String(MAX_BODY) } } });

// ───────────────────────── helpers ─────────────────────────

async function scrape(): Promise<Scrape> {
  const res = await gw.fetch('/metrics', { auth: false });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const text = await res.text();
  // The text format allows NaN (prom-client writes "Nan", which Prometheus reads), but this parser's number
  // grammar has no NaN: set those lines aside, after checking they are only prom-client's event-loop lag
  // (NaN when no sample fell in the window between two scrapes), never a Switchyard metric.
  const lines = text.split('\n');
  const nan = lines.filter((l) => /^[^#].* (Nan|NaN)$/.test(l));
  for (const line of nan) expect(line).toMatch(/^switchyard_nodejs_eventloop_lag_[a-z0-9_]+ Nan$/);
  // The parser throws on any other line it cannot read, and on a histogram whose +Inf bucket is not its count.
  const m = await getMetricsFromIterator(lines.filter((l) => !nan.includes(l))[Symbol.iterator]());
  return { text, m };
}

const matches = (labels: Labels, want: Labels): boolean => Object.entries(want).every(([k, v]) => labels[k] === v);

/** Sum of a counter's or gauge's samples whose labels include `want`; 0 when there is none. */
function value(s: Scrape, name: string, want: Labels = {}): number {
  const family = s.m[name];
  if (!family) return 0;
  expect(['counter', 'gauge'], name).toContain(family.type);
  return (family.data as PromData[]).filter((d) => matches(d.labels, want)).reduce((n, d) => n + d.value, 0);
}

/** Count and sum over a histogram's series whose labels include `want`. */
function histogram(s: Scrape, name: string, want: Labels = {}): { count: number; sum: number; series: number } {
  const family = s.m[name];
  if (!family) return { count: 0, sum: 0, series: 0 };
  expect(family.type, name).toBe('histogram');
  const found = (family.data as PromHistogramData[]).filter((d) => matches(d.labels, want));
  return { count: found.reduce((n, d) => n + d.count, 0), sum: found.reduce((n, d) => n + (d.sum ?? 0), 0), series: found.length };
}

/** The question every chat here asks: four words, so four prompt tokens for the fake and the mock alike. */
const ASK = 'count my tokens please';

async function post(path: string, body: string, headers: Record<string, string> = {}, auth = true): Promise<{ status: number; bytes: Buffer }> {
  const res = await gw.fetch(path, { method: 'POST', body, headers, auth });
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
}

async function status(): Promise<{ workers: number; worker_restarts: number; requests: Record<string, number> }> {
  const res = await gw.fetch('/status', { auth: false });
  expect(res.status).toBe(200);
  return (await res.json()) as { workers: number; worker_restarts: number; requests: Record<string, number> };
}

/** The usage object of an SSE body's usage chunk. */
function streamUsage(sse: string): { prompt_tokens: number; completion_tokens: number } {
  for (const data of sseData(sse)) {
    if (data === '[DONE]') continue;
    const json = JSON.parse(data) as { usage?: { prompt_tokens: number; completion_tokens: number } | null };
    if (json.usage) return json.usage;
  }
  throw new Error('no usage chunk in the stream');
}

function accessLine(requestId: string): Json | undefined {
  return gw.logs().find((l) => l.event === 'access' && l.request_id === requestId);
}

/** Opens a stream and leaves after its first bytes: the gateway answers it 499. */
async function leaveStreamEarly(model: string): Promise<void> {
  const url = new URL(gw.url);
  const body = chatBody(model, { stream: true }, ASK);
  await new Promise<void>((resolve, reject) => {
    const req = http.request({
      host: url.hostname,
      port: Number(url.port),
      path: CHAT,
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => undefined);
    req.on('response', (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    setTimeout(() => reject(new Error('no first chunk')), 5000).unref();
    req.end(body);
  });
}

// ───────────────────────── per request ─────────────────────────

describe('a provider request moves its series', () => {
  it('a chat moves requests_total, the duration and upstream histograms, and tokens by the usage the upstream sent', async () => {
    const labels = { route: CHAT, model: 'up-chat', provider: 'openai' };
    const s0 = await scrape();
    const { status: code, bytes } = await post(CHAT, chatBody('up-chat', {}, ASK));
    expect(code).toBe(200);
    const usage = (JSON.parse(bytes.toString('utf8')) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    // The fake counts words: the four of ASK, and the five of its answer, `echo: ` and ASK.
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 5 });
    const s1 = await scrape();

    expect(value(s1, 'switchyard_requests_total', { ...labels, status: '200', status_class: '2xx' })).toBe(value(s0, 'switchyard_requests_total', { ...labels, status: '200', status_class: '2xx' }) + 1);
    const d0 = histogram(s0, 'switchyard_request_duration_seconds', { route: CHAT, model: 'up-chat', status_class: '2xx' });
    const d1 = histogram(s1, 'switchyard_request_duration_seconds', { route: CHAT, model: 'up-chat', status_class: '2xx' });
    expect(d1.count).toBe(d0.count + 1);
    const u0 = histogram(s0, 'switchyard_upstream_duration_seconds', { model: 'up-chat', provider: 'openai' });
    const u1 = histogram(s1, 'switchyard_upstream_duration_seconds', { model: 'up-chat', provider: 'openai' });
    expect(u1.count).toBe(u0.count + 1);
    expect(u1.sum - u0.sum).toBeGreaterThan(0);
    // The upstream call happens inside the request.
    expect(u1.sum - u0.sum).toBeLessThanOrEqual(d1.sum - d0.sum);

    const tokens = (s: Scrape, kind: string) => value(s, 'switchyard_tokens_total', { model: 'up-chat', provider: 'openai', kind });
    expect(tokens(s1, 'prompt') - tokens(s0, 'prompt')).toBe(usage.prompt_tokens);
    expect(tokens(s1, 'completion') - tokens(s0, 'completion')).toBe(usage.completion_tokens);
    // Not a stream: no time to first token.
    expect(histogram(s1, 'switchyard_time_to_first_token_seconds', { model: 'up-chat' }).count).toBe(histogram(s0, 'switchyard_time_to_first_token_seconds', { model: 'up-chat' }).count);
  });

  it('a stream moves time to first token and counts the tokens of its usage chunk; the access line carries ttft_ms', async () => {
    // up-chat twice: its events one per write, then all in one write (read as one verbatim chunk, its
    // `"usage":null` chunks passed over and the usage chunk found on the bytes).
    // Exact counts: the fake's stream has one token per content chunk (3 by default, 6 here), the mock's five words (mock_stream_chunks: 5).
    for (const [model, provider, whole, completion] of [
      ['up-chat', 'openai', false, 3],
      ['up-chat', 'openai', true, 6],
      ['mock-chat', 'mock', false, 5],
    ] as const) {
      if (whole) upstream.behaveOnce({ kind: 'stream', chunks: 6, whole: true });
      const label = whole ? `${model}, in one write` : model;
      const id = `metrics-stream-${model}-${whole}-${Date.now()}`;
      const s0 = await scrape();
      const { status: code, bytes } = await post(CHAT, chatBody(model, { stream: true, stream_options: { include_usage: true } }, ASK), { 'x-request-id': id });
      expect(code, label).toBe(200);
      const usage = streamUsage(bytes.toString('utf8'));
      expect(usage, label).toMatchObject({ prompt_tokens: 4, completion_tokens: completion });
      const s1 = await scrape();

      const t0 = histogram(s0, 'switchyard_time_to_first_token_seconds', { model, provider });
      const t1 = histogram(s1, 'switchyard_time_to_first_token_seconds', { model, provider });
      expect(t1.count, label).toBe(t0.count + 1);
      const d0 = histogram(s0, 'switchyard_request_duration_seconds', { route: CHAT, model, status_class: '2xx' });
      const d1 = histogram(s1, 'switchyard_request_duration_seconds', { route: CHAT, model, status_class: '2xx' });
      expect(d1.count, label).toBe(d0.count + 1);
      expect(t1.sum - t0.sum, label).toBeLessThanOrEqual(d1.sum - d0.sum);
      const tokens = (s: Scrape, kind: string) => value(s, 'switchyard_tokens_total', { model, provider, kind });
      expect(tokens(s1, 'prompt') - tokens(s0, 'prompt'), label).toBe(usage.prompt_tokens);
      expect(tokens(s1, 'completion') - tokens(s0, 'completion'), label).toBe(usage.completion_tokens);
      expect(value(s1, 'switchyard_streams_open'), label).toBe(0);

      await until(() => accessLine(id) !== undefined, `the access line of ${id}`);
      const line = accessLine(id) as Json;
      expect(line.stream).toBe(true);
      expect(typeof line.ttft_ms, label).toBe('number');
      expect(line.ttft_ms as number).toBeGreaterThanOrEqual(0);
      expect(line.ttft_ms as number).toBeLessThanOrEqual(line.duration_ms as number);
    }

    const plain = `metrics-plain-${Date.now()}`;
    expect((await post(CHAT, chatBody('mock-chat', {}, ASK), { 'x-request-id': plain })).status).toBe(200);
    await until(() => accessLine(plain) !== undefined, 'the access line of a plain chat');
    expect(accessLine(plain)).not.toHaveProperty('ttft_ms');
  });

  it('an upstream 500 moves upstream_errors_total{code="upstream_error"} and a 502 on requests_total', async () => {
    const s0 = await scrape();
    const st0 = await status();
    // Every attempt fails (the lone deployment is tried 1 + num_retries times): the request is one upstream error.
    upstream.behave({ kind: 'status', status: 500 });
    expect((await post(CHAT, chatBody('up-chat', {}, ASK))).status).toBe(502);
    const s1 = await scrape();
    const st1 = await status();
    const err = { model: 'up-chat', provider: 'openai', code: 'upstream_error' };
    expect(value(s1, 'switchyard_upstream_errors_total', err)).toBe(value(s0, 'switchyard_upstream_errors_total', err) + 1);
    const failed = { route: CHAT, model: 'up-chat', status: '502', status_class: '5xx' };
    expect(value(s1, 'switchyard_requests_total', failed)).toBe(value(s0, 'switchyard_requests_total', failed) + 1);
    expect(st1.requests.upstream_errors).toBe((st0.requests.upstream_errors as number) + 1);
    expect(st1.requests.server_errors).toBe((st0.requests.server_errors as number) + 1);
  });

  it('the body-size histograms move by exactly the bytes received and sent, per route', async () => {
    const cases: Array<{ path: string; body: string; upstream?: Parameters<FakeUpstream['behaveOnce']>[0] }> = [
      { path: CHAT, body: chatBody('up-chat', {}, ASK) },
      { path: CHAT, body: chatBody('mock-chat', { stream: true, stream_options: { include_usage: true } }, ASK) },
      // Multi-byte characters: sizes are bytes, not string lengths.
      { path: CHAT, body: chatBody('mock-chat', {}, 'héllo wörld ✓ 你好') },
      { path: EMBED, body: JSON.stringify({ model: 'up-embed', input: ['one', 'two'] }) },
      { path: EMBED, body: JSON.stringify({ model: 'mock-embed', input: 'three' }) },
      // Answered by the worker with an error body: still sizes on both sides.
      { path: CHAT, body: chatBody('no-such-model', {}, ASK) },
      // A stream cut by the upstream ends with one SSE error event, which counts too.
      { path: CHAT, body: chatBody('up-chat', { stream: true }, ASK), upstream: { kind: 'stream-then-reset', after: 2 } },
    ];
    for (const { path, body, upstream: behaviour } of cases) {
      if (behaviour) upstream.behaveOnce(behaviour);
      const s0 = await scrape();
      const { bytes } = await post(path, body);
      const s1 = await scrape();
      const in0 = histogram(s0, 'switchyard_request_body_bytes', { route: path });
      const in1 = histogram(s1, 'switchyard_request_body_bytes', { route: path });
      const out0 = histogram(s0, 'switchyard_response_body_bytes', { route: path });
      const out1 = histogram(s1, 'switchyard_response_body_bytes', { route: path });
      expect(in1.count, body).toBe(in0.count + 1);
      expect(in1.sum - in0.sum, body).toBe(Buffer.byteLength(body));
      expect(out1.count, body).toBe(out0.count + 1);
      expect(out1.sum - out0.sum, body).toBe(bytes.length);
    }

    // A body refused as too large has no size; the error body sent back does.
    const big = chatBody('mock-chat', { pad: 'x'.repeat(MAX_BODY) }, ASK);
    const s0 = await scrape();
    const refused = await post(CHAT, big);
    expect(refused.status).toBe(413);
    const s1 = await scrape();
    expect(histogram(s1, 'switchyard_request_body_bytes', { route: CHAT }).count).toBe(histogram(s0, 'switchyard_request_body_bytes', { route: CHAT }).count);
    const out0 = histogram(s0, 'switchyard_response_body_bytes', { route: CHAT });
    const out1 = histogram(s1, 'switchyard_response_body_bytes', { route: CHAT });
    expect(out1.count).toBe(out0.count + 1);
    expect(out1.sum - out0.sum).toBe(refused.bytes.length);
  });

  it('requests_in_flight and streams_open count a request and a stream while they run, and agree with /status', async () => {
    upstream.behaveOnce({ kind: 'delay', ms: 600 });
    const slow = post(CHAT, chatBody('up-chat', {}, ASK));
    await until(() => upstream.openRequests() === 1, 'the slow request at the upstream');
    const during = await scrape();
    const st = await status();
    expect(value(during, 'switchyard_requests_in_flight')).toBe(1);
    expect(st.requests.in_flight).toBe(1);
    expect(value(during, 'switchyard_streams_open')).toBe(0);
    expect((await slow).status).toBe(200);

    upstream.behaveOnce({ kind: 'stream', chunks: 4, intervalMs: 150 });
    const stream = post(CHAT, chatBody('up-chat', { stream: true }, ASK));
    await until(async () => (await status()).requests.streams_open === 1, 'the stream open at the gateway');
    const streaming = await scrape();
    expect(value(streaming, 'switchyard_streams_open')).toBe(1);
    expect(value(streaming, 'switchyard_requests_in_flight')).toBe(1);
    expect((await stream).status).toBe(200);

    const after = await scrape();
    expect(value(after, 'switchyard_requests_in_flight')).toBe(0);
    expect(value(after, 'switchyard_streams_open')).toBe(0);
  });
});

// ───────────────────────── workers and health ─────────────────────────

describe('workers and health checks', () => {
  it('switchyard_workers and switchyard_worker_restarts_total agree with /status', async () => {
    const s = await scrape();
    const st = await status();
    expect(s.m.switchyard_workers?.type).toBe('gauge');
    expect(value(s, 'switchyard_workers')).toBe(2);
    expect(value(s, 'switchyard_workers')).toBe(st.workers);
    expect(s.m.switchyard_worker_restarts_total?.type).toBe('counter');
    expect(value(s, 'switchyard_worker_restarts_total')).toBe(st.worker_restarts);
  });

  it('switchyard_worker_inflight{worker} has one series per worker and sums to the calls in flight', async () => {
    upstream.behaveOnce({ kind: 'delay', ms: 500 });
    const slow = post(CHAT, chatBody('up-chat', {}, ASK));
    await until(() => upstream.openRequests() === 1, 'the slow request at the upstream');
    const s = await scrape();
    const series = (s.m.switchyard_worker_inflight?.data ?? []) as PromData[];
    expect(series.map((d) => d.labels.worker).sort()).toEqual(['0', '1']);
    expect(series.reduce((n, d) => n + d.value, 0)).toBe(1);
    expect((await slow).status).toBe(200);
    const idle = await scrape();
    expect(value(idle, 'switchyard_worker_inflight')).toBe(0);
  });

  it('a health run records each check: duration once per run, status 1 / 0.5 / 0', async () => {
    gw.gateway.context.health.register({
      name: 'metrics_test_degraded',
      requiredForReadiness: false,
      check: async () => {
        // A check that takes 30 ms: its duration is what the histogram records.
        await sleep(30);
        return Health.degraded('on purpose');
      },
    });
    gw.gateway.context.health.register({ name: 'metrics_test_unhealthy', requiredForReadiness: false, check: () => Health.unhealthy('on purpose') });
    const s0 = await scrape();
    const res = await gw.fetch('/health', { auth: false });
    const report = (await res.json()) as { checks: Array<{ name: string; status: 'healthy' | 'degraded' | 'unhealthy' }>; age_ms?: number };
    expect(report.age_ms, 'a fresh run, not the cache').toBeUndefined();
    const s1 = await scrape();

    const names = report.checks.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['provider_credentials', 'worker_pool', 'event_loop', `upstream:${upstream.origin}`, 'metrics_test_degraded', 'metrics_test_unhealthy']));
    const expected = { healthy: 1, degraded: 0.5, unhealthy: 0 };
    for (const check of report.checks) {
      const d0 = histogram(s0, 'switchyard_health_check_duration_seconds', { check: check.name });
      const d1 = histogram(s1, 'switchyard_health_check_duration_seconds', { check: check.name });
      expect(d1.count, check.name).toBe(d0.count + 1);
      expect(s1.m.switchyard_health_check_status?.type).toBe('gauge');
      const gauge = (s1.m.switchyard_health_check_status?.data as PromData[]).filter((d) => d.labels.check === check.name);
      expect(gauge, check.name).toHaveLength(1);
      expect(gauge[0]?.value, check.name).toBe(expected[check.status]);
    }
    const slow = histogram(s1, 'switchyard_health_check_duration_seconds', { check: 'metrics_test_degraded' });
    expect(slow.sum).toBeGreaterThanOrEqual(0.025);
    expect(value(s1, 'switchyard_health_check_status', { check: 'metrics_test_degraded' })).toBe(0.5);
    expect(value(s1, 'switchyard_health_check_status', { check: 'metrics_test_unhealthy' })).toBe(0);
    expect(value(s1, 'switchyard_health_check_status', { check: 'worker_pool' })).toBe(1);

    // Readiness runs the required checks only: theirs move, the optional ones do not.
    const ready = await gw.fetch('/ready', { auth: false });
    await ready.arrayBuffer();
    const s2 = await scrape();
    expect(histogram(s2, 'switchyard_health_check_duration_seconds', { check: 'worker_pool' }).count).toBe(histogram(s1, 'switchyard_health_check_duration_seconds', { check: 'worker_pool' }).count + 1);
    expect(histogram(s2, 'switchyard_health_check_duration_seconds', { check: 'metrics_test_degraded' }).count).toBe(slow.count);
  });
});

// ───────────────────────── /status agrees; no secrets ─────────────────────────

describe('after a mix of requests', () => {
  beforeAll(async () => {
    const mix: Array<Promise<unknown>> = [];
    mix.push(post(CHAT, chatBody('up-chat', {}, ASK)));
    mix.push(post(CHAT, chatBody('mock-chat', {}, ASK)));
    mix.push(post(CHAT, chatBody('openai/gpt-4o-mini', {}, ASK)));
    mix.push(post(CHAT, chatBody('up-chat', { stream: true, stream_options: { include_usage: true } }, ASK)));
    mix.push(post(EMBED, JSON.stringify({ model: 'up-embed', input: 'a' })));
    mix.push(post(EMBED, JSON.stringify({ model: 'mock-embed', input: ['a', 'b'] })));
    mix.push(post(CHAT, chatBody('no-such-model', {}, ASK)));
    mix.push(post(CHAT, '{"model": "mock-chat", "messages": [')); // not JSON
    mix.push(post(CHAT, chatBody('up-chat', {}, ASK), {}, false)); // no token
    mix.push(post(CHAT, chatBody('up-chat', {}, ASK), { authorization: `Bearer ${UPSTREAM_KEY}` }, false)); // the upstream key as a token
    mix.push(post(EMBED, JSON.stringify({ model: 'up-embed', input: 'a' }), { authorization: `Bearer ${TEST_KEY}x` }, false));
    mix.push(post(CHAT, chatBody('mock-chat', { pad: 'y'.repeat(MAX_BODY) }, ASK)));
    await Promise.all(mix);
    // Retried on the lone deployment until num_retries is spent, then answered as the last failure.
    upstream.behave({ kind: 'status', status: 429 });
    expect((await post(CHAT, chatBody('up-chat', {}, ASK))).status).toBe(429);
    upstream.behave({ kind: 'status', status: 503 });
    expect((await post(CHAT, chatBody('up-chat', {}, ASK))).status).toBe(502);
    upstream.behave({ kind: 'ok' });
    upstream.behaveOnce({ kind: 'stream', chunks: 50, intervalMs: 50 });
    await leaveStreamEarly('up-chat');
    await until(async () => {
      const r = (await status()).requests;
      return r.in_flight === 0 && r.streams_open === 0;
    }, 'every request finished');
    await (await gw.fetch('/health', { auth: false })).arrayBuffer();
  });

  it('/status counters equal the sums of /metrics over the provider routes, by status class', async () => {
    const s = await scrape();
    const st = (await status()).requests;
    const provider = (want: Labels) => value(s, 'switchyard_requests_total', { route: CHAT, ...want }) + value(s, 'switchyard_requests_total', { route: EMBED, ...want });
    expect(st.total).toBeGreaterThan(0);
    expect(provider({})).toBe(st.total);
    expect(provider({ status_class: '2xx' })).toBe(st.success);
    expect(provider({ status_class: '4xx' })).toBe(st.client_errors);
    expect(provider({ status_class: '5xx' })).toBe(st.server_errors);
    expect((st.success ?? NaN) + (st.client_errors ?? NaN) + (st.server_errors ?? NaN)).toBe(st.total);
    expect(value(s, 'switchyard_upstream_errors_total')).toBe(st.upstream_errors);
    expect(value(s, 'switchyard_requests_in_flight')).toBe(st.in_flight);
    expect(value(s, 'switchyard_streams_open')).toBe(st.streams_open);

    // The mix reached every class, 401 and 499 included.
    for (const code of ['200', '401', '404', '400', '413', '429', '499', '502']) {
      expect(provider({ status: code }), `status ${code}`).toBeGreaterThan(0);
    }
    // status_class is always the class of status.
    for (const d of s.m.switchyard_requests_total?.data as PromData[]) {
      expect(d.labels.status_class, JSON.stringify(d.labels)).toBe(`${(d.labels.status as string)[0]}xx`);
    }
  });

  it('neither key appears in /metrics or in any log line', async () => {
    const { text } = await scrape();
    expect(text).toContain('switchyard_requests_total');
    expect(text).not.toContain(TEST_KEY);
    expect(text).not.toContain(UPSTREAM_KEY);
    expect(gw.rawLogs.length).toBeGreaterThan(0);
    expect(gw.logs().filter((l) => l.event === 'access').length).toBeGreaterThan(10);
    for (const raw of gw.rawLogs) {
      expect(raw).not.toContain(TEST_KEY);
      expect(raw).not.toContain(UPSTREAM_KEY);
    }
  });
});

// ───────────────────────── the docs table ─────────────────────────

describe('docs/METRICS.md', () => {
  it('documents every registered metric with its type and labels, and nothing that is not registered', () => {
    const doc = readFileSync(new URL('../docs/METRICS.md', import.meta.url), 'utf8');
    const table = doc.slice(doc.indexOf('## The table'), doc.indexOf('\n## ', doc.indexOf('## The table') + 1));
    const rows = new Map<string, { type: string; labels: string[] }>();
    for (const line of table.split('\n')) {
      const m = /^\| `(switchyard_[a-z_]+)` \| (\w+) \| ([^|]*) \|/.exec(line);
      if (!m) continue;
      const labels = [...(m[3] as string).matchAll(/`([a-z_]+)`/g)].map((l) => l[1] as string);
      rows.set(m[1] as string, { type: m[2] as string, labels });
    }
    expect(rows.size).toBeGreaterThan(10);

    const registered = gw.gateway.context.metrics.registry
      .getMetricsAsArray()
      .map((metric) => metric as unknown as { name: string; type: string; labelNames?: readonly string[] })
      .filter((metric) => !/^switchyard_(process|nodejs)_/.test(metric.name));
    for (const metric of registered) {
      const row = rows.get(metric.name);
      expect(row, `${metric.name} is in docs/METRICS.md`).toBeDefined();
      expect(row?.type, metric.name).toBe(String(metric.type));
      expect([...(row?.labels ?? [])].sort(), metric.name).toEqual([...(metric.labelNames ?? [])].sort());
    }
    expect([...rows.keys()].sort()).toEqual(registered.map((m) => m.name).sort());
    expect(doc).toContain('`switchyard_process_*`, `switchyard_nodejs_*`');
  });
});
