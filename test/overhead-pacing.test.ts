// Issue 26, point 3, end to end: `x-switchyard-overhead-ms` is the gateway's own share of the time to
// the response headers (the upstreams' wait taken out, from the timings the worker reports), on every
// routed response; switchyard_time_per_output_token_seconds observes each gap between a stream's
// data events, and switchyard_gateway_overhead_seconds the headers' values.
import { getMetricsFromIterator, type PromHistogramData } from 'prom2javascript';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';
import { expectNoRefusals } from './support/routing.js';
import { deploymentYaml, startScriptedUpstream, type ScriptedUpstream } from './support/scripted-upstream.js';

/** What each upstream (scripted or mock) waits before its answer: the overhead must not contain it. */
const UPSTREAM_MS = 400;
/** Generous: the gateway's own share is a few ms, even on a loaded host; without the upstream wait taken out it would be >= 400. */
const OVERHEAD_BOUND_MS = 200;
const PACE_MS = 25;

let up: ScriptedUpstream;
beforeAll(async () => {
  up = await startScriptedUpstream(['east', 'west']);
});
afterAll(() => up?.close());

const { gw } = useGateway({
  upstreams: 0,
  gateway: () => ({
    yaml: `
model_list:${deploymentYaml('pair', up.at('east'), ', order: 1')}${deploymentYaml('pair', up.at('west'), ', order: 2')}
  - model_name: slow-mock
    params: { model: mock/slow, mock_latency_ms: ${UPSTREAM_MS}, mock_stream_chunks: 2 }
  - model_name: slow-embed
    params: { model: mock/embed, mock_latency_ms: ${UPSTREAM_MS} }
  - model_name: paced
    params: { model: mock/paced, mock_stream_chunks: 4, mock_chunk_interval_ms: ${PACE_MS} }
router_settings: { num_retries: 1 }
`,
  }),
});
beforeEach(() => up.reset());
afterEach(() => expectNoRefusals(up));

async function timed(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; elapsedMs: number; overhead: string | null }> {
  const started = performance.now();
  const res = await gw.fetch(path, { method: 'POST', body: JSON.stringify(body), headers, signal: AbortSignal.timeout(10_000) });
  await res.arrayBuffer();
  return { status: res.status, elapsedMs: performance.now() - started, overhead: res.headers.get('x-switchyard-overhead-ms') };
}

/** The header's value: milliseconds with three decimals, at least 0. */
function overheadMs(value: string | null): number {
  expect(value).toMatch(/^\d+\.\d{3}$/);
  return Number(value);
}

const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });

describe('x-switchyard-overhead-ms', () => {
  beforeAll(async () => {
    // A cold gateway's first requests are slow in its own code (lazy loading, compiling): warm it up first.
    for (const model of ['pair', 'slow-mock']) for (const stream of [false, true]) await timed('/v1/chat/completions', chat(model, { stream }));
    await timed('/v1/embeddings', { model: 'slow-embed', input: 'hi' });
  });

  it('leaves out the upstream\'s wait: a reply from an upstream that answers after 400 ms, an embeddings answer, a stream held until its first content', async () => {
    up.at('east').always({ kind: 'ok', latencyMs: UPSTREAM_MS });
    for (const [what, path, body] of [
      ['openai reply', '/v1/chat/completions', chat('pair')],
      ['mock reply', '/v1/chat/completions', chat('slow-mock')],
      ['mock stream', '/v1/chat/completions', chat('slow-mock', { stream: true })],
      ['openai stream', '/v1/chat/completions', chat('pair', { stream: true })],
      ['mock embeddings', '/v1/embeddings', { model: 'slow-embed', input: 'hi' }],
    ] as const) {
      const answer = await timed(path, body);
      expect(answer.status, what).toBe(200);
      expect(answer.elapsedMs, what).toBeGreaterThanOrEqual(UPSTREAM_MS);
      expect(overheadMs(answer.overhead), what).toBeLessThan(OVERHEAD_BOUND_MS);
    }
  });

  it('leaves out every attempt\'s wait: a call retried after a slow 500, and a 502 after two slow failures, carry it too', async () => {
    up.at('east').script({ kind: 'status', status: 500, latencyMs: UPSTREAM_MS });
    up.at('west').script({ kind: 'ok', latencyMs: UPSTREAM_MS });
    const retried = await timed('/v1/chat/completions', chat('pair'));
    expect(retried.status).toBe(200);
    expect(retried.elapsedMs).toBeGreaterThanOrEqual(2 * UPSTREAM_MS);
    expect(overheadMs(retried.overhead)).toBeLessThan(OVERHEAD_BOUND_MS);

    up.at('east').script({ kind: 'status', status: 500, latencyMs: UPSTREAM_MS });
    up.at('west').script({ kind: 'status', status: 503, latencyMs: UPSTREAM_MS });
    const failed = await timed('/v1/chat/completions', chat('pair'));
    expect(failed.status).toBe(502);
    expect(overheadMs(failed.overhead)).toBeLessThan(OVERHEAD_BOUND_MS);

    // A provider 4xx passed through is a routed response as well.
    up.at('east').script({ kind: 'status', status: 400 });
    const refused = await timed('/v1/chat/completions', chat('pair'));
    expect(refused.status).toBe(400);
    overheadMs(refused.overhead);
  });

  it('is on routed responses only: not on a 401, nor on an unknown model\'s 404', async () => {
    expect((await timed('/v1/chat/completions', chat('pair'), { authorization: 'Bearer wrong' })).overhead).toBeNull();
    const unknown = await timed('/v1/chat/completions', chat('no-such-model'));
    expect(unknown.status).toBe(404);
    expect(unknown.overhead).toBeNull();
  });
});

/** A histogram's count and sum over the series of one model alias and provider. */
async function histogram(name: string, model: string, provider: string): Promise<{ count: number; sum: number }> {
  const text = await (await gw.fetch('/metrics', { auth: false })).text();
  const lines = text.split('\n').filter((l) => !/ (Nan|NaN)$/.test(l));
  const family = (await getMetricsFromIterator(lines[Symbol.iterator]()))[name];
  const series = ((family?.data ?? []) as PromHistogramData[]).filter((d) => d.labels.model === model && d.labels.provider === provider);
  return { count: series.reduce((n, d) => n + d.count, 0), sum: series.reduce((n, d) => n + (d.sum ?? 0), 0) };
}

describe('switchyard_gateway_overhead_seconds', () => {
  it('observes the value of each x-switchyard-overhead-ms header, and nothing for an answer without one', async () => {
    const before = await histogram('switchyard_gateway_overhead_seconds', 'slow-mock', 'mock');
    const answers = [await timed('/v1/chat/completions', chat('slow-mock')), await timed('/v1/chat/completions', chat('slow-mock', { stream: true }))];
    const after = await histogram('switchyard_gateway_overhead_seconds', 'slow-mock', 'mock');
    expect(after.count - before.count).toBe(2);
    const headers = answers.reduce((ms, a) => ms + overheadMs(a.overhead), 0) / 1000;
    // The headers are rounded to the microsecond.
    expect(Math.abs(after.sum - before.sum - headers)).toBeLessThan(0.00001);
    expect((await timed('/v1/chat/completions', chat('slow-mock'), { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await histogram('switchyard_gateway_overhead_seconds', 'slow-mock', 'mock')).count).toBe(after.count);
  });
});

describe('switchyard_time_per_output_token_seconds', () => {
  const pacing = () => histogram('switchyard_time_per_output_token_seconds', 'paced', 'mock');

  it('observes each gap between a stream\'s data events: 7 events 25 ms apart are 6 gaps adding up to the stream\'s length', async () => {
    const before = await pacing();
    // The role chunk, 4 words, the finish chunk and [DONE]: 7 data events, one every 25 ms.
    const answer = await timed('/v1/chat/completions', chat('paced', { stream: true }));
    expect(answer.status).toBe(200);
    const after = await pacing();
    expect(after.count - before.count).toBe(6);
    // The gaps add up to the time from the first event to the last: about 6 × 25 ms.
    expect(after.sum - before.sum).toBeGreaterThanOrEqual((6 * PACE_MS * 0.8) / 1000);
    expect(after.sum - before.sum).toBeLessThanOrEqual(answer.elapsedMs / 1000);
    // A reply is no stream: nothing observed.
    expect((await timed('/v1/chat/completions', chat('paced'))).status).toBe(200);
    expect((await pacing()).count).toBe(after.count);
  });
});
