/**
 * CONTRACT.md, Inference-aware routing, Replicas, through the real gateway:
 * a listed set of replicas (fake upstreams on 127.0.0.1) picked, cooled and
 * retried one by one, with ids `<entry id>/<host:port>` in headers, metrics,
 * logs and status; a `dns` set asked of a DNS server on loopback
 * (`dns_servers`), whose replicas listen on 127.0.0.1-3 at one port,
 * appearing, going (drained), failing (last answer kept), surviving a
 * reload, and absent at the start; the system resolver through /etc/hosts
 * (`localhost`); and a TLS replica reached at its address with the
 * configured name as SNI, certificate name and Host (the built server as a
 * process, trusting the fixture CA through NODE_EXTRA_CA_CERTS), whose
 * SIGHUP keeps a replica's state.
 */
import { lookup } from 'node:dns/promises';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { startFakeUpstream, UPSTREAM_KEY, type FakeUpstream } from './support/fake-upstream.js';
import { startFakeDns, type FakeDns } from './support/fake-dns.js';
import { startTestGateway, TEST_KEY, type TestGateway } from './support/gateway.js';
import { spawnGateway } from './support/gateway-process.js';
import { chat, deploymentStates, type Answer } from './support/routing.js';
import { chatBody } from './support/requests.js';
import { until } from './support/waits.js';

const TLS = resolve(import.meta.dirname, 'support/fixtures/tls');
const NAME = 'replicas.test';

interface ReplicaStatus {
  address: string;
  deployment: string;
  state: string;
  in_flight: number;
  cooldown_remaining_ms: number;
  waiting: number | null;
  running: number | null;
  kv_cache: number | null;
  metrics_age_ms: number | null;
  prefix_index_entries: number | null;
}
interface ReplicaSetStatus {
  id: string;
  source: 'list' | 'dns';
  dns: { host: string; state: string; resolved_at: string | null; error: string | null } | null;
  replicas: ReplicaStatus[];
}

async function replicaSets(gw: TestGateway, alias: string): Promise<ReplicaSetStatus[]> {
  const res = await gw.fetch(`/status/models/${alias}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { replica_sets: ReplicaSetStatus[] }).replica_sets;
}

const addresses = async (gw: TestGateway, alias: string) => (await replicaSets(gw, alias))[0]?.replicas.map((r) => r.address) ?? [];

function expectNoRefusals(ups: readonly FakeUpstream[]): void {
  expect(ups.flatMap((u) => u.takeRefusals().map((r) => `${u.origin}: ${r.method} ${r.path} (${r.refused})`))).toEqual([]);
}

/** `n` chat calls one after the other. */
async function calls(gw: TestGateway, alias: string, n: number): Promise<Answer[]> {
  const out: Answer[] = [];
  for (let i = 0; i < n; i++) out.push(await chat(gw, alias));
  return out;
}

const ROUTER = 'router_settings: { routing_strategy: least-busy, allowed_fails: 1, cooldown_time: 60, num_retries: 2 }';

describe('replicas: a list', () => {
  const ups: FakeUpstream[] = [];
  let gw: TestGateway;
  const id = (entry: string, u: FakeUpstream) => `${entry}/127.0.0.1:${u.port}`;

  beforeAll(async () => {
    for (let i = 0; i < 4; i++) ups.push(await startFakeUpstream());
    const list = (us: FakeUpstream[]) => `[${us.map((u) => `"${u.url}"`).join(', ')}]`;
    gw = await startTestGateway({
      yaml: `
model_list:
  - model_name: pool
    params: { model: openai/llama, api_key: ${UPSTREAM_KEY}, replicas: ${list(ups.slice(0, 3))} }
    model_info: { id: pool }
  - model_name: cool
    params: { model: openai/llama, api_key: ${UPSTREAM_KEY}, replicas: ${list(ups.slice(0, 3))} }
    model_info: { id: cool }
  - model_name: solo
    params: { model: openai/llama, api_key: ${UPSTREAM_KEY}, replicas: ${list(ups.slice(3))} }
    model_info: { id: solo }
${ROUTER}
`,
    });
  });
  afterAll(async () => {
    await gw.close();
    for (const u of ups) await u.close();
  });
  beforeEach(() => ups.forEach((u) => u.reset()));
  afterEach(() => expectNoRefusals(ups));

  it('every replica takes calls, and its id <entry id>/<host:port> is in the headers, the access log, the metrics and the status', async () => {
    const answers = await calls(gw, 'pool', 30);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const ids = ups.slice(0, 3).map((u) => id('pool', u));
    for (const [i, u] of ups.slice(0, 3).entries()) {
      const served = answers.filter((a) => a.routing.deployment === ids[i]).length;
      expect(served, `${ids[i]} took calls`).toBeGreaterThan(0);
      expect(u.requests.filter((r) => r.path === '/v1/chat/completions')).toHaveLength(served);
    }
    expect(ups[3]?.requests).toEqual([]);

    const logged = await until(() => {
      const lines = gw.logs().filter((l) => l.msg === 'request' && l.model === 'pool');
      return lines.length >= 30 && lines;
    }, 'the access log lines of the 30 calls');
    expect(new Set(logged.map((l) => l.deployment))).toEqual(new Set(ids));

    const metrics = await (await gw.fetch('/metrics')).text();
    for (const d of ids) expect(metrics).toContain(`switchyard_deployment_state{model="pool",deployment="${d}"} 0`);

    expect(Object.keys(await deploymentStates(gw, 'pool'))).toEqual(ids);
    expect(await replicaSets(gw, 'pool')).toEqual([
      {
        id: 'pool',
        source: 'list',
        dns: null,
        replicas: ups.slice(0, 3).map((u) => ({
          address: `127.0.0.1:${u.port}`,
          deployment: id('pool', u),
          state: 'healthy',
          in_flight: 0,
          cooldown_remaining_ms: 0,
          waiting: null,
          running: null,
          kv_cache: null,
          metrics_age_ms: null,
          prefix_index_entries: null,
        })),
      },
    ]);
  });

  it('a failing replica cools on its own while the others serve, and the call it failed is retried on another replica', async () => {
    const [a, b, c] = ups as [FakeUpstream, FakeUpstream, FakeUpstream];
    b.behave({ kind: 'status', status: 500 });
    const answers = await calls(gw, 'cool', 12);
    expect(answers.map((x) => x.status)).toEqual(answers.map(() => 200));
    // allowed_fails 1: the first failure cools it, so it is called once.
    expect(b.requests).toHaveLength(1);
    const retried = answers.filter((x) => x.routing.attempts === '2');
    expect(retried).toHaveLength(1);
    expect([id('cool', a), id('cool', c)]).toContain(retried[0]?.routing.deployment);
    expect(answers.map((x) => x.routing.deployment)).not.toContain(id('cool', b));
    const states = await deploymentStates(gw, 'cool');
    expect([states[id('cool', a)]?.state, states[id('cool', b)]?.state, states[id('cool', c)]?.state]).toEqual(['healthy', 'cooling_down', 'healthy']);
    const set = (await replicaSets(gw, 'cool'))[0];
    expect(set?.replicas.map((r) => r.state)).toEqual(['healthy', 'cooling_down', 'healthy']);
    expect(set?.replicas[1]?.cooldown_remaining_ms).toBeGreaterThan(0);
    // The other entry's replicas at the same addresses are other deployments, with states of their own.
    expect(Object.values(await deploymentStates(gw, 'pool')).map((d) => d.state)).toEqual(['healthy', 'healthy', 'healthy']);
  });

  it('an entry of one replica is not a lone group: its replica cools, and then the alias answers 503 no_deployment_available', async () => {
    const d = ups[3] as FakeUpstream;
    d.behave({ kind: 'status', status: 500 });
    const first = await chat(gw, 'solo');
    expect([first.status, first.routing.deployment]).toEqual([502, id('solo', d)]);
    expect((await deploymentStates(gw, 'solo'))[id('solo', d)]?.state).toBe('cooling_down');
    const second = await chat(gw, 'solo');
    expect(second.status).toBe(503);
    expect(JSON.parse(second.text)).toMatchObject({ error: { code: 'no_deployment_available' } });
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    // A lone deployment would have taken the second call, and each attempt's retries.
    expect(d.requests).toHaveLength(1);
  });
});

describe('replicas: dns, asked of dns_servers', () => {
  let dns: FakeDns;
  const ups: FakeUpstream[] = [];
  let gw: TestGateway;
  let port = 0;
  const id = (n: number) => `vllm/127.0.0.${n}:${port}`;
  const at = (n: number) => ups[n - 1] as FakeUpstream;
  const yaml = (name: string, extra = '') => `
model_list:
  - model_name: llama
    params: { model: openai/llama, api_base: "http://${name}:${port}/v1", api_key: ${UPSTREAM_KEY}, replicas: dns, dns_refresh: 0.05, dns_servers: ["${dns.server}"] }
    model_info: { id: vllm }
${extra}
${ROUTER}
`;

  beforeAll(async () => {
    dns = await startFakeDns();
    ups.push(await startFakeUpstream());
    port = at(1).port;
    ups.push(await startFakeUpstream({ host: '127.0.0.2', port }), await startFakeUpstream({ host: '127.0.0.3', port }));
    dns.answer(NAME, ['127.0.0.2', '127.0.0.1']);
    gw = await startTestGateway({ yaml: yaml(NAME) });
  });
  afterAll(async () => {
    await gw.close();
    for (const u of ups) await u.close();
    await dns.close();
  });
  beforeEach(() => ups.forEach((u) => u.reset()));
  afterEach(() => expectNoRefusals(ups));

  it('the replicas are the addresses of the answer, from the first request; each call connects to one and keeps the configured name as Host', async () => {
    const [set] = await replicaSets(gw, 'llama');
    expect(set).toMatchObject({ id: 'vllm', source: 'dns', dns: { host: `${NAME}:${port}`, state: 'ok', error: null } });
    expect(set?.replicas.map((r) => [r.address, r.deployment])).toEqual([
      [`127.0.0.1:${port}`, id(1)],
      [`127.0.0.2:${port}`, id(2)],
    ]);
    const answers = await calls(gw, 'llama', 10);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((a) => a.routing.deployment))).toEqual(new Set([id(1), id(2)]));
    expect(at(1).requests.length).toBeGreaterThan(0);
    expect(at(2).requests.length).toBeGreaterThan(0);
    expect(at(3).requests).toEqual([]);
    expect(new Set([...at(1).requests, ...at(2).requests].map((r) => r.headers.host))).toEqual(new Set([`${NAME}:${port}`]));
  });

  it('a replica that appears in the answer gets a state slot and takes calls', async () => {
    dns.answer(NAME, ['127.0.0.1', '127.0.0.2', '127.0.0.3']);
    await until(async () => (await addresses(gw, 'llama')).length === 3, 'the third replica in /status');
    expect(gw.gateway.context.deployments.slotOf(id(3))).toBeTypeOf('number');
    const answers = await calls(gw, 'llama', 9);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(at(3).requests.length).toBeGreaterThan(0);
    expect(at(3).requests.every((r) => r.headers.host === `${NAME}:${port}`)).toBe(true);
    expect(gw.logs().some((l) => l.event === 'replicas_changed' && (l.added as string[]).includes('127.0.0.3'))).toBe(true);
  });

  it('a replica that leaves the answer is drained: its call in flight finishes, new calls avoid it, its slot is retired', async () => {
    await until(async () => (await addresses(gw, 'llama')).length === 3, 'three replicas');
    // A call held by replica 2 while its address leaves.
    at(2).behave({ kind: 'delay', ms: 3000 });
    const started: Array<Promise<Answer>> = [];
    await until(async () => {
      if (at(2).openRequests() > 0) return true;
      started.push(chat(gw, 'llama'));
      await Promise.race([started.at(-1), at(2).waitFor(() => at(2).openRequests() > 0, 300).catch(() => undefined)]);
      return at(2).openRequests() > 0;
    }, 'a call in flight on replica 2');
    const states = gw.gateway.context.deployments.states;
    const slot = gw.gateway.context.deployments.slotOf(id(2)) as number;
    expect(states.inFlight(slot)).toBe(1);

    dns.answer(NAME, ['127.0.0.1', '127.0.0.3']);
    await until(async () => (await addresses(gw, 'llama')).length === 2, 'replica 2 gone from /status');
    expect(await addresses(gw, 'llama')).toEqual([`127.0.0.1:${port}`, `127.0.0.3:${port}`]);
    expect(gw.gateway.context.deployments.slotOf(id(2))).toBeUndefined();
    expect(at(2).openRequests(), 'the call on replica 2 is still in flight').toBe(1);
    expect(states.inFlight(slot)).toBe(1);

    const before = at(2).requests.length;
    const answers = await calls(gw, 'llama', 8);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(answers.map((a) => a.routing.deployment)).not.toContain(id(2));
    expect(at(2).requests).toHaveLength(before);

    const drained = await Promise.all(started);
    expect(drained.map((a) => a.status)).toEqual(drained.map(() => 200));
    expect(drained.map((a) => a.routing.deployment)).toContain(id(2));
    // Its place given back to the retired slot, which a new id may now take.
    await until(() => states.inFlight(slot) === 0, 'the retired slot has nothing in flight');
    expect(await (await gw.fetch('/metrics')).text()).not.toContain(`deployment="${id(2)}"} `);
    expect(gw.logs().some((l) => l.event === 'replicas_changed' && (l.removed as string[]).includes('127.0.0.2'))).toBe(true);
  });

  it('an answer that fails keeps the last good one, logged once per change of state, and degrades /health', async () => {
    const kept = await addresses(gw, 'llama');
    expect(kept).toHaveLength(2);
    const failedBefore = gw.logs().filter((l) => l.event === 'replicas_resolve_failed').length;
    dns.answer(NAME, 'servfail');
    await until(async () => (await replicaSets(gw, 'llama'))[0]?.dns?.state === 'failing', 'the resolution failing in /status');
    // Several more failed resolutions (A and AAAA each) go by, logged no more.
    await dns.moreQuestions(NAME, 12);
    const [set] = await replicaSets(gw, 'llama');
    expect(set?.dns?.error).toMatch(/SERVFAIL/);
    expect(set?.replicas.map((r) => r.address)).toEqual(kept);
    const answers = await calls(gw, 'llama', 4);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(gw.logs().filter((l) => l.event === 'replicas_resolve_failed')).toHaveLength(failedBefore + 1);
    const health = (await (await gw.fetch('/health')).json()) as { checks: Array<{ name: string; status: string }> };
    expect(health.checks.find((c) => c.name === 'replicas_dns')?.status).toBe('degraded');

    dns.answer(NAME, ['127.0.0.3', '127.0.0.1']);
    await until(async () => (await replicaSets(gw, 'llama'))[0]?.dns?.state === 'ok', 'the resolution answering again');
    expect(await addresses(gw, 'llama')).toEqual(kept);
    expect(gw.logs().filter((l) => l.event === 'replicas_resolve_recovered')).toHaveLength(1);
  });

  it('a reload (SIGHUP) keeps the replicas of a set that survives, with their slots and state, and never routes without them', async () => {
    // Replica 3 cooled by a failure.
    at(3).behave({ kind: 'status', status: 500 });
    await until(async () => {
      await chat(gw, 'llama');
      return at(3).requests.length > 0;
    }, 'a call on replica 3');
    expect((await deploymentStates(gw, 'llama'))[id(3)]?.state).toBe('cooling_down');
    const slots = [id(1), id(3)].map((d) => gw.gateway.context.deployments.slotOf(d));

    const version = gw.gateway.context.config.routing.version;
    gw.gateway.reload(parseConfig(yaml(NAME, '  - model_name: extra\n    params: { model: mock/x }'), 'test-config.yaml', { GATEWAY_API_KEY: TEST_KEY }, version + 1));
    // At once, not after the next answer: the reloaded config routes to the same replicas.
    expect(gw.gateway.context.config.routing.aliases.map((d) => d.id)).toEqual([id(1), id(3), 'extra-0']);
    expect([id(1), id(3)].map((d) => gw.gateway.context.deployments.slotOf(d))).toEqual(slots);
    expect((await deploymentStates(gw, 'llama'))[id(3)]?.state).toBe('cooling_down');
    const answers = await calls(gw, 'llama', 4);
    expect(answers.map((a) => [a.status, a.routing.deployment])).toEqual(answers.map(() => [200, id(1)]));
  });

  it('with no answer at the start the alias exists and answers 503 no_deployment_available until its name resolves', async () => {
    const late = 'late.test';
    dns.answer(late, 'servfail');
    // Another entry of that name whose key is missing: its alias answers credentials_missing, not no_deployment_available.
    const nokey = `  - model_name: nokey\n    params: { model: openai/llama, api_base: "http://${late}:${port}/v1", api_key: os.environ/SWITCHYARD_TEST_UNSET_KEY, replicas: dns, dns_servers: ["${dns.server}"] }`;
    const lateGw = await startTestGateway({ yaml: yaml(late, nokey) });
    try {
      const [set] = await replicaSets(lateGw, 'llama');
      expect(set).toMatchObject({ id: 'vllm', source: 'dns', dns: { state: 'failing', resolved_at: null }, replicas: [] });
      const models = (await (await lateGw.fetch('/v1/models')).json()) as { data: Array<{ id: string }> };
      expect(models.data.map((m) => m.id)).toEqual(['llama', 'nokey']);
      const unkeyed = await chat(lateGw, 'nokey');
      expect([unkeyed.status, (JSON.parse(unkeyed.text) as { error: { code: string } }).error.code]).toEqual([503, 'credentials_missing']);
      const refused = await chat(lateGw, 'llama');
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 'no_deployment_available' } });
      expect(refused.headers.get('retry-after')).toBe('1');
      const health = (await (await lateGw.fetch('/health')).json()) as { checks: Array<{ name: string; status: string; reason?: string }> };
      expect(health.checks.find((c) => c.name === 'replicas_dns')).toMatchObject({ status: 'unhealthy' });
      // Not ready, and readiness says why: the keyed set waits on DNS (nokey, without its key, is no help either way).
      expect(health.checks.find((c) => c.name === 'provider_credentials')).toMatchObject({
        status: 'unhealthy',
        reason: 'no configured route has provider credentials; vllm has no replica until DNS answers (check replicas_dns)',
      });

      dns.answer(late, ['127.0.0.1']);
      await until(async () => (await addresses(lateGw, 'llama')).length === 1, 'the replica once the name resolves');
      const served = await chat(lateGw, 'llama');
      expect([served.status, served.routing.deployment]).toEqual([200, id(1)]);
      expect(at(1).requests.at(-1)?.headers.host).toBe(`${late}:${port}`);
      expect((await lateGw.fetch('/ready')).status).toBe(200);
    } finally {
      await lateGw.close();
    }
  });

  it('a config of one unanswered dns set: readiness names the set that waits on DNS, not "no routes are configured"', async () => {
    const unknown = 'unknown.test';
    dns.answer(unknown, 'servfail');
    const waiting = await startTestGateway({ yaml: yaml(unknown) });
    try {
      const ready = await waiting.fetch('/ready');
      expect(ready.status).toBe(503);
      const health = (await (await waiting.fetch('/health')).json()) as { checks: Array<{ name: string; status: string; reason?: string }> };
      expect(health.checks.find((c) => c.name === 'provider_credentials')).toMatchObject({
        status: 'unhealthy',
        reason: 'no configured route has provider credentials; vllm has no replica until DNS answers (check replicas_dns)',
      });
    } finally {
      await waiting.close();
    }
  });
});

describe('replicas: dns with the system resolver (/etc/hosts)', () => {
  it('localhost: every address the system gives is a replica, and the calls keep "localhost" as Host', async () => {
    const found = (await lookup('localhost', { all: true, verbatim: true })).map((a) => a.address);
    expect(found).toContain('127.0.0.1');
    const ups = [await startFakeUpstream()];
    const port = (ups[0] as FakeUpstream).port;
    // ::1 too, where this machine can listen on it; where it cannot (IPv6 off), that replica is unreachable and only cools.
    const unreachable: string[] = [];
    for (const address of found.filter((a) => a !== '127.0.0.1')) {
      try {
        ups.push(await startFakeUpstream({ host: address, port }));
      } catch {
        unreachable.push(`local/[${address}]:${port}`);
      }
    }
    const gw = await startTestGateway({
      yaml: `
model_list:
  - model_name: local
    params: { model: openai/llama, api_base: "http://localhost:${port}/v1", api_key: ${UPSTREAM_KEY}, replicas: dns }
    model_info: { id: local }
${ROUTER}
`,
    });
    try {
      const expected = [...new Set(found)].map((a) => (a.includes(':') ? `[${a}]:${port}` : `${a}:${port}`));
      expect(new Set(await addresses(gw, 'local'))).toEqual(new Set(expected));
      const answers = await calls(gw, 'local', 2 * expected.length);
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
      for (const u of ups) {
        expect(u.requests.length, `${u.origin} took calls`).toBeGreaterThan(0);
        expect(new Set(u.requests.map((r) => r.headers.host))).toEqual(new Set([`localhost:${port}`]));
      }
      const states = await deploymentStates(gw, 'local');
      for (const id of unreachable) expect(states[id]?.state).toBe('cooling_down');
      expectNoRefusals(ups);
    } finally {
      await gw.close();
      for (const u of ups) await u.close();
    }
  });
});

describe('replicas: dns over TLS, and SIGHUP (the built server as a process)', () => {
  it('each replica is reached at its address with the configured name as TLS server name, certificate name and Host; SIGHUP keeps its state', async () => {
    const dns = await startFakeDns();
    const tls = { key: readFileSync(resolve(TLS, 'replica.key'), 'utf8'), cert: readFileSync(resolve(TLS, 'replica.pem'), 'utf8') };
    const ups = [await startFakeUpstream({ tls })];
    const port = (ups[0] as FakeUpstream).port;
    ups.push(await startFakeUpstream({ tls, host: '127.0.0.2', port }));
    dns.answer(NAME, ['127.0.0.1', '127.0.0.2']);
    const yaml = (extra: string) => `
model_list:
  - model_name: secure
    params: { model: openai/llama, api_base: "https://${NAME}:${port}/v1", api_key: ${UPSTREAM_KEY}, replicas: dns, dns_servers: ["${dns.server}"] }
    model_info: { id: secure }
  - model_name: wrong-name
    params: { model: openai/llama, api_base: "https://other.test:${port}/v1", api_key: ${UPSTREAM_KEY}, replicas: dns, dns_servers: ["${dns.server}"] }
${extra}
${ROUTER}
`;
    // The same replica under a name its certificate does not have: the certificate check fails.
    dns.answer('other.test', ['127.0.0.1']);
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-replicas-'));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, yaml(''));
    // The fixture CA signed the certificate of replicas.test (test/support/fixtures/tls); the gateway trusts it only so.
    const proc = spawnGateway({ env: { GATEWAY_CONFIG: file, GATEWAY_API_KEY: TEST_KEY, GATEWAY_DRAIN_DELAY: '0', NODE_EXTRA_CA_CERTS: resolve(TLS, 'ca.pem') } });
    try {
      const url = `http://127.0.0.1:${String((await proc.listening()).port)}`;
      const get = (path: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
      const call = async () => {
        const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' }, body: chatBody('secure') });
        await res.text();
        return { status: res.status, deployment: res.headers.get('x-switchyard-deployment') };
      };
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await call());
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
      const [one, two] = [`secure/127.0.0.1:${port}`, `secure/127.0.0.2:${port}`];
      const requests = (ups[0] as FakeUpstream).requests.length;
      const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' }, body: chatBody('wrong-name') });
      expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([502, 'upstream_unreachable']);
      expect((ups[0] as FakeUpstream).requests).toHaveLength(requests);
      expect(new Set(answers.map((a) => a.deployment))).toEqual(new Set([one, two]));
      for (const u of ups) {
        expect(u.requests.length, `${u.origin} took calls`).toBeGreaterThan(0);
        expect(new Set(u.requests.map((r) => [r.servername, r.headers.host].join(' ')))).toEqual(new Set([`${NAME} ${NAME}:${port}`]));
      }

      // Replica 2 cooled, then a reload by SIGHUP with another alias: both replicas stay, replica 2 still cooling.
      const states = async () => ((await (await get('/status/models/secure')).json()) as { deployments: Array<{ id: string; state: string }> }).deployments.map((d) => [d.id, d.state]);
      (ups[1] as FakeUpstream).behave({ kind: 'status', status: 500 });
      await until(async () => {
        await call();
        return (await states()).some(([id, state]) => id === two && state === 'cooling_down');
      }, 'replica 2 cooling down');
      writeFileSync(file, yaml('  - model_name: extra\n    params: { model: mock/x }'));
      proc.child.kill('SIGHUP');
      await until(() => proc.lines().some((l) => l.event === 'config_reloaded'), 'the config_reloaded line');
      expect(await states()).toEqual([
        [one, 'healthy'],
        [two, 'cooling_down'],
      ]);
      expect((await get('/status/models/extra')).status).toBe(200);
      expectNoRefusals(ups);
    } finally {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
      for (const u of ups) await u.close();
      await dns.close();
    }
  });
});
