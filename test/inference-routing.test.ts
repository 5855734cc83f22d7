/**
 * CONTRACT.md, Inference-aware routing for self-hosted servers, through the
 * real gateway (two worker threads) in front of simulated vLLM and SGLang
 * replicas (test/support/replica-simulator.ts) over loopback: one alias of
 * several model_list entries, one per replica, each with server_metrics and
 * its own api_base (a `replicas:` entry expands to the same deployments).
 *
 * Queue and KV-cache avoidance, a burst between two scrapes spreading,
 * sessions staying on their replica while distinct ones spread, stale and
 * absent metrics, all replicas saturated with and without `sheddable`,
 * retries moving to another replica, SIGHUP keeping the index of the
 * deployments that survive; and what is visible (status figures, metrics).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { TEST_KEY, startTestGateway, type TestGateway } from './support/gateway.js';
import { startReplica, type Replica, type ReplicaOptions } from './support/replica-simulator.js';
import { MARGIN_MS, until } from './support/waits.js';

const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
const ENV = { GATEWAY_API_KEY: TEST_KEY, HOST: '127.0.0.1', PORT: '0', GATEWAY_WORKERS: '2' };

interface Fleet {
  readonly gw: TestGateway;
  readonly replicas: Replica[];
}

const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close();
});

function entry(id: string, r: Replica, kind: 'vllm' | 'sglang'): string {
  return `
  - model_name: llama
    params: { model: openai/${MODEL}, api_base: "${r.apiBase}", server_metrics: ${kind} }
    model_info: { id: ${id} }`;
}

function fleetYaml(replicas: ReadonlyArray<readonly [string, Replica]>, inference: string, kinds: ReadonlyArray<'vllm' | 'sglang'> = []): string {
  return `
model_list:${replicas.map(([id, r], i) => entry(id, r, kinds[i] ?? 'vllm')).join('')}
router_settings:
  routing_strategy: inference-aware
  inference_routing: { ${inference} }
`;
}

/** `n` replicas (r0…; even ones vLLM, odd ones SGLang) behind one alias; every replica scraped once before it returns, unless its metrics fail. */
async function startFleet(n: number, options: ReplicaOptions = {}, inference = 'metrics_interval_ms: 100', before: (replicas: Replica[]) => void = () => undefined, workers = 2): Promise<Fleet> {
  const kinds = Array.from({ length: n }, (_, i): 'vllm' | 'sglang' => (i % 2 === 0 ? 'vllm' : 'sglang'));
  const replicas: Replica[] = [];
  for (const kind of kinds) {
    const r = await startReplica({ model: MODEL, prefillMsPerBlock: 0.2, decodeMsPerToken: 0.2, outputTokens: 2, ...options, engine: kind });
    open.push(r);
    replicas.push(r);
  }
  before(replicas);
  const gw = await startTestGateway({ yaml: fleetYaml(replicas.map((r, i) => [`r${i}`, r] as const), inference, kinds), workers });
  open.push(gw);
  await until(() => replicas.every((_, i) => figures(gw, `r${i}`)?.metrics_age_ms !== null || scraper(gw, `r${i}`).failures > 0), 'every replica scraped once');
  return { gw, replicas };
}

const figures = (gw: TestGateway, id: string) => gw.gateway.context.inference.inferenceFigures(id);
function scraper(gw: TestGateway, id: string) {
  const found = gw.gateway.context.inference.scraperOf(id);
  if (found === null) throw new Error(`no scraper for ${id}`);
  return found;
}

/**
 * Waits for a good scrape of each replica that began after now: the second good one from now (scrapes never
 * overlap, and the one under way may have read the replica before a change). A scrape a loaded host times out
 * is not one of them.
 */
async function scrapedAfterNow(gw: TestGateway, ids: readonly string[]): Promise<void> {
  const from = ids.map((id) => scraper(gw, id).good);
  await until(() => ids.every((id, i) => scraper(gw, id).good >= (from[i] as number) + 2), `a good scrape of ${ids.join(', ')} after now`, 5_000);
}

interface Sent {
  readonly status: number;
  readonly deployment: string | null;
  readonly attempts: string | null;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

type Message = { role: string; content: string };

async function send(gw: TestGateway, messages: readonly Message[], headers: Record<string, string> = {}): Promise<Sent> {
  const res = await gw.fetch('/v1/chat/completions', { method: 'POST', headers, body: JSON.stringify({ model: 'llama', messages }) });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, deployment: res.headers.get('x-switchyard-deployment'), attempts: res.headers.get('x-switchyard-attempts'), headers: res.headers, body };
}

/** A request sent straight to a replica (not through the gateway): load the gateway does not know of. */
function direct(r: Replica, content: string): Promise<number> {
  return fetch(`${r.apiBase}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }] }) }).then(async (res) => {
    await res.arrayBuffer();
    return res.status;
  });
}

/** Requests that reached each replica through the gateway (every chat request of these tests is the gateway's unless sent by `direct`). */
const arrivals = (replicas: readonly Replica[]) => replicas.map((r) => r.requests.length);

/** A long, session-specific system prompt (about 24 blocks of 64 characters). */
const system = (session: number) => `Session ${session}: you are the assistant of tenant ${session * 7919}. ` + 'Answer from the documents given; cite each one; keep it short. '.repeat(24);

async function metricsText(gw: TestGateway): Promise<string> {
  return (await gw.fetch('/metrics')).text();
}

/** The value of one series in the exposition text, 0 when absent. */
function seriesValue(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('inference-aware routing through the gateway', () => {
  it('avoids a replica with a long queue and one with a full KV cache (vLLM and SGLang names alike)', async () => {
    const { gw, replicas } = await startFleet(3, { maxRunning: 1, kvBlocks: 64 });
    const [r0, r1, r2] = replicas as [Replica, Replica, Replica];
    r0.pause();
    r1.pause();
    // r0: one running and five waiting (the queue threshold); r1 (SGLang): one prompt holding 61 of its 64 KV blocks.
    const loads = Array.from({ length: 6 }, (_, i) => direct(r0, `queued ${i}`));
    loads.push(direct(r1, 'k'.repeat(64 * 60)));
    await r0.waitFor(() => r0.waiting() === 5);
    await r1.waitFor(() => r1.running() === 1);
    expect(r1.kvUsage()).toBeGreaterThanOrEqual(0.8);
    await scrapedAfterNow(gw, ['r0', 'r1']);
    expect(figures(gw, 'r0')).toMatchObject({ waiting: 5, running: 1 });
    expect(figures(gw, 'r1')?.kv_cache).toBeGreaterThanOrEqual(0.8);
    const before = arrivals(replicas);
    for (let i = 0; i < 6; i++) {
      const answer = await send(gw, [{ role: 'user', content: `question ${i}` }]);
      expect([answer.status, answer.deployment]).toEqual([200, 'r2']);
    }
    expect(arrivals(replicas)).toEqual([before[0], before[1], (before[2] as number) + 6]);
    expect(seriesValue(await metricsText(gw), 'switchyard_inference_picks_total{model="llama",reason="load"}')).toBe(6);
    r0.resume();
    r1.resume();
    expect(await Promise.all(loads)).toEqual(Array(7).fill(200));
    expect(r2.requests).toHaveLength(6);
  });

  it('a burst between two scrapes spreads: each call sent since the scrape counts, from either worker thread', async () => {
    // One scrape at start, none during the burst (an interval of a minute; fresh for three).
    const { gw, replicas } = await startFleet(4, {}, 'metrics_interval_ms: 60000');
    for (const r of replicas) r.pause();
    const answers: Array<Promise<Sent>> = [];
    for (let i = 1; i <= 12; i++) {
      answers.push(send(gw, [{ role: 'user', content: `burst ${i}` }]));
      await until(() => arrivals(replicas).reduce((a, b) => a + b, 0) === i, `request ${i} at a replica`);
    }
    expect(arrivals(replicas)).toEqual([3, 3, 3, 3]);
    for (const r of replicas) r.resume();
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual(Array(12).fill(200));
  });

  it('each session stays on its replica turn after turn; distinct sessions spread over the replicas', async () => {
    const { gw, replicas } = await startFleet(4);
    const sessions = Array.from({ length: 8 }, (_, s) => [{ role: 'system', content: system(s) }, { role: 'user', content: `first question of session ${s}` }] as Message[]);
    const home: string[] = [];
    for (const messages of sessions) {
      const answer = await send(gw, messages);
      expect(answer.status).toBe(200);
      home.push(answer.deployment as string);
    }
    // 8 sessions over 4 equal replicas: every replica has at least one.
    expect(new Set(home)).toEqual(new Set(['r0', 'r1', 'r2', 'r3']));
    for (let turn = 2; turn <= 4; turn++) {
      for (const [s, messages] of sessions.entries()) {
        messages.push({ role: 'assistant', content: `answer ${turn - 1} of session ${s}` }, { role: 'user', content: `question ${turn} of session ${s}` });
        const answer = await send(gw, messages);
        expect([answer.status, answer.deployment], `session ${s}, turn ${turn}`).toEqual([200, home[s]]);
      }
    }
    const text = await metricsText(gw);
    expect(seriesValue(text, 'switchyard_inference_picks_total{model="llama",reason="prefix"}')).toBeGreaterThanOrEqual(24);
    // Turns 2-4 found their whole previous prompt: the ratio histogram has them above 0.75.
    expect(seriesValue(text, 'switchyard_inference_prefix_match_ratio_count{model="llama"}')).toBe(32);
    expect(seriesValue(text, 'switchyard_inference_prefix_match_ratio_bucket{le="0.75",model="llama"}')).toBeLessThanOrEqual(8);
    // The replicas' own prefix caches served the later turns: that is the point.
    const cached = replicas.flatMap((r) => r.requests.slice(0)).filter((q) => q.cachedBlocks > 0).length;
    expect(cached).toBeGreaterThanOrEqual(24);
  });

  it('a replica whose metrics went stale is left out; status shows its age, and its scrape failures are counted', async () => {
    const { gw, replicas } = await startFleet(3);
    replicas[0]?.failMetrics(503);
    const staleAfter = gw.config.routing.router.inference.staleAfterMs;
    expect(staleAfter).toBe(2_000);
    await until(() => (figures(gw, 'r0')?.metrics_age_ms ?? 0) > staleAfter, 'r0 stale', staleAfter + 1_000 + MARGIN_MS);
    const before = arrivals(replicas);
    for (let i = 0; i < 6; i++) expect((await send(gw, [{ role: 'user', content: `q ${i}` }])).deployment).not.toBe('r0');
    expect(arrivals(replicas)[0]).toBe(before[0]);
    const status = (await (await gw.fetch('/status/models/llama')).json()) as { deployments: Array<{ id: string; inference?: { metrics_age_ms: number | null; prefix_index_entries: number } }> };
    const r0 = status.deployments.find((d) => d.id === 'r0');
    expect(r0?.inference?.metrics_age_ms).toBeGreaterThan(staleAfter);
    expect(seriesValue(await metricsText(gw), 'switchyard_inference_scrape_failures_total{model="llama",replica="r0"}')).toBeGreaterThanOrEqual(3);
  });

  it('no metrics anywhere: least-busy by the pod’s calls in flight (reason no_metrics)', async () => {
    const { gw, replicas } = await startFleet(3, {}, 'metrics_interval_ms: 100', (rs) => rs.forEach((r) => r.failMetrics(500)));
    for (const r of replicas) r.pause();
    const answers: Array<Promise<Sent>> = [];
    for (let i = 1; i <= 6; i++) {
      answers.push(send(gw, [{ role: 'user', content: `blind ${i}` }]));
      await until(() => arrivals(replicas).reduce((a, b) => a + b, 0) === i, `request ${i} at a replica`);
    }
    expect(arrivals(replicas)).toEqual([2, 2, 2]);
    for (const r of replicas) r.resume();
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(seriesValue(await metricsText(gw), 'switchyard_inference_picks_total{model="llama",reason="no_metrics"}')).toBe(6);
    expect(figures(gw, 'r0')).toMatchObject({ waiting: null, running: null, kv_cache: null, metrics_age_ms: null });
  });

  it('every replica saturated: sheddable requests get 429 capacity_exhausted with Retry-After 1; normal ones still go to the best', async () => {
    const { gw, replicas } = await startFleet(2, { maxRunning: 1 });
    for (const r of replicas) r.pause();
    const loads = replicas.flatMap((r) => Array.from({ length: 6 }, (_, i) => direct(r, `load ${i}`)));
    await Promise.all(replicas.map((r) => r.waitFor(() => r.waiting() === 5)));
    await scrapedAfterNow(gw, ['r0', 'r1']);
    for (const priority of ['sheddable', 'Sheddable', '-1', '-20']) {
      const shed = await send(gw, [{ role: 'user', content: 'may wait' }], { 'x-switchyard-priority': priority });
      expect(shed.status, priority).toBe(429);
      expect(shed.headers.get('retry-after')).toBe('1');
      expect(shed.body).toEqual({ error: { message: expect.stringContaining('saturated') as string, type: 'gateway_error', code: 'capacity_exhausted' } });
    }
    // 0, a positive integer, an unreadable value and none are normal: each goes to a replica (the best of the saturated).
    const before = arrivals(replicas).reduce((a, b) => a + b, 0);
    const normal = ['0', '3', 'high', ''].map((priority, i) => send(gw, [{ role: 'user', content: `must answer ${i}` }], priority === '' ? {} : { 'x-switchyard-priority': priority }));
    await until(() => arrivals(replicas).reduce((a, b) => a + b, 0) === before + 4, 'the normal requests at the replicas');
    for (const r of replicas) r.resume();
    expect((await Promise.all(normal)).map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(await Promise.all(loads)).toEqual(Array(12).fill(200));
    const text = await metricsText(gw);
    expect(seriesValue(text, 'switchyard_inference_shed_total{model="llama"}')).toBe(4);
    expect(seriesValue(text, 'switchyard_inference_picks_total{model="llama",reason="all_saturated"}')).toBeGreaterThanOrEqual(1);
    expect(seriesValue(text, 'switchyard_requests_total{route="/v1/chat/completions",model="llama",provider="openai",status="429",status_class="4xx"}')).toBe(4);
  });

  it('a failing attempt is retried on another replica, even the one holding the session', async () => {
    const { gw, replicas } = await startFleet(2);
    const messages: Message[] = [{ role: 'system', content: system(1) }, { role: 'user', content: 'hello' }];
    const first = await send(gw, messages);
    const home = first.deployment as string;
    const other = home === 'r0' ? 'r1' : 'r0';
    replicas[Number(home.slice(1))]?.failChat(500);
    messages.push({ role: 'assistant', content: 'hi' }, { role: 'user', content: 'again' });
    const retried = await send(gw, messages);
    expect([retried.status, retried.deployment, retried.attempts]).toEqual([200, other, '2']);
  });

  it('SIGHUP keeps the prefix index of every deployment that survives; a new one starts empty, a gone one is dropped', async () => {
    const { gw, replicas } = await startFleet(3);
    const messages: Message[] = [{ role: 'system', content: system(2) }, { role: 'user', content: 'hello' }];
    const home = (await send(gw, messages)).deployment as string;
    const ids = ['r0', 'r1', 'r2'];
    const gone = ids.find((id) => id !== home) as string;
    const kept = ids.filter((id) => id !== gone);
    const entries = Object.fromEntries(kept.map((id) => [id, figures(gw, id)?.prefix_index_entries]));
    expect(entries[home]).toBeGreaterThan(0);
    const added = await startReplica({ model: MODEL, engine: 'vllm', prefillMsPerBlock: 0.2, decodeMsPerToken: 0.2, outputTokens: 2 });
    open.push(added);
    const next = fleetYaml([...kept.map((id) => [id, replicas[Number(id.slice(1))] as Replica] as const), ['r3', added] as const], 'metrics_interval_ms: 100');
    gw.gateway.reload(parseConfig(next, 'reloaded.yaml', ENV, 2));
    expect(figures(gw, gone)).toBeNull();
    for (const id of kept) expect(figures(gw, id)?.prefix_index_entries, id).toBe(entries[id]);
    expect(figures(gw, 'r3')?.prefix_index_entries).toBe(0);
    await until(() => figures(gw, 'r3')?.metrics_age_ms !== null, 'the new replica scraped');
    messages.push({ role: 'assistant', content: 'hi' }, { role: 'user', content: 'again' });
    for (let turn = 0; turn < 3; turn++) expect((await send(gw, messages)).deployment).toBe(home);
    const status = (await (await gw.fetch('/status/models/llama')).json()) as { deployments: Array<{ id: string; inference?: unknown }> };
    expect(status.deployments.map((d) => d.id).sort()).toEqual([...kept, 'r3'].sort());
    for (const d of status.deployments) expect(d.inference).toMatchObject({ prefix_index_entries: expect.any(Number) as number });
  });

  it('Messages and Responses calls are hashed as their chat translation: their sessions stay on their replica too', async () => {
    const { gw } = await startFleet(3);
    const messagesTurn = async (messages: Array<{ role: string; content: string }>) => {
      const res = await gw.fetch('/v1/messages', { method: 'POST', headers: { 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'llama', max_tokens: 16, system: system(3), messages }) });
      await res.arrayBuffer();
      return [res.status, res.headers.get('x-switchyard-deployment')] as const;
    };
    const responsesTurn = async (input: Array<{ role: string; content: string }>) => {
      const res = await gw.fetch('/v1/responses', { method: 'POST', body: JSON.stringify({ model: 'llama', instructions: system(4), input }) });
      await res.arrayBuffer();
      return [res.status, res.headers.get('x-switchyard-deployment')] as const;
    };
    const turns: Array<{ role: string; content: string }> = [{ role: 'user', content: 'first question' }];
    const [status, home] = await messagesTurn(turns);
    expect(status).toBe(200);
    const input: Array<{ role: string; content: string }> = [{ role: 'user', content: 'first question' }];
    const [rstatus, rhome] = await responsesTurn(input);
    expect(rstatus).toBe(200);
    for (let turn = 2; turn <= 4; turn++) {
      turns.push({ role: 'assistant', content: `answer ${turn - 1}` }, { role: 'user', content: `question ${turn}` });
      expect(await messagesTurn(turns), `messages turn ${turn}`).toEqual([200, home]);
      input.push({ role: 'assistant', content: `answer ${turn - 1}` }, { role: 'user', content: `question ${turn}` });
      expect(await responsesTurn(input), `responses turn ${turn}`).toEqual([200, rhome]);
    }
    expect(seriesValue(await metricsText(gw), 'switchyard_inference_picks_total{model="llama",reason="prefix"}')).toBeGreaterThanOrEqual(6);
  });

  it('inline (GATEWAY_WORKERS=0): the session gets the indexes as a worker does; sessions stay, and a reload keeps them', async () => {
    const { gw, replicas } = await startFleet(2, {}, 'metrics_interval_ms: 100', () => undefined, 0);
    const messages: Message[] = [{ role: 'system', content: system(5) }, { role: 'user', content: 'hello' }];
    const home = (await send(gw, messages)).deployment as string;
    gw.gateway.reload(parseConfig(fleetYaml(replicas.map((r, i) => [`r${i}`, r] as const), 'metrics_interval_ms: 100', ['vllm', 'sglang']), 'reloaded.yaml', { ...ENV, GATEWAY_WORKERS: '0' }, 2));
    for (let turn = 2; turn <= 4; turn++) {
      messages.push({ role: 'assistant', content: `answer ${turn - 1}` }, { role: 'user', content: `question ${turn}` });
      const answer = await send(gw, messages);
      expect([answer.status, answer.deployment]).toEqual([200, home]);
    }
  });

  it('a `replicas:` entry: each replica is scraped, scored and shown on its own (status replica_sets with its figures), sessions stay on theirs', async () => {
    const replicas: Replica[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await startReplica({ model: MODEL, prefillMsPerBlock: 0.2, decodeMsPerToken: 0.2, outputTokens: 2, engine: 'vllm' });
      open.push(r);
      replicas.push(r);
    }
    const yaml = `
model_list:
  - model_name: llama
    params: { model: openai/${MODEL}, server_metrics: vllm, replicas: [${replicas.map((r) => `"${r.apiBase}"`).join(', ')}] }
    model_info: { id: pool }
router_settings:
  routing_strategy: inference-aware
  inference_routing: { metrics_interval_ms: 100 }
`;
    const gw = await startTestGateway({ yaml, workers: 2 });
    open.push(gw);
    const ids = replicas.map((r) => `pool/${new URL(r.apiBase).host}`);
    await scrapedAfterNow(gw, ids);
    const status = (await (await gw.fetch('/status/models/llama')).json()) as { replica_sets: Array<{ id: string; replicas: Array<Record<string, unknown>> }> };
    expect(status.replica_sets.map((set) => set.id)).toEqual(['pool']);
    const shown = status.replica_sets[0]?.replicas ?? [];
    expect(shown.map((r) => r.deployment)).toEqual(ids);
    for (const r of shown) {
      expect(r).toMatchObject({ state: 'healthy', waiting: 0, running: 0, kv_cache: 0 });
      expect(r.metrics_age_ms).toEqual(expect.any(Number));
    }
    const sessions = Array.from({ length: 6 }, (_, s) => [{ role: 'system', content: system(s + 20) }, { role: 'user', content: `first of ${s}` }] as Message[]);
    const home: string[] = [];
    for (const messages of sessions) home.push((await send(gw, messages)).deployment as string);
    expect(new Set(home).size).toBeGreaterThanOrEqual(2);
    for (const [s, messages] of sessions.entries()) {
      messages.push({ role: 'assistant', content: 'answer' }, { role: 'user', content: `second of ${s}` });
      const answer = await send(gw, messages);
      expect([answer.status, answer.deployment], `session ${s}`).toEqual([200, home[s]]);
    }
    const after = (await (await gw.fetch('/status/models/llama')).json()) as { replica_sets: Array<{ replicas: Array<{ deployment: string; prefix_index_entries: number }> }> };
    for (const r of after.replica_sets[0]?.replicas ?? []) {
      if (home.includes(r.deployment)) expect(r.prefix_index_entries, r.deployment).toBeGreaterThan(0);
    }
  });
});
