/**
 * CONTRACT.md, Routing for high volume: the deployment state every thread
 * shares (cooldown, half-open, recovery, the lone-deployment rule, caps),
 * the 503 when nothing can serve, the bounds on attempts and time, a client
 * that leaves mid-retry, a reload that keeps state, and what metrics and
 * access lines show of it. Real gateway (two worker threads unless said),
 * scripted deployments over real HTTP.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { TEST_KEY } from './support/gateway.js';
import { deploymentYaml, type Received } from './support/scripted-upstream.js';
import { chat, deploymentStates, startRouted, withRouted, type Routed, type DeploymentState } from './support/routing.js';
import { EARLY_MS, MARGIN_MS, sleep, until } from './support/waits.js';

/**
 * Polls `/status/models/{alias}` until `id` is in `state`; resolves with when it was seen (performance.now()).
 * A cooldown of `ms` that began after `from` and before `to` ends `ms` after: seen between from + ms and to + ms + MARGIN_MS.
 */
async function stateReached(gw: Routed['gw'], alias: string, id: string, state: DeploymentState['state'], withinMs: number): Promise<number> {
  await until(async () => (await deploymentStates(gw, alias))[id]?.state === state, `${id} ${state}`, withinMs);
  return performance.now();
}

/** chat (east, then west) falling back to spare. */
const withSpare = () =>
  startRouted(['east', 'west', 'spare'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', order: 1')}${deploymentYaml('chat', up.at('west'), ', order: 2')}${deploymentYaml('spare', up.at('spare'))}
router_settings: { fallbacks: [{ chat: [spare] }] }
`);

const pair = (router: string, extraEast = '', extraWest = '') => (up: Routed['up']) => `
model_list:${deploymentYaml('chat', up.at('east'), `, order: 1${extraEast}`)}${deploymentYaml('chat', up.at('west'), `, order: 2${extraWest}`)}
router_settings: ${router}
`;


/** How much earlier than the gateway sent it a request's arrival can make an interval look: the first request's connect and send. */
const ARRIVAL_SKEW_MS = 50;
describe('cooldown, half-open and recovery', () => {
  it('a cooled deployment is half-open when its cooldown ends: exactly one call goes through; its success makes it healthy', () =>
    withRouted(startRouted(['east', 'west'], pair('{ allowed_fails: 1, cooldown_time: 0.3 }')), async ({ gw, up }) => {
      up.at('east').script({ kind: 'status', status: 500 });
      const sent = performance.now();
      expect((await chat(gw, 'chat')).routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
      const answered = performance.now();
      expect((await deploymentStates(gw, 'chat')).east?.state).toBe('cooling_down');
      // Half-open when cooldown_time (0.3 s) is over, no sooner.
      const halfOpen = await stateReached(gw, 'chat', 'east', 'half_open', 300 + MARGIN_MS);
      expect(halfOpen - sent).toBeGreaterThanOrEqual(300 - EARLY_MS);
      expect(halfOpen - answered).toBeLessThan(300 + MARGIN_MS);
      // The trial is slow: every call made meanwhile goes to west, on either thread.
      up.at('east').always({ kind: 'ok', latencyMs: 400 });
      up.at('west').always({ kind: 'ok', latencyMs: 100 });
      const answers = await Promise.all(Array.from({ length: 8 }, () => chat(gw, 'chat')));
      expect(answers.filter((a) => a.routing.deployment === 'east')).toHaveLength(1);
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(up.at('east').received).toHaveLength(2);
      expect((await deploymentStates(gw, 'chat')).east).toMatchObject({ state: 'healthy', failures_last_minute: 0 });
      // Healthy again: it takes calls as before (order 1 first).
      expect((await chat(gw, 'chat')).routing.deployment).toBe('east');
    }));

  it("a failed trial cools it again at once; the trial's call still succeeds elsewhere", () =>
    withRouted(startRouted(['east', 'west'], pair('{ allowed_fails: 3, cooldown_time: 0.3 }')), async ({ gw, up }) => {
      up.at('east').script({ kind: 'status', status: 429 });
      const sent = performance.now();
      await chat(gw, 'chat');
      const answered = performance.now();
      const halfOpen = await stateReached(gw, 'chat', 'east', 'half_open', 300 + MARGIN_MS);
      expect(halfOpen - sent).toBeGreaterThanOrEqual(300 - EARLY_MS);
      expect(halfOpen - answered).toBeLessThan(300 + MARGIN_MS);
      up.at('east').script({ kind: 'status', status: 500 });
      // One failure, not allowed_fails (3): a failed trial cools it again by itself, for cooldown_time again.
      const trialSent = performance.now();
      expect((await chat(gw, 'chat')).routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
      const trialAnswered = performance.now();
      const east = (await deploymentStates(gw, 'chat')).east;
      expect(east?.state).toBe('cooling_down');
      expect(east?.cooldown_remaining_ms).toBeGreaterThan(200);
      expect(east?.cooldown_remaining_ms).toBeLessThanOrEqual(300);
      const again = await stateReached(gw, 'chat', 'east', 'half_open', 300 + MARGIN_MS);
      expect(again - trialSent).toBeGreaterThanOrEqual(300 - EARLY_MS);
      expect(again - trialAnswered).toBeLessThan(300 + MARGIN_MS);
      expect((await chat(gw, 'chat')).routing.deployment).toBe('east');
      expect((await deploymentStates(gw, 'chat')).east?.state).toBe('healthy');
    }));

  it('a cooldown on one thread keeps the next picks on every thread off the deployment (GATEWAY_WORKERS=2)', () =>
    withRouted(startRouted(['east', 'west'], pair('{ cooldown_time: 30 }'), { workers: 2 }), async ({ gw, up }) => {
      up.at('east').script({ kind: 'status', status: 429 });
      await chat(gw, 'chat');
      // Slow answers, so the 20 calls are in flight together and the pool spreads them over both threads.
      up.at('west').always({ kind: 'ok', latencyMs: 200 });
      let busiest = 0;
      const watch = setInterval(() => {
        const perWorker = gw.gateway.context.pool.stats().inFlightByWorker;
        busiest = Math.max(busiest, Math.min(...perWorker));
      }, 10);
      const answers = await Promise.all(Array.from({ length: 20 }, () => chat(gw, 'chat')));
      clearInterval(watch);
      expect(busiest, 'both threads had calls in flight at once').toBeGreaterThan(0);
      expect(answers.map((a) => a.routing.deployment)).toEqual(Array.from({ length: 20 }, () => 'west'));
      expect(up.at('east').received).toHaveLength(1);
    }));

  it('GATEWAY_WORKERS=0 (inline) shares the same state: a 429 cools the deployment for the next call', () =>
    withRouted(startRouted(['east', 'west'], pair('{ cooldown_time: 30 }'), { workers: 0 }), async ({ gw, up }) => {
      up.at('east').script({ kind: 'status', status: 429 });
      expect((await chat(gw, 'chat')).routing.deployment).toBe('west');
      expect((await chat(gw, 'chat')).routing).toEqual({ deployment: 'west', attempts: '1', fallback: null });
      expect(up.at('east').received).toHaveLength(1);
      expect((await deploymentStates(gw, 'chat')).east?.state).toBe('cooling_down');
    }));
});

describe('the lone deployment and the 503', () => {
  it('a group of one deployment and no fallbacks is never cooled: every call reaches it, its failures reach the caller', () =>
    withRouted(
      startRouted(['solo'], (up) => `
model_list:${deploymentYaml('solo', up.at('solo'))}
router_settings: { allowed_fails: 1, num_retries: 0 }
`),
      async ({ gw, up }) => {
        up.at('solo').always({ kind: 'status', status: 429 });
        for (let i = 0; i < 5; i++) expect((await chat(gw, 'solo')).status).toBe(429);
        expect(up.at('solo').received).toHaveLength(5);
        expect((await deploymentStates(gw, 'solo')).solo).toMatchObject({ state: 'healthy', last_error: { code: 'rate_limited', status: 429 } });
      },
    ));

  it('one deployment with a fallback group is cooled like any other', () =>
    withRouted(
      startRouted(['solo', 'spare'], (up) => `
model_list:${deploymentYaml('solo', up.at('solo'))}${deploymentYaml('spare', up.at('spare'))}
router_settings: { fallbacks: [{ solo: [spare] }] }
`),
      async ({ gw, up }) => {
        up.at('solo').script({ kind: 'status', status: 429 });
        expect((await chat(gw, 'solo')).routing).toEqual({ deployment: 'spare', attempts: '2', fallback: 'spare' });
        expect((await deploymentStates(gw, 'solo')).solo?.state).toBe('cooling_down');
        expect((await chat(gw, 'solo')).routing).toEqual({ deployment: 'spare', attempts: '1', fallback: 'spare' });
      },
    ));

  it('every deployment of the group and its fallbacks cooling: 503 no_deployment_available at once, Retry-After to the soonest end', () =>
    withRouted(startRouted(['east', 'west'], pair('{ cooldown_time: 1 }')), async ({ gw, up }) => {
      up.at('east').always({ kind: 'status', status: 429, retryAfter: '20' });
      up.at('west').always({ kind: 'status', status: 429, retryAfter: '5' });
      // The last failure while something could still be tried: the provider's 429.
      expect((await chat(gw, 'chat')).status).toBe(429);
      const t0 = performance.now();
      const answer = await chat(gw, 'chat');
      expect(performance.now() - t0).toBeLessThan(MARGIN_MS);
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.text).error.code).toBe('no_deployment_available');
      expect(answer.headers.get('retry-after')).toMatch(/^[45]$/);
      expect(answer.routing).toEqual({ deployment: null, attempts: '0', fallback: null });
      expect(up.total()).toBe(2);
    }));
});

describe('bounds', () => {
  it('num_retries bounds the attempts over the group and its fallbacks', () =>
    withRouted(
      startRouted(['a', 'b', 'c', 'd'], (up) => `
model_list:${deploymentYaml('chat', up.at('a'))}${deploymentYaml('chat', up.at('b'))}${deploymentYaml('chat', up.at('c'))}${deploymentYaml('spare', up.at('d'))}
router_settings: { num_retries: 1, fallbacks: [{ chat: [spare] }] }
`),
      async ({ gw, up }) => {
        for (const d of up.deployments) d.always({ kind: 'status', status: 500 });
        const answer = await chat(gw, 'chat');
        expect(answer.status).toBe(502);
        expect(answer.routing.attempts).toBe('2');
        expect(up.total()).toBe(2);
      },
    ));

  it("router_settings.timeout bounds the whole request: 502 upstream_timeout, the attempt's upstream request aborted, no further attempt", () =>
    withRouted(startRouted(['east', 'west'], pair('{ timeout: 0.8 }')), async ({ gw, up }) => {
      up.at('east').always({ kind: 'hang' });
      const t0 = performance.now();
      const answer = await chat(gw, 'chat');
      const elapsed = performance.now() - t0;
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text).error.code).toBe('upstream_timeout');
      expect(elapsed).toBeGreaterThanOrEqual(800 - EARLY_MS);
      expect(elapsed).toBeLessThan(800 + MARGIN_MS);
      await up.waitFor(() => up.at('east').aborted() === 1, MARGIN_MS);
      expect(up.at('west').received).toHaveLength(0);
    }));

  it("the default timeout is the largest of the first group's deployments' timeouts; each attempt is bounded by what is left", () =>
    withRouted(startRouted(['east', 'west'], pair('{}', ', timeout: 0.4', ', timeout: 0.9')), async ({ gw, up }) => {
      up.at('east').always({ kind: 'hang' });
      up.at('west').always({ kind: 'hang' });
      const t0 = performance.now();
      const answer = await chat(gw, 'chat');
      const elapsed = performance.now() - t0;
      // east times out at 0.4 s, west gets what is left of 0.9 s.
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text).error.code).toBe('upstream_timeout');
      expect(answer.routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
      expect(elapsed).toBeGreaterThanOrEqual(900 - EARLY_MS);
      expect(elapsed).toBeLessThan(900 + MARGIN_MS);
      // west's attempt began when east's 0.4 s were over. Both times are arrivals at the fakes, so east's own connect and
      // send (a fresh connection, on a loaded host tens of ms) comes off the interval: 50 ms is allowed for it.
      const westAfterEast = (up.at('west').received[0]?.at as number) - (up.at('east').received[0]?.at as number);
      expect(westAfterEast).toBeGreaterThanOrEqual(400 - ARRIVAL_SKEW_MS);
      expect(westAfterEast).toBeLessThan(400 + MARGIN_MS);
    }));

  it('retry_after spaces two attempts on the same deployment', () =>
    withRouted(
      startRouted(['solo'], (up) => `
model_list:${deploymentYaml('solo', up.at('solo'))}
router_settings: { retry_after: 0.4 }
`),
      async ({ gw, up }) => {
        up.at('solo').script({ kind: 'status', status: 500 });
        const answer = await chat(gw, 'solo');
        expect(answer.status).toBe(200);
        expect(answer.routing.attempts).toBe('2');
        // The second attempt reached the deployment retry_after (0.4 s) after the first.
        const [first, second] = up.at('solo').received as [Received, Received];
        expect(second.at - first.at).toBeGreaterThanOrEqual(400 - EARLY_MS);
        expect(second.at - first.at).toBeLessThan(400 + MARGIN_MS);
      },
    ));
});

describe('a client that leaves', () => {
  it('during a retry: the attempt under way is aborted upstream and nothing further is tried', () =>
    withRouted(
      withSpare(),
      async ({ gw, up }) => {
        up.at('east').script({ kind: 'status', status: 500 });
        up.at('west').always({ kind: 'hang' });
        const leave = new AbortController();
        const pending = chat(gw, 'chat', {}, { signal: leave.signal }).catch(() => null);
        await up.waitFor(() => up.at('west').received.length === 1);
        leave.abort();
        await pending;
        await up.waitFor(() => up.at('west').aborted() === 1);
        // Nothing to wait on (the point is that nothing further is tried): a fallback to spare would go at once, within a
        // loopback round trip (no retry_after between deployments).
        await sleep(100);
        expect(up.total()).toBe(2);
        await up.waitFor(() => gw.gateway.context.pool.stats().inFlight === 0);
        expect((await deploymentStates(gw, 'chat')).west?.in_flight).toBe(0);
      },
    ));

  it('while waiting retry_after: no further attempt', () =>
    withRouted(
      startRouted(['solo'], (up) => `
model_list:${deploymentYaml('solo', up.at('solo'))}
router_settings: { retry_after: 0.4 }
`),
      async ({ gw, up }) => {
        up.at('solo').always({ kind: 'status', status: 500 });
        const leave = new AbortController();
        const pending = chat(gw, 'solo', {}, { signal: leave.signal }).catch(() => null);
        // Its 500 answered: the gateway waits retry_after before the next attempt, and the client leaves meanwhile.
        await up.waitFor(() => up.at('solo').received[0]?.done === true);
        leave.abort();
        await pending;
        // Nothing to wait on (the point is that no attempt comes): wait out retry_after from the first attempt, and a margin.
        await sleep((up.at('solo').received[0]?.at as number) + 400 + MARGIN_MS - performance.now());
        expect(up.at('solo').received).toHaveLength(1);
      },
    ));
});

describe('max_parallel_requests', () => {
  it('is never exceeded in the pod; past every cap the answer is 503 no_deployment_available', () =>
    withRouted(
      startRouted(['east', 'west'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', max_parallel_requests: 2')}${deploymentYaml('chat', up.at('west'), ', max_parallel_requests: 3')}
router_settings: { routing_strategy: least-busy }
`),
      async ({ gw, up }) => {
        for (const d of up.deployments) d.always({ kind: 'ok', latencyMs: 400 });
        const answers = await Promise.all(Array.from({ length: 12 }, () => chat(gw, 'chat')));
        expect(up.at('east').maxInFlight()).toBeLessThanOrEqual(2);
        expect(up.at('west').maxInFlight()).toBeLessThanOrEqual(3);
        const served = answers.filter((a) => a.status === 200);
        expect(served.length).toBeGreaterThanOrEqual(5);
        for (const a of answers.filter((x) => x.status !== 200)) {
          expect(a.status).toBe(503);
          expect(JSON.parse(a.text).error.code).toBe('no_deployment_available');
          expect(a.headers.get('retry-after')).toBe('1');
        }
        // Places are given back: all of them serve again.
        await up.waitFor(() => up.at('east').inFlight() + up.at('west').inFlight() === 0);
        const again = await Promise.all(Array.from({ length: 5 }, () => chat(gw, 'chat')));
        expect(again.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      },
    ));
});

describe('reload', () => {
  it('keeps the state of every deployment whose id survives; a new id starts fresh; in-flight counts stay coherent', () =>
    withRouted(startRouted(['east', 'west', 'south'], pair('{ cooldown_time: 60 }')), async ({ gw, up }) => {
      up.at('east').script({ kind: 'status', status: 429 });
      await chat(gw, 'chat');
      up.at('west').always({ kind: 'hang' });
      const leave = new AbortController();
      const held = chat(gw, 'chat', {}, { signal: leave.signal }).catch(() => null);
      await up.waitFor(() => up.at('west').inFlight() === 1);
      expect((await deploymentStates(gw, 'chat')).west?.in_flight).toBe(1);

      const next = `
model_list:${deploymentYaml('chat', up.at('east'), ', order: 1')}${deploymentYaml('chat', up.at('west'), ', order: 2')}${deploymentYaml('chat', up.at('south'), ', order: 3')}
router_settings: { cooldown_time: 60 }
`;
      gw.gateway.reload(parseConfig(next, 'reloaded.yaml', { GATEWAY_API_KEY: TEST_KEY, HOST: '127.0.0.1', PORT: '0', GATEWAY_WORKERS: '2' }, 2));
      const after = await deploymentStates(gw, 'chat');
      expect(after.east?.state).toBe('cooling_down');
      expect(after.east?.cooldown_remaining_ms).toBeGreaterThan(50_000);
      expect(after.west?.in_flight).toBe(1);
      expect(after.south).toMatchObject({ state: 'healthy', in_flight: 0, latency_ewma_ms: null, last_error: null });
      leave.abort();
      await held;
      await up.waitFor(() => up.at('west').aborted() === 1);
      await until(async () => (await deploymentStates(gw, 'chat')).west?.in_flight === 0, 'west given back its place', MARGIN_MS);
      // east still cooling, west hanging on: the new deployment serves.
      up.at('west').always({ kind: 'status', status: 500 });
      expect((await chat(gw, 'chat')).routing).toEqual({ deployment: 'south', attempts: '2', fallback: null });
    }));
});

describe('what shows', () => {
  it('metrics: deployment state, cooldowns, retries and fallbacks; access lines: deployment, attempts, fallback', () =>
    withRouted(
      withSpare(),
      async ({ gw, up }) => {
        up.at('east').script({ kind: 'status', status: 429 });
        up.at('west').script({ kind: 'status', status: 500 });
        const answer = await chat(gw, 'chat', {}, { headers: { 'x-request-id': 'routed-1' } });
        expect(answer.routing).toEqual({ deployment: 'spare', attempts: '3', fallback: 'spare' });
        const text = await (await gw.fetch('/metrics', { auth: false })).text();
        expect(text).toContain('switchyard_deployment_state{model="chat",deployment="east"} 2');
        expect(text).toContain('switchyard_deployment_state{model="chat",deployment="west"} 0');
        expect(text).toContain('switchyard_cooldowns_total{model="chat",deployment="east"} 1');
        expect(text).toContain('switchyard_cooldowns_total{model="chat",deployment="west"} 0');
        expect(text).toContain('switchyard_retries_total{model="chat"} 2');
        expect(text).toContain('switchyard_fallbacks_total{model="chat",fallback="spare"} 1');
        await up.waitFor(() => gw.logs().some((l) => l.request_id === 'routed-1'));
        const line = gw.logs().find((l) => l.request_id === 'routed-1');
        expect(line).toMatchObject({ event: 'access', model: 'chat', status: 200, deployment: 'spare', attempts: 3, fallback: 'spare' });
        const cooled = gw.logs().find((l) => l.event === 'deployment_cooled');
        expect(cooled).toMatchObject({ model: 'chat', deployment: 'east', code: 'rate_limited', status: 429 });
      },
    ));
});
