/**
 * CONTRACT.md, Strategies: simple-shuffle by weight within the lowest
 * usable order, least-busy by calls in flight in the whole pod,
 * latency-based-routing to the lowest latency average after trying every
 * deployment once. Real gateway with two worker threads, scripted
 * deployments over real HTTP.
 */
import { describe, expect, it } from 'vitest';
import { deploymentYaml } from './support/scripted-upstream.js';
import { chat, startRouted, withRouted } from './support/routing.js';

describe('routing strategies', () => {
  it('simple-shuffle: shares by weight (3:1) within a binomial tolerance; a higher order takes nothing while the lower one can serve', () =>
    withRouted(
      startRouted(['heavy', 'light', 'reserve'], (up) => `
model_list:${deploymentYaml('chat', up.at('heavy'), ', weight: 3')}${deploymentYaml('chat', up.at('light'), ', weight: 1')}${deploymentYaml('chat', up.at('reserve'), ', weight: 100, order: 2')}
`),
      async ({ gw, up }) => {
        const n = 400;
        for (let sent = 0; sent < n; sent += 20) await Promise.all(Array.from({ length: 20 }, () => chat(gw, 'chat')));
        const heavy = up.at('heavy').received.length;
        // Binomial(400, 3/4): mean 300, sd 8.7; 4.5 sd either side fails a correct router about once in 150,000 runs.
        expect(heavy + up.at('light').received.length).toBe(n);
        expect(Math.abs(heavy - 300)).toBeLessThanOrEqual(39);
        expect(up.at('reserve').received).toHaveLength(0);
      },
    ));

  it('least-busy: each call goes to the deployment with the fewest calls in flight in the pod, whichever thread picks', () =>
    withRouted(
      startRouted(['a', 'b', 'c'], (up) => `
model_list:${deploymentYaml('chat', up.at('a'))}${deploymentYaml('chat', up.at('b'))}${deploymentYaml('chat', up.at('c'))}
router_settings: { routing_strategy: least-busy }
`),
      async ({ gw, up }) => {
        for (const d of up.deployments) d.always({ kind: 'hang' });
        const leave = new AbortController();
        const pending: Array<Promise<unknown>> = [];
        // One at a time, each once the last is in flight upstream: the pool alternates threads, so every other
        // pick is made on the other thread, and only pod-wide counts give 3/3/3.
        for (let i = 1; i <= 9; i++) {
          pending.push(chat(gw, 'chat', {}, { signal: leave.signal }).catch(() => null));
          await up.waitFor(() => up.total() === i && up.deployments.reduce((s, d) => s + d.inFlight(), 0) === i);
        }
        expect(up.deployments.map((d) => d.inFlight())).toEqual([3, 3, 3]);
        leave.abort();
        await Promise.all(pending);
      },
    ));

  it('latency-based-routing: a deployment with no sample is tried first, then the fastest takes the calls', () =>
    withRouted(
      startRouted(['fast', 'slow'], (up) => `
model_list:${deploymentYaml('chat', up.at('slow'))}${deploymentYaml('chat', up.at('fast'))}
router_settings: { routing_strategy: latency-based-routing }
`),
      async ({ gw, up }) => {
        up.at('fast').always({ kind: 'ok', latencyMs: 10 });
        up.at('slow').always({ kind: 'ok', latencyMs: 250 });
        for (let i = 0; i < 12; i++) await chat(gw, 'chat');
        expect(up.at('slow').received).toHaveLength(1);
        expect(up.at('fast').received).toHaveLength(11);
        const status = (await (await gw.fetch('/status/models/chat')).json()) as { deployments: Array<{ id: string; latency_ewma_ms: number }> };
        const latency = Object.fromEntries(status.deployments.map((d) => [d.id, d.latency_ewma_ms]));
        expect(latency.slow).toBeGreaterThan(200);
        expect(latency.fast).toBeLessThan(latency.slow as number);
      },
    ));
});
