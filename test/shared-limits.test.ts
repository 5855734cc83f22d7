/**
 * CONTRACT.md, Shared state across pods, with Redis: several gateway
 * processes (the built server) on one config and one real redis-server,
 * in front of scripted deployments that count what reaches them. A short
 * window (router_settings.limit_window, a key for tests) stands for the
 * minute; the bound and the 95 % are the contract's, over that window.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from './support/redis-server.js';
import { startRedisCluster } from './support/redis-cluster.js';
import { respCommand, respMonitor } from './support/resp.js';
import { startDelayProxy } from './support/delay-proxy.js';
import { startFleet, type Fleet } from './support/gateway-fleet.js';
import { deploymentYaml, startScriptedUpstream, type ScriptedUpstream } from './support/scripted-upstream.js';
import { busiestWindow, inWindow, type Counted } from './support/window-counts.js';
import { chatBody } from './support/requests.js';
import { skewedClockEnv } from './support/skewed-clock.js';
import { until } from './support/waits.js';
import type { GatewayEndpoint } from './support/gateway.js';

const WINDOW_S = 3;
const WINDOW_MS = WINDOW_S * 1000;
const PODS = 3;

async function chat(pod: GatewayEndpoint, model: string, extra: Record<string, unknown> = {}): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await pod.fetch('/v1/chat/completions', { method: 'POST', body: chatBody(model, extra) });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

/**
 * No request waited on Redis: one round trip through the slowed proxy is 300 ms (150 each way), a command's
 * timeout 250 ms, so the 99th percentile stays under 250 ms; the slowest is allowed a loaded host's pause (1 s).
 */
function expectNoWaitOnRedis(ms: readonly number[]): void {
  const sorted = [...ms].sort((a, b) => a - b);
  expect(sorted[Math.floor(sorted.length * 0.99)], 'p99 of the requests (ms)').toBeLessThan(250);
  expect(sorted.at(-1), 'the slowest request (ms)').toBeLessThan(1000);
}

/**
 * When each call the pods sent upstream reached its pod (Date.now ms: its access line's time less its duration),
 * as many as reached the upstream: the time of its admission to within the reading of its body, so a window of
 * these counts what the pods admitted, with no transit to the upstream in it.
 */
async function admittedAt(fleet: Fleet, sentUpstream: number): Promise<Counted[]> {
  const admitted = () => fleet.events('access').filter((e) => e.line.status === 200 && e.line.route === '/v1/chat/completions');
  // Access lines go out in batches (up to 200 ms later).
  await until(() => admitted().length >= sentUpstream, `the pods logged the ${sentUpstream} calls that reached the upstream`, 5000);
  return admitted().map((e) => ({ at: Date.parse(e.line.time as string) - (e.line.duration_ms as number), tokens: 0 }));
}

async function sharedState(pod: GatewayEndpoint): Promise<string> {
  const res = await pod.fetch('/status');
  return ((await res.json()) as { shared_state: string }).shared_state;
}

/** Redis' clock less the pod's, as its metric says (ms). */
async function clockOffsetMs(pod: GatewayEndpoint): Promise<number> {
  const text = await (await pod.fetch('/metrics')).text();
  const m = /^switchyard_shared_state_clock_offset_seconds (\S+)$/m.exec(text);
  if (m === null) throw new Error('no switchyard_shared_state_clock_offset_seconds in /metrics');
  return Number(m[1]) * 1000;
}

/** Waits until every pod of `fleet` says shared_state ok: it reached Redis and draws from the fleet's budget. */
async function everyPodReachedRedis(fleet: Fleet): Promise<void> {
  await until(async () => (await Promise.all(fleet.pods.map(sharedState))).every((s) => s === 'ok'), 'every pod reached Redis', 5000);
}

describe('limits shared by a fleet through Redis', () => {
  let redis: RedisServer;
  let up: ScriptedUpstream;
  beforeAll(async () => {
    redis = await startRedis();
    up = await startScriptedUpstream(['east', 'west', 'fast']);
  });
  afterAll(async () => {
    await up?.close();
    await redis?.stop();
  });

  it('rpm: demand above the limit on 3 pods: at most rpm × 1.05 + pods calls in any window, at least 95 % of rpm in a window of steady demand', async () => {
    const rpm = 60;
    const fleet = await startFleet({ pods: PODS, keepAnswered: true, yaml: `
model_list:${deploymentYaml('chat', up.at('east'), `, rpm: ${rpm}`)}
router_settings: { redis_url: "${redis.url}", limit_window: ${WINDOW_S} }
` });
    try {
      await everyPodReachedRedis(fleet);
      const started = performance.now();
      const sent = await fleet.spread({ durationMs: 3 * WINDOW_MS }, { concurrency: 12 }, (pod) => chat(pod, 'chat'));
      const calls = up.at('east').calls().filter((c) => c.at >= started);
      // Calls are timed at their arrival here, admitted in a pod a moment before: 150 ms of the window cover what transit
      // on a loaded 2-core host can shift between two calls (with the minute, that is nothing).
      const worst = busiestWindow(calls, WINDOW_MS - 150);
      expect(worst.calls, `the busiest window of ${WINDOW_MS} ms (shared_state changes: ${JSON.stringify(fleet.events('shared_state').map((e) => [e.pod, e.line.state, e.line.reason]))})`).toBeLessThanOrEqual(rpm * 1.05 + PODS);
      // The same bound over the whole window, where the pods admitted the calls.
      const admitted = busiestWindow(await admittedAt(fleet, calls.length), WINDOW_MS);
      console.info(`[figures] rpm ${rpm} over a ${WINDOW_MS} ms window, 3 pods: busiest window ${admitted.calls} calls as admitted, ${busiestWindow(calls, WINDOW_MS).calls} as they reached the upstream (bound ${rpm * 1.05 + PODS})`);
      expect(admitted.calls, `the busiest window of ${WINDOW_MS} ms, by admission`).toBeLessThanOrEqual(rpm * 1.05 + PODS);
      // The second window: demand was above the limit all through it.
      const steady = inWindow(calls, started + WINDOW_MS, started + 2 * WINDOW_MS);
      expect(steady.calls, 'a window of steady demand').toBeGreaterThanOrEqual(0.95 * rpm);
      const statuses = new Set(sent.map((s) => s.value?.status));
      expect(statuses).toEqual(new Set([200, 429]));
      // Over all three pods, not one: the fleet's limit, not the pod's (3 × 60 would pass a per-pod limit).
      expect(calls.length).toBeLessThanOrEqual(3 * (rpm * 1.05 + PODS));
    } finally {
      await fleet.stopAll();
      up.reset();
    }
  });

  // Without the fleet's clock, the pod 0.5 s ahead saw the window free 0.5 s early every time: the fleet spent its
  // budget in bursts 2.5 s apart, and 132 calls went in one 3 s window.
  it.each([500, -500])('a pod whose clock is %i ms off the others: the same bound, as the pods name buckets by Redis\' clock', async (skewMs) => {
    const rpm = 60;
    const fleet = await startFleet({ pods: PODS, podEnv: (i) => (i === 2 ? skewedClockEnv(skewMs) : {}), yaml: `
model_list:${deploymentYaml('chat', up.at('east'), `, rpm: ${rpm}`)}
router_settings: { redis_url: "${redis.url}", limit_window: ${WINDOW_S} }
` });
    try {
      await everyPodReachedRedis(fleet);
      // Each pod measured how far its clock is from Redis': the skewed one by the skew, the others by nothing.
      const offsets = await Promise.all(fleet.pods.map(clockOffsetMs));
      expect(Math.abs((offsets[2] as number) + skewMs), `clock offsets (ms) ${offsets.join(', ')}`).toBeLessThan(50);
      for (const offset of offsets.slice(0, 2)) expect(Math.abs(offset)).toBeLessThan(50);
      const started = performance.now();
      await fleet.spread({ durationMs: 3 * WINDOW_MS }, { concurrency: 12 }, (pod) => chat(pod, 'chat'));
      const calls = up.at('east').calls().filter((c) => c.at >= started);
      // As in the rpm test: 150 ms of the window for the transit between admission and arrival here.
      expect(busiestWindow(calls, WINDOW_MS - 150).calls, `the busiest window (${busiestWindow(calls, WINDOW_MS).calls} over the whole ${WINDOW_MS} ms)`).toBeLessThanOrEqual(rpm * 1.05 + PODS);
      console.info(`[figures] rpm ${rpm}, 3 pods, one ${skewMs} ms off: busiest window ${busiestWindow(calls, WINDOW_MS - 150).calls} calls over ${WINDOW_MS - 150} ms, ${busiestWindow(calls, WINDOW_MS).calls} over ${WINDOW_MS} ms (bound ${rpm * 1.05 + PODS}); clock offsets ${offsets.map((o) => o.toFixed(1)).join(', ')} ms`);
      expect(inWindow(calls, started + WINDOW_MS, started + 2 * WINDOW_MS).calls, 'a window of steady demand').toBeGreaterThanOrEqual(0.95 * rpm);
    } finally {
      await fleet.stopAll();
      up.reset();
    }
  });

  it('tpm: tokens over any window stay within tpm × 1.05 + one call’s estimate per pod', async () => {
    const tpm = 3000;
    // Billed below the estimate (the bound counts estimates; a provider billing above them is over it by that much).
    up.at('east').usage({ prompt_tokens: 15, completion_tokens: 20 });
    const fleet = await startFleet({ pods: PODS, yaml: `
model_list:${deploymentYaml('chat', up.at('east'), `, tpm: ${tpm}`)}
router_settings: { redis_url: "${redis.url}", limit_window: ${WINDOW_S} }
` });
    try {
      await everyPodReachedRedis(fleet);
      const started = performance.now();
      await fleet.spread({ durationMs: 2 * WINDOW_MS }, { concurrency: 12 }, (pod) => chat(pod, 'chat', { max_tokens: 20 }));
      const calls = up.at('east').calls().filter((c) => c.at >= started);
      const estimate = Math.ceil(Buffer.byteLength(chatBody('chat', { max_tokens: 20 })) / 4) + 20;
      expect(calls.every((c) => c.tokens <= estimate)).toBe(true);
      // As for rpm: 150 ms of the window for the transit between admission in a pod and arrival here.
      expect(busiestWindow(calls, WINDOW_MS - 150).tokens).toBeLessThanOrEqual(tpm * 1.05 + PODS * estimate);
      // Demand was above the limit: the fleet used most of it in the second window.
      expect(inWindow(calls, started + WINDOW_MS, started + 2 * WINDOW_MS).tokens).toBeGreaterThanOrEqual(0.9 * tpm);
    } finally {
      await fleet.stopAll();
      up.reset();
    }
  });

  it('a cooldown one pod starts is honoured by every pod within 1 s, one of them with its clock 40 s ahead', async () => {
    // Pod 2's clock is past the cooldown's end as pod 0 reckons it: read in its own time it would be over already.
    const fleet = await startFleet({ pods: PODS, podEnv: (i) => (i === 2 ? skewedClockEnv(40_000) : {}), yaml: `
model_list:${deploymentYaml('chat', up.at('east'))}${deploymentYaml('chat', up.at('west'))}
router_settings: { redis_url: "${redis.url}", cooldown_time: 30, num_retries: 0 }
` });
    try {
      await everyPodReachedRedis(fleet);
      up.at('east').always({ kind: 'status', status: 429 });
      // Pod 0 alone meets east's 429 (at once a cooldown); the others have never called east.
      await until(
        async () => {
          await chat(fleet.pods[0] as GatewayEndpoint, 'chat');
          return up.at('east').received.some((r) => r.step === 'status');
        },
        'pod 0 met the 429',
        5000,
      );
      const cooledAt = performance.now();
      const cooling = async (pod: GatewayEndpoint) => {
        const body = (await (await pod.fetch('/status/models/chat')).json()) as { deployments: Array<{ id: string; state: string }> };
        return body.deployments.find((d) => d.id === 'east')?.state === 'cooling_down';
      };
      await until(async () => (await Promise.all(fleet.pods.slice(1).map(cooling))).every(Boolean), 'the other pods see east cooling', 3000);
      expect(performance.now() - cooledAt).toBeLessThanOrEqual(1000);
      const before = up.at('east').received.length;
      for (let i = 0; i < 6; i++) expect((await chat(fleet.pods[1 + (i % 2)] as GatewayEndpoint, 'chat')).status).toBe(200);
      expect(up.at('east').received.length, 'no other pod called east during its cooldown').toBe(before);
    } finally {
      await fleet.stopAll();
      up.reset();
    }
  });

  it('Redis killed and restarted mid-load: no request fails or slows for it; per-pod limits meanwhile; shared again after, without a restart', async () => {
    const fleet = await startFleet({ pods: 2, yaml: `
model_list:${deploymentYaml('chat', up.at('fast'), ', rpm: 100000')}
router_settings: { redis_url: "${redis.url}" }
` });
    try {
      await everyPodReachedRedis(fleet);
      const load = fleet.spread({ durationMs: 6000 }, { concurrency: 4 }, (pod) => chat(pod, 'chat'));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const killedAt = performance.now();
      await redis.kill();
      await until(async () => (await Promise.all(fleet.pods.map(sharedState))).every((s) => s === 'degraded'), 'every pod degraded', 5000);
      expect(performance.now() - killedAt).toBeLessThanOrEqual(5000);
      await redis.restart();
      const back = performance.now();
      await until(async () => (await Promise.all(fleet.pods.map(sharedState))).every((s) => s === 'ok'), 'every pod shared again', 10_000);
      expect(performance.now() - back).toBeLessThanOrEqual(10_000);
      const sent = await load;
      expect(sent.filter((s) => s.value?.status !== 200).map((s) => [s.index, s.value?.status, Math.round(s.at - killedAt)])).toEqual([]);
      expectNoWaitOnRedis(sent.map((s) => s.ms));
      // One line per change of state, per pod: degraded (not reached yet) at start, ok, degraded, ok.
      for (let pod = 0; pod < 2; pod++) {
        expect(fleet.events('shared_state').filter((e) => e.pod === pod).map((e) => e.line.state)).toEqual(['degraded', 'ok', 'degraded', 'ok']);
      }
    } finally {
      await fleet.stopAll();
      up.reset();
    }
  });

  it('Redis lost after it was reached: each pod admits the limit ÷ the pods it last saw', async () => {
    const rpm = 20;
    const fleet = await startFleet({ pods: 2, yaml: `
model_list:${deploymentYaml('chat', up.at('east'), `, rpm: ${rpm}`)}
router_settings: { redis_url: "${redis.url}", limit_window: 60 }
` });
    try {
      await everyPodReachedRedis(fleet);
      // Both pods registered, and each has seen the other (a ping every 200 ms).
      await until(async () => Number(await redis.command('ZCARD', 'switchyard:{switchyard}:pods')) === 2, 'two pods registered', 5000);
      await new Promise((resolve) => setTimeout(resolve, 400));
      await redis.kill();
      await until(async () => (await Promise.all(fleet.pods.map(sharedState))).every((s) => s === 'degraded'), 'every pod degraded', 5000);
      for (const pod of fleet.pods) {
        const statuses = [];
        for (let i = 0; i < rpm / 2 + 2; i++) statuses.push((await chat(pod, 'chat')).status);
        expect(statuses).toEqual([...Array(rpm / 2).fill(200), 429, 429]);
      }
      expect(up.at('east').calls()).toHaveLength(rpm);
    } finally {
      await fleet.stopAll();
      await redis.restart();
      up.reset();
    }
  });

  it('the latency redis_url adds, against the same pod without it, in one run: under 1 ms at the median', async () => {
    const config = (redisUrl: string | null) => `
model_list:${deploymentYaml('chat', up.at('fast'), ', rpm: 1000000')}
${redisUrl === null ? '' : `router_settings: { redis_url: "${redisUrl}" }`}
`;
    const shared = await startFleet({ pods: 1, yaml: config(redis.url) });
    const alone = await startFleet({ pods: 1, yaml: config(null) });
    try {
      await until(async () => (await sharedState(shared.pods[0] as GatewayEndpoint)) === 'ok', 'the pod reached Redis', 5000);
      const times: Record<'shared' | 'alone', number[]> = { shared: [], alone: [] };
      // Alternated, so both see the same host load; the first 50 of each warm up.
      for (let i = 0; i < 650; i++) {
        const which = i % 2 === 0 ? 'shared' : 'alone';
        const { status, ms } = await chat((which === 'shared' ? shared : alone).pods[0] as GatewayEndpoint, 'chat');
        expect(status).toBe(200);
        if (i >= 100) times[which].push(ms);
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
      const added = median(times.shared) - median(times.alone);
      expect(added, `median with redis_url ${median(times.shared).toFixed(3)} ms, without ${median(times.alone).toFixed(3)} ms`).toBeLessThan(1);
    } finally {
      await shared.stopAll();
      await alone.stopAll();
      up.reset();
    }
  });

  it('a pod sends Redis about a dozen commands a second whatever its traffic: nothing per call, nothing per 25 ms tick', async () => {
    // The minute's window, and limits no call reaches; every call billed below its estimate, so each leaves tokens to give back.
    up.at('fast').usage({ prompt_tokens: 5, completion_tokens: 5 });
    const fleet = await startFleet({ pods: 2, yaml: `
model_list:${deploymentYaml('chat', up.at('fast'), ', rpm: 1000000000, tpm: 1000000000000')}
router_settings: { redis_url: "${redis.url}" }
` });
    try {
      await everyPodReachedRedis(fleet);
      const monitor = await respMonitor(redis.port);
      const started = performance.now();
      const sent = await fleet.spread({ durationMs: 3000 }, { concurrency: 8 }, (pod) => chat(pod, 'chat', { max_tokens: 50 })).finally(() => monitor.close());
      const seconds = (performance.now() - started) / 1000;
      const commands = monitor.total();
      console.info(`[figures] Redis commands per pod and second under load: ${(commands / fleet.pods.length / seconds).toFixed(1)} ${JSON.stringify(Object.fromEntries(monitor.commands()))}`);
      expect(sent.every((s) => s.value?.status === 200)).toBe(true);
      // Enough calls that a give-back per tick (40 a second) would have had something to send at every tick.
      expect(sent.length, 'calls sent').toBeGreaterThan(300);
      // A ping every 200 ms, a cooldown poll every 250 ms, about a give-back a second and a draw every two: 11.5 a second.
      expect(commands / fleet.pods.length / seconds, `${JSON.stringify(Object.fromEntries(monitor.commands()))} from ${fleet.pods.length} pods in ${seconds.toFixed(1)} s`).toBeLessThan(16);
    } finally {
      await fleet.stopAll();
      up.reset();
    }
  });

  it('a Redis Cluster: redis_url names one node, the client follows the slots to the others, and the fleet shares the limit', async () => {
    const cluster = await startRedisCluster(3);
    const rpm = 40;
    const pods = 2;
    const named = cluster.nodes[0] as RedisServer;
    const fleet = await startFleet({ pods, yaml: `
model_list:${deploymentYaml('chat', up.at('east'), `, rpm: ${rpm}`)}
router_settings: { redis_url: "${named.url}", limit_window: ${WINDOW_S} }
` });
    try {
      // The pods' register lives on another node than the one named ({switchyard}'s slot): without the cluster client no ping would pass.
      expect(await cluster.nodeFor('switchyard:{switchyard}:pods')).not.toBe(named);
      await everyPodReachedRedis(fleet);
      const started = performance.now();
      await fleet.spread({ durationMs: 2 * WINDOW_MS }, { concurrency: 8 }, (pod) => chat(pod, 'chat'));
      const calls = up.at('east').calls().filter((c) => c.at >= started);
      // Alone, each pod would admit the whole rpm: 2 × 40 in a window. Shared, the fleet's bound.
      expect(busiestWindow(calls, WINDOW_MS - 150).calls).toBeLessThanOrEqual(rpm * 1.05 + pods);
      expect(inWindow(calls, started + WINDOW_MS, started + 2 * WINDOW_MS).calls, 'a window of steady demand').toBeGreaterThanOrEqual(0.95 * rpm);
      // Each key where its slot is.
      const keys = (await Promise.all(cluster.nodes.map((node) => node.command('KEYS', 'switchyard:*')))).map((k) => (k as string[]).sort());
      const windows = keys.flat().filter((k) => k.endsWith(':window'));
      expect(windows).toHaveLength(1);
      expect(keys[cluster.nodes.indexOf(await cluster.nodeFor(windows[0] as string))]).toContain(windows[0]);
      expect(fleet.events('shared_state').filter((e) => e.line.state === 'degraded' && e.line.reason !== 'not reached yet'), 'no pod lost the cluster').toEqual([]);
    } finally {
      await fleet.stopAll();
      up.reset();
      await cluster.stop();
    }
  });

  it('a Redis user not allowed INFO (an ACL): taken for one server, and the fleet shares the limit through it', async () => {
    await redis.command('ACL', 'SETUSER', 'limited', 'on', '>limited-pw', '~*', '&*', '+@all', '-info');
    const fleet = await startFleet({ pods: 2, yaml: `
model_list:${deploymentYaml('chat', up.at('fast'), ', rpm: 100000')}
router_settings: { redis_url: "redis://limited:limited-pw@127.0.0.1:${redis.port}" }
` });
    try {
      expect(await respCommand(redis.port, ['INFO', 'cluster']), 'the default user may').toMatch(/cluster_enabled:0/);
      // shared_state ok: the pings (the REGISTER script) pass as this user.
      await everyPodReachedRedis(fleet);
      const sent = await fleet.spread({ count: 20 }, { concurrency: 2 }, (pod) => chat(pod, 'chat'));
      expect(sent.every((s) => s.value?.status === 200)).toBe(true);
    } finally {
      await fleet.stopAll();
      up.reset();
      await redis.command('ACL', 'DELUSER', 'limited');
    }
  });

  it('a Redis Cluster node lost mid-load, the others serving on: the pods go on alone at once, no request fails for it', async () => {
    // Without full coverage the cluster keeps serving the slots it still has, and the pods' register may be among them.
    const cluster = await startRedisCluster(3, ['--cluster-require-full-coverage', 'no']);
    const register = await cluster.nodeFor('switchyard:{switchyard}:pods');
    const nodes = await Promise.all(['east', 'west', 'fast'].map(async (id) => ({ id, node: await cluster.nodeFor(`switchyard:{${id}}:window`) })));
    const lost = nodes.find((n) => n.node !== register);
    if (lost === undefined) throw new Error('every window on the register node: no deployment to test with');
    // A slice of 250 calls and an overdraft of 250 per pod: credit runs out within a second or two of the node's loss,
    // then only per-pod limits (10,000 a window each, never reached) keep the calls going.
    const fleet = await startFleet({ pods: 2, yaml: `
model_list:${deploymentYaml('chat', up.at(lost.id), ', rpm: 20000')}
router_settings: { redis_url: "${register.url}", limit_window: ${WINDOW_S} }
` });
    try {
      await everyPodReachedRedis(fleet);
      const load = fleet.spread({ durationMs: 5000 }, { concurrency: 6 }, (pod) => chat(pod, 'chat'));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const killedAt = performance.now();
      await lost.node.kill();
      await until(async () => (await Promise.all(fleet.pods.map(sharedState))).every((s) => s === 'degraded'), 'every pod degraded', 5000);
      const after = performance.now() - killedAt;
      const sent = await load;
      console.info(`[figures] a cluster node lost: every pod degraded ${Math.round(after)} ms later; ${sent.length} calls`);
      expect(sent.filter((s) => s.value?.status !== 200).map((s) => s.value?.status ?? String(s.error)), 'calls that failed').toEqual([]);
      const reasons = fleet.events('shared_state').filter((e) => e.line.state === 'degraded' && e.line.reason !== 'not reached yet').map((e) => String(e.line.reason));
      expect(reasons.length, 'one line per pod').toBe(2);
      for (const reason of reasons) expect(reason).toMatch(/^ping: /);
    } finally {
      await fleet.stopAll();
      up.reset();
      await cluster.stop();
    }
  });

  it('Redis made slow (a delaying proxy): the pods go on alone within 5 s, no request slows; shared again once it is quick', async () => {
    const proxy = await startDelayProxy(redis.port);
    const fleet = await startFleet({ pods: 2, yaml: `
model_list:${deploymentYaml('chat', up.at('fast'), ', rpm: 100000')}
router_settings: { redis_url: "${proxy.url('redis')}" }
` });
    try {
      await everyPodReachedRedis(fleet);
      const load = fleet.spread({ durationMs: 4000 }, { concurrency: 4 }, (pod) => chat(pod, 'chat'));
      proxy.setDelay(150);
      const slowedAt = performance.now();
      await until(async () => (await Promise.all(fleet.pods.map(sharedState))).every((s) => s === 'degraded'), 'every pod degraded', 5000);
      expect(performance.now() - slowedAt).toBeLessThanOrEqual(5000);
      proxy.setDelay(0);
      await until(async () => (await Promise.all(fleet.pods.map(sharedState))).every((s) => s === 'ok'), 'every pod shared again', 10_000);
      const sent = await load;
      expect(sent.filter((s) => s.value?.status !== 200).map((s) => [s.index, s.value?.status, s.error === undefined ? null : String(s.error), Math.round(s.at - slowedAt)])).toEqual([]);
      expectNoWaitOnRedis(sent.map((s) => s.ms));
    } finally {
      await fleet.stopAll();
      await proxy.close();
      up.reset();
    }
  });
});

describe('limits per pod when Redis is lost', () => {
  it('a pod that never reached Redis admits the whole limit; /status says degraded', async () => {
    const up = await startScriptedUpstream(['east']);
    // A port nothing listens on.
    const fleet: Fleet = await startFleet({ pods: 1, yaml: `
model_list:${deploymentYaml('chat', up.at('east'), ', rpm: 5')}
router_settings: { redis_url: "redis://127.0.0.1:9", limit_window: 60 }
` });
    try {
      const pod = fleet.pods[0] as GatewayEndpoint;
      expect(await sharedState(pod)).toBe('degraded');
      const statuses = [];
      for (let i = 0; i < 7; i++) statuses.push((await chat(pod, 'chat')).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
      expect((await pod.fetch('/ready')).status).toBe(200);
    } finally {
      await fleet.stopAll();
      await up.close();
    }
  });
});
