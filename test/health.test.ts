/**
 * The health probes of the running gateway (spec 001, issue 3): /health
 * (liveness) and /ready (readiness) reports, the gateway's own checks,
 * upstream checks that only `GET <api_base>/models`, single flight and TTL
 * under 200 concurrent probes, the probe budget with a hanging upstream,
 * the warm-up window, clean reasons, and bad toolkit variables at start.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Logger } from 'pino';
import type { AwsChainStateFrame, ProbedFrame, ProbeTarget } from '../protocol/frames.ts';
import { providerKey } from '../protocol/config.ts';
import { parseConfig } from '../src/config/load.ts';
import { HealthRegistry } from '../src/health/registry.ts';
import { Health } from '../src/health/types.ts';
import { credentialsCheck, eventLoopCheck, upstreamChecks, workerPoolCheck } from '../src/supervisor/gateway-checks.ts';
import type { WorkerPool } from '../src/supervisor/worker-pool.ts';
import { AwsChainStates } from '../src/supervisor/aws-chain.ts';
import type { FakeUpstream } from './support/fake-upstream.js';
import { spawnGateway } from './support/gateway-process.js';
import { TEST_KEY, UPSTREAM_KEY, defaultYaml, startTestGateway, type TestGateway, useGateway } from './support/gateway.js';
import { freePort } from './support/start-command.js';
import { EARLY_MS, MARGIN_MS, sleep, until } from './support/waits.js';

interface CheckJson {
  name: string;
  status: string;
  duration_ms: number;
  reason?: string;
}
interface ReportJson {
  status: string;
  checks: CheckJson[];
  timestamp: string;
  probe_type: string;
  age_ms?: number;
  stale?: boolean;
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
const STATUSES = ['healthy', 'degraded', 'unhealthy'];
const GATEWAY_CHECKS = ['event_loop', 'provider_credentials', 'worker_pool'];

async function probe(gw: TestGateway, path: '/health' | '/ready'): Promise<{ status: number; body: ReportJson; ms: number; contentType: string | null }> {
  const started = performance.now();
  const res = await gw.fetch(path, { auth: false });
  const body = (await res.json()) as ReportJson;
  return { status: res.status, body, ms: performance.now() - started, contentType: res.headers.get('content-type') };
}

function check(report: ReportJson, name: string): CheckJson {
  const found = report.checks.find((c) => c.name === name);
  if (!found) throw new Error(`no check ${name} in ${JSON.stringify(report)}`);
  return found;
}

/** Every check line and the report itself have the spec 001 shape. */
function expectReportShape(body: ReportJson, probeType: 'liveness' | 'readiness'): void {
  expect(STATUSES).toContain(body.status);
  expect(body.probe_type).toBe(probeType);
  expect(body.timestamp).toMatch(ISO_UTC);
  expect(Array.isArray(body.checks)).toBe(true);
  for (const c of body.checks) {
    expect(typeof c.name).toBe('string');
    expect(STATUSES, c.name).toContain(c.status);
    expect(Number.isInteger(c.duration_ms), `${c.name}.duration_ms = ${c.duration_ms}`).toBe(true);
    expect(c.duration_ms).toBeGreaterThanOrEqual(0);
    if (c.status === 'healthy') expect(c.reason, c.name).toBeUndefined();
    else expect(typeof c.reason, c.name).toBe('string');
    for (const key of Object.keys(c)) expect(['name', 'status', 'duration_ms', 'reason']).toContain(key);
  }
}

const upstreamName = (up: FakeUpstream) => `upstream:${up.origin}`;

/** What a reason of a check that ran out of time must say. */
const TIMED_OUT = /timed? ?out|no answer within \d+ ms/i;

/** The probe budget the probe-budget tests configure (probe_budget: 0.3): no /health answer waits longer, plus MARGIN_MS. */
const BUDGET_MS = 300;

/** Probes /health (each answer within BUDGET_MS) until a completed run is served (not the `health_run` placeholder), optionally a healthy one. */
async function firstCompleted(gw: TestGateway, options: { healthy?: boolean; withinMs?: number } = {}): Promise<ReportJson> {
  let last: ReportJson | undefined;
  return until(
    async () => {
      const answer = await probe(gw, '/health');
      expect(answer.ms).toBeLessThan(BUDGET_MS + MARGIN_MS);
      last = answer.body;
      return !answer.body.checks.some((c) => c.name === 'health_run') && (!options.healthy || answer.body.status === 'healthy') && answer.body;
    },
    `a ${options.healthy ? 'healthy ' : ''}completed health run`,
    options.withinMs ?? 8_000,
    100,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last: ${JSON.stringify(last)}`);
  });
}

/** A /health answer from a completed run (the run and its upstream probes are over), not the placeholder of one past its budget. */
async function completedRun(gw: TestGateway): Promise<ReportJson> {
  const { status, body } = await probe(gw, '/health');
  expect(status).toBe(200);
  expect(body.checks.map((c) => c.name)).not.toContain('health_run');
  return body;
}

/** Requests the health checks made to a fake upstream (everything it saw, since the gateway sends nothing else here). */
const modelsGets = (up: FakeUpstream) => up.requests.filter((r) => r.method === 'GET' && r.path === '/v1/models').length;

describe('GET /health and GET /ready: default test config plus one upstream origin', () => {
  const { gw, upstream } = useGateway({
    // cache_ttl 0: every probe runs the checks, so each test sees its own upstream behaviour.
    gateway: (upstream) => ({ yaml: `${defaultYaml(upstream)}\nhealth: { cache_ttl: 0 }\n` }),
  });
  afterEach(() => {
    upstream.reset();
  });

  it('/health runs every check: provider_credentials, worker_pool, event_loop and one upstream:<origin>', async () => {
    const { status, body, contentType } = await probe(gw, '/health');
    expect(status).toBe(200);
    expect(contentType).toMatch(/^application\/json/);
    expectReportShape(body, 'liveness');
    expect(Object.keys(body).sort()).toEqual(['checks', 'probe_type', 'status', 'timestamp']);
    expect(Math.abs(Date.parse(body.timestamp) - Date.now())).toBeLessThan(10_000);
    // Two aliases and a route rule share the fake upstream's origin: one check for it.
    expect(body.checks.map((c) => c.name).sort()).toEqual([...GATEWAY_CHECKS, upstreamName(upstream)].sort());
    expect(body.status).toBe('healthy');
    for (const c of body.checks) expect(c.status, c.name).toBe('healthy');
  });

  it('/ready runs only the checks required for readiness: provider_credentials and no upstream check', async () => {
    const { status, body } = await probe(gw, '/ready');
    expect(status).toBe(200);
    expectReportShape(body, 'readiness');
    expect(body.checks.map((c) => c.name).sort()).toEqual(GATEWAY_CHECKS);
    expect(check(body, 'provider_credentials').status).toBe('healthy');
    expect(body.status).toBe('healthy');
  });

  it('the upstream check only sends GET <api_base>/models, with the route key; never a completion', async () => {
    upstream.reset();
    for (let i = 0; i < 5; i++) await completedRun(gw);
    // cache_ttl 0: five runs, each its one probe of the origin, over before it answered.
    expect(upstream.requests).toHaveLength(5);
    expect(upstream.requests.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(upstream.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    for (const r of upstream.requests) {
      expect(r.path).toBe('/v1/models');
      expect(r.body).toBe('');
      expect(r.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    }
  });

  it('/ready sends nothing upstream (upstream checks are not required for readiness)', async () => {
    upstream.reset();
    for (let i = 0; i < 3; i++) await probe(gw, '/ready');
    // Then one /health run: its probe is the one request the upstream sees (a probe /ready had started would come first).
    await completedRun(gw);
    expect(upstream.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models']);
  });

  it('/health/live and /health/liveliness answer without running any check', async () => {
    upstream.reset();
    for (const path of ['/health/live', '/health/liveliness']) {
      for (let i = 0; i < 10; i++) {
        const res = await gw.fetch(path, { auth: false });
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ object: 'health', status: 'ok' });
      }
    }
    // Then one /health run: its probe is the one request the upstream sees.
    await completedRun(gw);
    expect(upstream.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models']);
  });

  it('an upstream that refuses the key makes its check degraded (200), not the gateway unhealthy', async () => {
    upstream.behave({ kind: 'status', status: 401 });
    const { status, body } = await probe(gw, '/health');
    expect(status).toBe(200);
    expect(body.status).toBe('degraded');
    const up = check(body, upstreamName(upstream));
    expect(up.status).toBe('degraded');
    expect(up.reason).toMatch(/401/);
    expect(JSON.stringify(body)).not.toContain(UPSTREAM_KEY);
    // Readiness does not run upstream checks.
    expect((await probe(gw, '/ready')).status).toBe(200);
  });

  it('an upstream answering 5xx is degraded', async () => {
    upstream.behave({ kind: 'status', status: 503 });
    const { status, body } = await probe(gw, '/health');
    expect(status).toBe(200);
    expect(check(body, upstreamName(upstream))).toMatchObject({ status: 'degraded', reason: expect.stringMatching(/503/) });
  });

  it('an unreachable upstream is unhealthy: /health is 503, /ready stays 200', async () => {
    upstream.behave({ kind: 'reset-before-headers' });
    const { status, body } = await probe(gw, '/health');
    expect(check(body, upstreamName(upstream)).status).toBe('unhealthy');
    expect(body.status).toBe('unhealthy');
    expect(status).toBe(503);
    expect((await probe(gw, '/ready')).status).toBe(200);
  });
});

describe('one upstream check per distinct origin', () => {
  const {
    gw,
    upstreams: [a, b],
  } = useGateway({
    upstreams: 2,
    resetUpstreams: false,
    gateway: (a, b) => ({
      yaml: `
model_list:
  - model_name: a-chat
    params: { model: openai/m1, api_base: ${a.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: a-other-path
    params: { model: openai/m2, api_base: ${a.origin}/other/v1, api_key: ${UPSTREAM_KEY} }
  - model_name: b-chat
    params: { model: openai/m3, api_base: ${b.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: mock-chat
    params: { model: mock/chat-small }
route_rules:
  - provider: openai
    models: ["gpt-*"]
    params: { api_base: ${b.url}, api_key: ${UPSTREAM_KEY} }
health: { cache_ttl: 30 }
`,
    }),
  });

  it('200 concurrent /health probes on a fresh gateway: one shared run, exactly one GET /models per origin (TTL 30 s)', async () => {
    expect(modelsGets(a) + modelsGets(b)).toBe(0);
    const answers = await Promise.all(Array.from({ length: 200 }, () => probe(gw, '/health')));
    expect(answers.every((x) => x.status === 200)).toBe(true);
    // One completed run (its probes over before it answered) served them all.
    expect(answers.every((x) => !x.body.checks.some((c) => c.name === 'health_run'))).toBe(true);
    expect(new Set(answers.map((x) => x.body.timestamp)).size).toBe(1);
    expect(modelsGets(a)).toBe(1);
    expect(modelsGets(b)).toBe(1);
    expect([...a.requests, ...b.requests].filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('names one optional check upstream:<origin> per origin', async () => {
    const { body } = await probe(gw, '/health');
    const upstreams = body.checks.map((c) => c.name).filter((n) => n.startsWith('upstream:'));
    expect(upstreams.sort()).toEqual([upstreamName(a), upstreamName(b)].sort());
    const ready = await probe(gw, '/ready');
    expect(ready.body.checks.map((c) => c.name).filter((n) => n.startsWith('upstream:'))).toEqual([]);
  });
});

describe('single flight and TTL under 200 concurrent probes', () => {
  const { upstream, start } = useGateway({ gateway: false, resetUpstreams: false });

  it('default TTL (1 s): 200 concurrent /health probes on a fresh gateway cause one GET /models per TTL', async () => {
    const gw = await start();
    upstream.reset();
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 200 }, () => probe(gw, '/health')));
    const elapsed = performance.now() - started;
    expect(answers.every((x) => x.status === 200)).toBe(true);
    expect(answers.every((x) => !x.body.checks.some((c) => c.name === 'health_run'))).toBe(true);
    const gets = modelsGets(upstream);
    expect(gets).toBeGreaterThanOrEqual(1);
    // At most one run per TTL window the burst spanned.
    expect(gets).toBeLessThanOrEqual(1 + Math.floor(elapsed / 1_000));
    expect(new Set(answers.map((x) => x.body.timestamp)).size).toBeLessThanOrEqual(1 + Math.floor(elapsed / 1_000));
    expect(upstream.requests.filter((r) => r.method === 'POST')).toEqual([]);
  });

  it('a result is reused within the TTL (with age_ms, not stale) and a new run starts after it', async () => {
    const gw = await start({ yaml: `${defaultYaml(upstream)}\nhealth: { cache_ttl: 0.5 }\n` });
    upstream.reset();
    const sent = performance.now();
    const first = await firstCompleted(gw);
    const answered = performance.now();
    expect(modelsGets(upstream)).toBe(1);

    // Within the TTL (0.5 s): the same run, its age as old as it is.
    const cached = await probe(gw, '/health');
    const cachedAt = performance.now();
    expect(cached.body.timestamp).toBe(first.timestamp);
    expect(Number.isInteger(cached.body.age_ms)).toBe(true);
    expect(cached.body.age_ms).toBeGreaterThanOrEqual(Math.floor(cachedAt - cached.ms - answered));
    expect(cached.body.age_ms).toBeLessThanOrEqual(Math.ceil(cachedAt - sent));
    expect(cached.body.stale).not.toBe(true);
    expect(modelsGets(upstream)).toBe(1);

    // Once the TTL is over, the next probe runs the checks again: not sooner, and not much later.
    const fresh = await until(async () => {
      const answer = await probe(gw, '/health');
      return answer.body.timestamp !== first.timestamp && answer;
    }, 'a fresh run', 500 + MARGIN_MS, 20);
    const freshAt = performance.now();
    expect(freshAt - sent).toBeGreaterThanOrEqual(500 - EARLY_MS);
    expect(freshAt - answered).toBeLessThan(500 + MARGIN_MS);
    expect(fresh.body.checks.map((c) => c.name)).not.toContain('health_run');
    expect(modelsGets(upstream)).toBe(2);
  });
});

describe('probe budget with a hanging upstream (check_timeout 5 s, probe_budget 0.3 s)', () => {
  const { upstream, start } = useGateway({ gateway: false, resetUpstreams: false });
  /** The gateways started so far: later tests watch the runs earlier ones started. */
  const gateways: TestGateway[] = [];

  it('before any run has completed: /health answers unhealthy with check health_run within the budget; /ready and /health/live are not held', async () => {
    upstream.behave({ kind: 'hang' });
    const gw = await start({ yaml: `${defaultYaml(upstream)}\nhealth: { check_timeout: 5, probe_budget: 0.3 }\n` });
    gateways.push(gw);

    const liveness = probe(gw, '/health');
    // Once the run is under way (its probe at the hanging upstream), /health/live is not held by it.
    await upstream.waitFor(() => upstream.requests.length === 1, 2000);
    const started = performance.now();
    const live = await gw.fetch('/health/live', { auth: false });
    const liveMs = performance.now() - started;
    expect(live.status).toBe(200);
    expect(liveMs).toBeLessThan(250);

    // Answered at the probe budget (0.3 s), not sooner.
    const { status, body, ms } = await liveness;
    expect(ms).toBeGreaterThanOrEqual(BUDGET_MS - EARLY_MS);
    expect(ms).toBeLessThan(BUDGET_MS + MARGIN_MS);
    expect(status).toBe(503);
    expect(body.status).toBe('unhealthy');
    expect(body.stale).toBe(true);
    expect(body.probe_type).toBe('liveness');
    expect(body.checks.map((c) => c.name)).toEqual(['health_run']);
    expect(check(body, 'health_run')).toMatchObject({ status: 'unhealthy', reason: expect.any(String) });

    // Readiness runs no upstream check: it completes and is served normally.
    const ready = await probe(gw, '/ready');
    expect(ready.status).toBe(200);
    expect(ready.ms).toBeLessThan(MARGIN_MS);

    // A second liveness probe during the same run is not held either, and starts no second upstream call.
    const again = await probe(gw, '/health');
    expect(again.ms).toBeLessThan(BUDGET_MS + MARGIN_MS);
    expect(again.body.stale).toBe(true);
    expect(upstream.requests.filter((r) => r.path === '/v1/models')).toHaveLength(1);
  });

  it('on a fresh gateway, the slow run completes within the check timeout with the upstream check unhealthy', async () => {
    // The reason's wording on a fresh gateway depends on how fast the workers attach
    // (see 'gateway checks' below for the deterministic case).
    const gw = gateways[0]!;
    const body = await firstCompleted(gw);
    const up = check(body, upstreamName(upstream));
    expect(up.status).toBe('unhealthy');
    expect(up.duration_ms).toBeGreaterThan(3_000);
    expect(up.duration_ms).toBeLessThanOrEqual(5_300);
    expect(up.reason!.length).toBeGreaterThan(0);
  }, 15_000);

  it('with an earlier result: a probe answers from it within the budget, with age_ms and stale: true', async () => {
    upstream.reset(); // ok again
    const gw = await start({ yaml: `${defaultYaml(upstream)}\nhealth: { check_timeout: 5, probe_budget: 0.3, cache_ttl: 0.2 }\n` });
    gateways.push(gw);
    // Workers answer pings once they have attached: wait for a completed, healthy run.
    const first = await firstCompleted(gw, { healthy: true });
    expect(first.status).toBe('healthy');

    upstream.behave({ kind: 'hang' });
    // Answers from the cache until its 0.2 s are over; then the next probe starts a run that hangs, and is answered stale at the budget.
    const stale = await until(async () => {
      const answer = await probe(gw, '/health');
      return answer.body.stale === true && answer;
    }, 'a stale answer', 200 + BUDGET_MS + MARGIN_MS, 20);
    expect(stale.ms).toBeGreaterThanOrEqual(BUDGET_MS - EARLY_MS);
    expect(stale.ms).toBeLessThan(BUDGET_MS + MARGIN_MS);
    expect(stale.status).toBe(200);
    expect(stale.body.stale).toBe(true);
    expect(Number.isInteger(stale.body.age_ms)).toBe(true);
    expect(stale.body.age_ms).toBeGreaterThanOrEqual(500);
    expect(stale.body.timestamp).toBe(first.timestamp);
    expect(stale.body.checks).toEqual(first.checks);
    expect(stale.body.probe_type).toBe('liveness');
  });

  it('on a warmed-up gateway, once the slow run completes: the upstream check is unhealthy with a reason saying it timed out, and a slow-check warning was logged', async () => {
    const gw = gateways[1]!;
    const body = await until(async () => {
      const answer = await probe(gw, '/health');
      expect(answer.ms).toBeLessThan(BUDGET_MS + MARGIN_MS);
      const up = answer.body.checks.find((c) => c.name === upstreamName(upstream));
      return up !== undefined && up.status !== 'healthy' && answer.body;
    }, 'the slow health run to complete', 8_000, 200);
    const up = check(body!, upstreamName(upstream));
    expect(up.status).toBe('unhealthy');
    expect(up.reason).toMatch(TIMED_OUT);
    expect(up.duration_ms).toBeGreaterThan(3_000);
    expect(up.duration_ms).toBeLessThanOrEqual(5_300);
    for (const name of GATEWAY_CHECKS) expect(check(body!, name).status).toBe('healthy');

    const warnings = gw.logs().filter((l) => l.level === 40 && l.check === upstreamName(upstream));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings[0]!.duration_ms).toEqual(expect.any(Number));
    expect(warnings[0]!.duration_ms as number).toBeGreaterThan(3_000);
  }, 15_000);
});

describe('readiness without provider credentials', () => {
  const { gw, upstream } = useGateway({
    resetUpstreams: false,
    gateway: (upstream) => ({
      yaml: `
model_list:
  - model_name: keyless
    params: { model: openai/m, api_base: ${upstream.url}, api_key: os.environ/SWITCHYARD_HEALTH_TEST_UNSET_KEY }
health: { cache_ttl: 0 }
`,
    }),
  });

  it('/ready is 503 with provider_credentials unhealthy and a reason', async () => {
    const { status, body } = await probe(gw, '/ready');
    expect(status).toBe(503);
    expectReportShape(body, 'readiness');
    expect(body.status).toBe('unhealthy');
    const credentials = check(body, 'provider_credentials');
    expect(credentials.status).toBe('unhealthy');
    expect(credentials.reason).toMatch(/credentials/);
  });

  it('/health reports it too (503); /health/live still answers 200', async () => {
    const { status, body } = await probe(gw, '/health');
    expect(status).toBe(503);
    expect(check(body, 'provider_credentials').status).toBe('unhealthy');
    expect((await gw.fetch('/health/live', { auth: false })).status).toBe(200);
    // The probe went without a key (there is none to send), and the provider refuses that as OpenAI does: 401.
    const refused = upstream.takeRefusals();
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of refused) expect([r.method, r.path, r.key, r.refused]).toEqual(['GET', '/v1/models', null, 'key']);
  });

  it('an upstream check without a key is still a GET /models, never a POST', async () => {
    const before = upstream.requests.length;
    await probe(gw, '/health');
    // cache_ttl 0: the run probed once.
    expect(upstream.requests).toHaveLength(before + 1);
    for (const r of upstream.requests) expect([r.method, r.path, r.key]).toEqual(['GET', '/v1/models', null]);
    upstream.takeRefusals();
  });
});

describe('reasons carry no secret, no URL credentials and no stack trace', () => {
  let port: number;
  const { gw } = useGateway({
    upstreams: 0,
    gateway: async () => {
      port = await freePort();
      return {
        yaml: `
model_list:
  - model_name: down
    params: { model: openai/m, api_base: "http://probe-user:url-password-xyz@127.0.0.1:${port}/v1", api_key: ${UPSTREAM_KEY} }
  - model_name: mock-chat
    params: { model: mock/chat-small }
health: { cache_ttl: 0 }
`,
      };
    },
  });
  beforeAll(() => {
    gw.gateway.context.health.register({
      name: 'embedder_leaky',
      check: () => {
        const err = new Error(`login to http://admin:db-password-42@db.internal/x failed with key ${UPSTREAM_KEY} and ${TEST_KEY}`);
        throw err;
      },
    });
    gw.gateway.context.health.register({ name: 'embedder_stack', check: () => Health.unhealthy(String(new Error('socket hang up').stack)) });
  });

  it('the /health body names the failures but leaks nothing', async () => {
    const { status, body } = await probe(gw, '/health');
    expect(status).toBe(503);
    const text = JSON.stringify(body);
    for (const secret of [UPSTREAM_KEY, TEST_KEY, 'url-password-xyz', 'db-password-42', 'probe-user:', 'admin:']) expect(text, secret).not.toContain(secret);
    expect(text).not.toMatch(/\\n\s*at /);
    expect(text).not.toMatch(/\(?(file:\/\/|\/)[^"]*\.(ts|js):\d+:\d+/);

    const down = check(body, `upstream:http://127.0.0.1:${port}`);
    expect(down.status).toBe('unhealthy');
    expect(down.reason!.length).toBeGreaterThan(0);
    expect(check(body, 'embedder_leaky')).toMatchObject({ status: 'unhealthy', reason: expect.stringContaining('failed with key') });
    expect(check(body, 'embedder_stack')).toMatchObject({ status: 'unhealthy', reason: expect.stringContaining('socket hang up') });
  });

  it('a check registered by an embedder shares the name space: duplicates are refused', () => {
    expect(() => gw.gateway.context.health.register({ name: 'worker_pool', check: () => Health.healthy() })).toThrow(/worker_pool/);
    expect(() => gw.gateway.context.health.register({ name: 'embedder_stack', check: () => Health.healthy() })).toThrow(/already registered/);
  });
});

describe('TOOLKIT_HEALTH_STARTUP_DELAY', () => {
  it('readiness is unhealthy (check `startup`) during the warm-up window, liveness stays available, then ready', async () => {
    const t0 = performance.now();
    const gw = await startTestGateway({ env: { TOOLKIT_HEALTH_STARTUP_DELAY: '1500ms' }, yaml: `${defaultYaml()}\nhealth: { cache_ttl: 0.1 }\n` });
    const startedAt = performance.now();
    try {
      const ready = await probe(gw, '/ready');
      expect(performance.now() - t0).toBeLessThan(1_500);
      expect(ready.status).toBe(503);
      expect(check(ready.body, 'startup')).toMatchObject({ status: 'unhealthy', reason: expect.any(String) });

      const health = await probe(gw, '/health');
      expect(health.status).toBe(200);
      expect(health.body.checks.map((c) => c.name)).not.toContain('startup');
      expect((await gw.fetch('/health/live', { auth: false })).status).toBe(200);

      await until(async () => {
        const r = await probe(gw, '/ready');
        if (r.status !== 200) {
          expect(check(r.body, 'startup').status).toBe('unhealthy');
          return false;
        }
        expect(r.body.checks.map((c) => c.name)).not.toContain('startup');
        return true;
      }, 'ready after the warm-up window', 1_500 + MARGIN_MS, 20);
      // Ready once the window (1.5 s from the start) is over: not sooner, and within MARGIN_MS of it (the cache's 0.1 s included).
      const readyAt = performance.now();
      expect(readyAt - t0).toBeGreaterThanOrEqual(1_500 - EARLY_MS);
      expect(readyAt - startedAt).toBeLessThan(1_500 + MARGIN_MS);
    } finally {
      await gw.close();
    }
  });
});

describe('bad toolkit variables stop the start', () => {
  async function run(extra: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
    const p = spawnGateway({ env: { GATEWAY_API_KEY: 'k', GATEWAY_WORKERS: '1', ...extra } });
    const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
    const { code } = await p.exit;
    clearTimeout(timer);
    return { code, stderr: p.stderr() };
  }

  it.each([
    ['TOOLKIT_HEALTH_CHECK_TIMEOUT', 'soon'],
    ['TOOLKIT_HEALTH_STARTUP_DELAY', '-5s'],
  ])('%s=%s: non-zero exit and a message naming the variable', async (name, value) => {
    const { code, stderr } = await run({ [name]: value });
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(stderr).toContain(name);
    expect(stderr).toContain(value);
  });
});

describe('gateway checks (unit, fake worker pool)', () => {
  const routingOf = (yaml: string) => parseConfig(yaml, 'unit.yaml', { GATEWAY_API_KEY: 'gw' }).routing;
  const fakePool = (parts: Partial<Pick<WorkerPool, 'ping' | 'probe' | 'stats'>>) => parts as unknown as WorkerPool;
  const run = async (check: ReturnType<typeof credentialsCheck>) => (await new HealthRegistry().register(check).checkLiveness()).checks[0]!;

  it('provider_credentials: healthy when a route has credentials (or needs none), unhealthy otherwise', async () => {
    const mock = routingOf('model_list:\n  - model_name: m\n    params: { model: mock/chat-small }\n');
    expect(credentialsCheck(() => mock).name).toBe('provider_credentials');
    expect(credentialsCheck(() => mock).requiredForReadiness).not.toBe(false);
    expect((await run(credentialsCheck(() => mock))).status).toBe('healthy');

    const keyless = routingOf('model_list:\n  - model_name: k\n    params: { model: openai/x, api_key: os.environ/SWITCHYARD_HEALTH_TEST_UNSET_KEY }\n');
    expect(await run(credentialsCheck(() => keyless))).toMatchObject({ status: 'unhealthy', reason: expect.stringMatching(/credentials/) });

    const keyed = routingOf(`model_list:\n  - model_name: k\n    params: { model: openai/x, api_key: ${UPSTREAM_KEY} }\n`);
    expect((await run(credentialsCheck(() => keyed))).status).toBe('healthy');

    const empty = routingOf('model_list: []\n');
    expect(await run(credentialsCheck(() => empty))).toMatchObject({ status: 'unhealthy', reason: expect.any(String) });
  });

  it('provider_credentials with bedrock on the AWS credential chain: counted once the chain produced credentials that have not expired; asks a worker otherwise; unready names the sources tried', async () => {
    const chainOnly = routingOf('model_list:\n  - model_name: b\n    params: { model: bedrock/anthropic.claude-x-v1:0, aws_region_name: eu-west-1 }\n');
    expect(chainOnly.aliases[0]?.credentials).toEqual({ kind: 'aws_chain' });
    const lines: Array<Record<string, unknown>> = [];
    const log = { error: (fields: Record<string, unknown>) => lines.push(fields), info: (fields: Record<string, unknown>) => lines.push(fields) } as unknown as Logger;
    const states = new AwsChainStates(log);
    const asked: string[] = [];
    let answer: (region: string) => AwsChainStateFrame | null = () => null;
    const chain = { states, timeoutMs: 100, resolve: async (region: string) => (asked.push(region), answer(region)) };
    const frame = (over: Partial<AwsChainStateFrame>): AwsChainStateFrame => ({ t: 'aws_chain_state', id: 0, region: 'eu-west-1', state: 'ok', expiresAt: null, source: 'fromTokenFile', error: null, tried: [], ...over });

    // Not asked (no chain to ask): unready.
    expect(await run(credentialsCheck(() => chainOnly))).toMatchObject({ status: 'unhealthy' });
    // Pending: a worker is asked, per region; no answer in time is unready.
    expect(await run(credentialsCheck(() => chainOnly, chain))).toMatchObject({ status: 'unhealthy', reason: expect.stringContaining('eu-west-1: no worker answered within 100 ms') });
    expect(asked).toEqual(['eu-west-1']);
    // The worker's answer reaches the states through the pool (onAwsChain), as here.
    const failed = frame({ state: 'failed', source: null, error: 'the AWS credential chain gave no credentials; tried fromEnv (x), fromTokenFile (y)', tried: ['fromEnv', 'fromTokenFile'] });
    answer = () => (states.report(failed), failed);
    expect(await run(credentialsCheck(() => chainOnly, chain))).toMatchObject({ status: 'unhealthy', reason: 'no configured route has provider credentials; the AWS credential chain gave none (eu-west-1: tried fromEnv, fromTokenFile; why each gave none: /status/models)' });
    const ok = frame({ expiresAt: Date.now() + 3_600_000 });
    answer = () => (states.report(ok), ok);
    expect((await run(credentialsCheck(() => chainOnly, chain))).status).toBe('healthy');
    expect(asked).toHaveLength(3);
    // Credentials that have not expired count without asking again.
    expect((await run(credentialsCheck(() => chainOnly, chain))).status).toBe('healthy');
    expect(asked).toHaveLength(3);
    // Expired (no refresh reported since): asked again.
    states.report(frame({ expiresAt: Date.now() - 1 }));
    answer = () => null;
    expect((await run(credentialsCheck(() => chainOnly, chain))).status).toBe('unhealthy');
    expect(asked).toHaveLength(4);
    // One line when the chain failed, one when it recovered: not one per report.
    expect(lines.map((l) => l.event)).toEqual(['aws_credentials_failed', 'aws_credentials_recovered']);
    expect(lines[0]).toMatchObject({ region: 'eu-west-1', tried: ['fromEnv', 'fromTokenFile'], error: failed.error });

    // A route with a key of its own is enough: the chain is not asked.
    const mixed = routingOf(`model_list:\n  - model_name: b\n    params: { model: bedrock/anthropic.claude-x-v1:0, aws_region_name: eu-west-1 }\n  - model_name: k\n    params: { model: openai/x, api_key: ${UPSTREAM_KEY} }\n`);
    expect((await run(credentialsCheck(() => mixed, chain))).status).toBe('healthy');
    expect(asked).toHaveLength(4);
  });

  it('worker_pool: unhealthy when a worker does not answer a ping, degraded on restarts or saturation', async () => {
    const stats = (over: Partial<ReturnType<WorkerPool['stats']>> = {}) => () => ({ workers: 2, inFlight: 0, restarts: 0, inFlightByWorker: [0, 0], ...over });
    expect((await run(workerPoolCheck(fakePool({ ping: async () => [1, 2], stats: stats() }), 500, 1000))).status).toBe('healthy');
    expect(await run(workerPoolCheck(fakePool({ ping: async () => [1, null], stats: stats() }), 500, 1000))).toMatchObject({ status: 'unhealthy', reason: expect.stringMatching(/1/) });
    expect((await run(workerPoolCheck(fakePool({ ping: async () => [1, 2], stats: stats({ restarts: 3 }) }), 500, 1000))).status).toBe('degraded');
    expect((await run(workerPoolCheck(fakePool({ ping: async () => [1, 2], stats: stats({ inFlight: 100_000 }) }), 500, 1000))).status).toBe('degraded');
    // Saturation is 90 % of max_in_flight: 899 of 1000 is still healthy, 900 is degraded.
    expect((await run(workerPoolCheck(fakePool({ ping: async () => [1, 2], stats: stats({ inFlight: 899 }) }), 500, 1000))).status).toBe('healthy');
    expect((await run(workerPoolCheck(fakePool({ ping: async () => [1, 2], stats: stats({ inFlight: 900 }) }), 500, 1000))).status).toBe('degraded');
  });

  it('event_loop: degraded after the loop was blocked past the threshold, healthy again afterwards', async () => {
    const check = eventLoopCheck(50);
    // Pacing the monitor (src/supervisor/gateway-checks.ts: a sample every 10 ms), not waits for an event: it measures each
    // delay from its previous sample, and a check resets it, after which its next sample only starts the count again. So
    // it must sample before the block, and after it before the check; and a few times more before the healthy check.
    const SAMPLE_MS = 10;
    try {
      await sleep(3 * SAMPLE_MS);
      const blockedUntil = performance.now() + 250;
      while (performance.now() < blockedUntil) {
        // block the event loop
      }
      await sleep(3 * SAMPLE_MS);
      const degraded = await run(check);
      expect(degraded).toMatchObject({ name: 'event_loop', status: 'degraded', reason: expect.stringMatching(/event-loop|delay/) });
      // The block measured as what it was: 250 ms and a sample interval or so, not a delay of some other cause.
      expect(degraded.reason).toMatch(/p99 (2[5-9]\d|3[0-4]\d) ms over 50 ms/);
      await sleep(5 * SAMPLE_MS);
      expect((await run(check)).status).toBe('healthy');
    } finally {
      check.stop();
    }
  });

  it('upstream:<origin>: one optional check per distinct origin; mock routes have none; a keyed route is preferred', async () => {
    const routing = routingOf(`
model_list:
  - model_name: a1
    params: { model: openai/x, api_base: http://127.0.0.1:1/v1, api_key: os.environ/SWITCHYARD_HEALTH_TEST_UNSET_KEY }
  - model_name: a2
    params: { model: openai/y, api_base: http://127.0.0.1:1/other/v1, api_key: ${UPSTREAM_KEY} }
  - model_name: b
    params: { model: openai/z, api_base: https://api.example.test/v1, api_key: ${UPSTREAM_KEY} }
  - model_name: m
    params: { model: mock/chat-small }
route_rules:
  - provider: openai
    params: { api_base: https://api.example.test/v2, api_key: ${UPSTREAM_KEY} }
`);
    const calls: Array<[string | null, string | null]> = [];
    const pool = fakePool({
      probe: async (upstream: ProbeTarget) => {
        calls.push([upstream.apiBase, providerKey(upstream.credentials)]);
        return { t: 'probed', id: 0, status: 200, error: null } satisfies ProbedFrame;
      },
    });
    const checks = upstreamChecks(routing, pool, 1_000);
    expect(checks.map((c) => c.name).sort()).toEqual(['upstream:http://127.0.0.1:1', 'upstream:https://api.example.test']);
    for (const c of checks) expect(c.requiredForReadiness).toBe(false);
    const registry = new HealthRegistry();
    for (const c of checks) registry.register(c);
    expect((await registry.checkLiveness()).status).toBe('healthy');
    expect((await registry.checkReadiness()).checks).toEqual([]);
    expect(calls.find(([base]) => base?.startsWith('http://127.0.0.1:1'))).toEqual(['http://127.0.0.1:1/other/v1', UPSTREAM_KEY]);
  });

  it.each<[ProbedFrame['status'], string | null, string]>([
    [200, null, 'healthy'],
    [404, null, 'healthy'],
    [401, null, 'degraded'],
    [403, null, 'degraded'],
    [500, null, 'degraded'],
    [null, 'connection refused', 'unhealthy'],
  ])('upstream:<origin>: a probe answer of status %s (error %s) is %s', async (status, error, expected) => {
    const routing = routingOf(`model_list:\n  - model_name: a\n    params: { model: openai/x, api_base: http://127.0.0.1:1/v1, api_key: ${UPSTREAM_KEY} }\n`);
    const pool = fakePool({ probe: async () => ({ t: 'probed', id: 0, status, error }) });
    const [check] = upstreamChecks(routing, pool, 1_000);
    expect((await run(check!)).status).toBe(expected);
  });

  it('upstream:<origin>: when the worker answers too late (pool.probe gives null at its deadline), the reason says the check timed out', async () => {
    // WorkerPool.probe resolves null when no answer came within timeoutMs + 250 ms, e.g. a
    // worker still attaching after start or busy. That is a timeout of the check.
    vi.useFakeTimers();
    try {
      const routing = routingOf(`model_list:\n  - model_name: a\n    params: { model: openai/x, api_base: http://127.0.0.1:1/v1, api_key: ${UPSTREAM_KEY} }\n`);
      const pool = fakePool({ probe: (_upstream: ProbeTarget, timeoutMs: number) => new Promise<null>((r) => setTimeout(() => r(null), timeoutMs + 250)) });
      const registry = new HealthRegistry().register(upstreamChecks(routing, pool, 5_000)[0]!);
      const report = registry.checkLiveness();
      await vi.advanceTimersByTimeAsync(5_000);
      const result = (await report).checks[0]!;
      expect(result.status).toBe('unhealthy');
      expect(result.duration_ms).toBeLessThanOrEqual(5_000);
      expect(result.reason).toMatch(TIMED_OUT);
    } finally {
      vi.useRealTimers();
    }
  });
});
