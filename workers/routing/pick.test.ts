/**
 * The inference-aware pick (CONTRACT.md, Inference-aware routing for
 * self-hosted servers, Pick and Shedding) on the real shared state and real
 * prefix indexes: the worked example of docs/ROUTING.md, the filters, the
 * between-scrapes correction, ties, least-busy with no metrics, shedding, and
 * a property: never a filtered replica while an unfiltered one is usable.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AliasRoute, InferenceRouting, RouterSettings, RoutingConfig } from '../../protocol/config.js';
import { DeploymentStates, deploymentStateMemory } from '../../protocol/deployment-state.js';
import { PrefixIndex, prefixIndexMemory } from '../../protocol/prefix-index.js';
import { Router, type Deployment, type Group } from '../router.js';
import { pick, pickResult, type PickResult } from './pick.js';

const NOW = 1_800_000_000_000;
const INFERENCE: InferenceRouting = { metricsIntervalMs: 250, staleAfterMs: 2_000, weights: { prefix: 3, queue: 2, kvCache: 2 }, queueThreshold: 5, kvCacheThreshold: 0.8, prefixBlockChars: 64, prefixIndexBlocks: 1024 };
const timeouts = { connectMs: 1000, headersMs: 60_000, idleMs: 60_000, totalMs: 60_000 };

function settings(inference: InferenceRouting = INFERENCE): RouterSettings {
  return { strategy: 'inference-aware', numRetries: 2, retryAfterMs: 0, allowedFails: 3, cooldownMs: 30_000, fallbacks: [], contextWindowFallbacks: [], streamCommitTimeoutMs: 10_000, maxRetryWaitMs: 10_000, timeoutMs: null, limitWindowMs: 60_000, inference };
}

/** A group `llama` of `n` replicas (r0…), each with server_metrics unless listed in `plain`, over fresh shared state. */
function fleet(n: number, plain: readonly number[] = []) {
  const aliases: AliasRoute[] = Array.from({ length: n }, (_, i) => ({
    alias: 'llama',
    id: `r${i}`,
    weight: 1,
    order: 1,
    maxParallel: 0,
    provider: 'openai',
    upstreamModel: 'm',
    apiBase: `http://10.0.0.${i}:8000/v1`,
    credentials: { kind: 'not_required' },
    responsesApi: false,
    timeouts,
    settings: {},
    dropParams: false,
    serverMetrics: plain.includes(i) ? null : 'vllm',
    rpm: 0,
    tpm: 0,
    replica: null,
    connectTo: null,
  }));
  const routing: RoutingConfig = { version: 1, aliases, slots: aliases.map((_, i) => i), replicaSets: [], rules: [], router: settings(), maxResponseBodyBytes: 1 << 20 };
  const indexes = new Map(aliases.map((a) => [a.id, new PrefixIndex(prefixIndexMemory(1024), 0)]));
  const group = new Router(routing, null, (id) => indexes.get(id) ?? null).resolve('llama');
  const states = new DeploymentStates(deploymentStateMemory(16, 1), 0);
  return { group, states, index: (i: number) => indexes.get(`r${i}`) as PrefixIndex };
}

/** Picks and gives the reservation straight back (a call that ended), so the next pick sees the same load. */
function pickOnce(group: Group, states: DeploymentStates, out: PickResult, s: RouterSettings = settings(), now = NOW): Deployment | null {
  const d = pick(group, states, s, now, null, out);
  if (d !== null) {
    states.release(d.slot, out.reservation);
    states.sentDone(d.slot, out.generation);
  }
  return d;
}

const blocks = (...hashes: number[]) => Int32Array.from(hashes);

describe('inference-aware pick', () => {
  it("docs/ROUTING.md's worked example: a replica holding most of the prompt wins over an idler one holding none", () => {
    const { group, states, index } = fleet(3);
    // r0: 2 waiting, 4 running, KV 0.50, holds 3 of the prompt's 4 blocks.
    // r1: 0 waiting, 1 running, KV 0.20, holds none.
    // r2: 6 waiting: saturated (queue estimate ≥ 5), left out.
    states.scraped(0, 2, 4, 0.5, NOW - 100);
    states.scraped(1, 0, 1, 0.2, NOW - 100);
    states.scraped(2, 6, 4, 0.3, NOW - 100);
    index(0).insert(blocks(11, 12, 13), 3);
    const out = pickResult(blocks(11, 12, 13, 14), false);
    // Loads: r0 2 + max(4, 0) + 0 = 6, r1 0 + 1 + 0 = 1; queue scores 0 and 1.
    // r0: 3·0.75 + 2·0 + 2·0.5 = 3.25; r1: 3·0 + 2·1 + 2·0.8 = 3.6 → r1.
    expect(pickOnce(group, states, out)?.id).toBe('r1');
    expect([out.reason, out.ratio]).toEqual(['load', 0]);
    // r1 now holds that prompt (filled at the pick). Another prompt that r0 holds whole: 3·1 + 0 + 1 = 4 > 3.6 → r0, for its prefix.
    expect(index(1).score(blocks(11, 12, 13, 14), 4)).toBe(1);
    index(0).insert(blocks(21, 22, 23, 24), 4);
    const again = pickResult(blocks(21, 22, 23, 24), false);
    expect(pickOnce(group, states, again)?.id).toBe('r0');
    expect([again.reason, again.ratio]).toEqual(['prefix', 1]);
  });

  it('the chosen replica gets the prompt in its index at the pick, and its call counts as sent since the scrape until it ends', () => {
    const { group, states, index } = fleet(2);
    states.scraped(0, 0, 0, 0, NOW);
    states.scraped(1, 0, 0, 0, NOW);
    const out = pickResult(blocks(5, 6, 7), false);
    const d = pick(group, states, settings(), NOW, null, out) as Deployment;
    expect(index(d.slot).score(blocks(5, 6, 7), 3)).toBe(1);
    expect(index(1 - d.slot).size()).toBe(0);
    expect(states.sentSinceScrape(d.slot)).toBe(1);
    states.release(d.slot, out.reservation);
    states.sentDone(d.slot, out.generation);
    expect(states.sentSinceScrape(d.slot)).toBe(0);
  });

  it('a burst between two scrapes spreads: each call sent since the scrape counts in the queue and the load', () => {
    const { group, states } = fleet(4);
    for (let i = 0; i < 4; i++) states.scraped(i, 0, 0, 0.1, NOW);
    const counts = [0, 0, 0, 0];
    // 12 calls, none ended, no scrape in between: 3 each.
    for (let k = 0; k < 12; k++) {
      const slot = (pick(group, states, settings(), NOW, null, pickResult(null, false)) as Deployment).slot;
      counts[slot] = (counts[slot] as number) + 1;
    }
    expect(counts).toEqual([3, 3, 3, 3]);
    // 3 sent since the scrape each, under the queue threshold of 5; two more each make every replica saturated.
    for (let k = 0; k < 8; k++) pick(group, states, settings(), NOW, null, pickResult(null, false));
    const shed = pickResult(null, true);
    expect(pick(group, states, settings(), NOW, null, shed)).toBeNull();
    expect(shed.shed).toBe(true);
  });

  it('KV-cache use at the threshold saturates; below it, a lower use scores better', () => {
    const { group, states } = fleet(3);
    states.scraped(0, 0, 0, 0.8, NOW);
    states.scraped(1, 0, 0, 0.6, NOW);
    states.scraped(2, 0, 0, 0.1, NOW);
    const seen = new Set<string>();
    for (let k = 0; k < 6; k++) seen.add((pickOnce(group, states, pickResult(null, false)) as Deployment).id);
    expect([...seen]).toEqual(['r2']);
  });

  it('stale metrics (older than max(2 s, 3 intervals)) leave a replica out while another is fresh', () => {
    const { group, states } = fleet(2);
    states.scraped(0, 0, 0, 0, NOW - 2_001);
    states.scraped(1, 4, 9, 0.7, NOW);
    for (let k = 0; k < 4; k++) expect(pickOnce(group, states, pickResult(null, false))?.id).toBe('r1');
    // Exactly at the bound it is still fresh, and idler.
    states.scraped(0, 0, 0, 0, NOW - 2_000);
    expect(pickOnce(group, states, pickResult(null, false))?.id).toBe('r0');
  });

  it('ties spread: equal replicas take turns', () => {
    const { group, states } = fleet(3);
    for (let i = 0; i < 3; i++) states.scraped(i, 1, 2, 0.3, NOW);
    const ids = Array.from({ length: 6 }, () => (pickOnce(group, states, pickResult(null, false)) as Deployment).id);
    expect(new Set(ids.slice(0, 3)).size).toBe(3);
    expect(new Set(ids.slice(3)).size).toBe(3);
  });

  it('no metrics anywhere: least-busy by this pod’s calls in flight, the prefix score still counting', () => {
    const { group, states, index } = fleet(3);
    const busy = pickResult(null, false);
    const first = pick(group, states, settings(), NOW, null, busy) as Deployment;
    expect(busy.reason).toBe('no_metrics');
    const second = pick(group, states, settings(), NOW, null, pickResult(null, false)) as Deployment;
    expect(second.slot).not.toBe(first.slot);
    const third = pickResult(null, false);
    const idle = pick(group, states, settings(), NOW, null, third) as Deployment;
    expect(new Set([first.slot, second.slot, idle.slot]).size).toBe(3);
    // Every replica has one in flight; the one holding the prompt wins on its prefix.
    index(1).insert(blocks(1, 2), 2);
    const affine = pickResult(blocks(1, 2), false);
    expect(pickOnce(group, states, affine)?.id).toBe('r1');
    expect([affine.reason, affine.ratio]).toEqual(['no_metrics', 1]);
  });

  it('all saturated: a normal request still goes to the best of them; a sheddable one is shed, and nothing is reserved for it', () => {
    const { group, states } = fleet(2);
    states.scraped(0, 9, 4, 0.9, NOW);
    states.scraped(1, 5, 4, 0.5, NOW);
    const normal = pickResult(null, false);
    expect(pickOnce(group, states, normal)?.id).toBe('r1');
    expect(normal.reason).toBe('all_saturated');
    const shed = pickResult(null, true);
    expect(pick(group, states, settings(), NOW, null, shed)).toBeNull();
    expect(shed.shed).toBe(true);
    expect([states.inFlight(0), states.inFlight(1), states.sentSinceScrape(0), states.sentSinceScrape(1)]).toEqual([0, 0, 0, 0]);
    // One replica stale and the other saturated: every fresh one is saturated, so shedding applies too.
    states.scraped(0, 0, 0, 0, NOW - 10_000);
    expect(pick(group, states, settings(), NOW, null, pickResult(null, true))).toBeNull();
    // None fresh: nothing is known to be saturated, so nothing is shed.
    states.scraped(1, 9, 9, 0.9, NOW - 10_000);
    expect(pickOnce(group, states, pickResult(null, true))).not.toBeNull();
  });

  it('a deployment failed by this request is avoided while another is usable (retries move to another replica)', () => {
    const { group, states, index } = fleet(2);
    states.scraped(0, 0, 0, 0, NOW);
    states.scraped(1, 0, 0, 0, NOW);
    index(0).insert(blocks(3, 4), 2);
    const failed = [group.deployments[0] as Deployment];
    expect(pick(group, states, settings(), NOW, failed, pickResult(blocks(3, 4), false))?.id).toBe('r1');
  });

  it('property: never a saturated or stale replica while an unsaturated fresh one is usable; a sheddable request is shed exactly when every fresh one is saturated', () => {
    const replica = fc.record({ waiting: fc.integer({ min: 0, max: 9 }), running: fc.integer({ min: 0, max: 9 }), kv: fc.double({ min: 0, max: 1, noNaN: true }), ageMs: fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 2_001, max: 60_000 }), fc.constant(-1)), inFlight: fc.integer({ min: 0, max: 4 }), cooling: fc.boolean(), held: fc.integer({ min: 0, max: 4 }) });
    fc.assert(
      fc.property(fc.array(replica, { minLength: 1, maxLength: 6 }), fc.boolean(), (replicas, sheddable) => {
        const { group, states, index } = fleet(replicas.length);
        replicas.forEach((r, i) => {
          if (r.ageMs >= 0) states.scraped(i, r.waiting, r.running, r.kv, NOW - r.ageMs);
          for (let k = 0; k < r.inFlight; k++) states.reserve(i, NOW, 0);
          if (r.cooling) states.fail(i, 1, { code: 'upstream_error', status: 500, coolNow: true, cooldownMs: 10_000, allowedFails: 1, lone: false }, NOW);
          if (r.held > 0) index(i).insert(blocks(1, 2, 3, 4).subarray(0, r.held), r.held);
        });
        const usable = replicas.map((r) => !r.cooling);
        const fresh = replicas.map((r) => r.ageMs >= 0 && r.ageMs <= 2_000);
        const open = replicas.map((r, i) => usable[i] && fresh[i] && r.waiting < 5 && r.kv < 0.8);
        const anyFreshUsable = replicas.some((_, i) => usable[i] && fresh[i]);
        const out = pickResult(blocks(1, 2, 3, 4), sheddable);
        const d = pick(group, states, settings(), NOW, null, out);
        if (!usable.some(Boolean)) return d === null && !out.shed;
        if (open.some(Boolean)) return d !== null && open[d.slot] === true;
        if (anyFreshUsable && sheddable) return d === null && out.shed;
        return d !== null && usable[d.slot] === true && out.reason === (anyFreshUsable ? 'all_saturated' : 'no_metrics');
      }),
      { numRuns: 500, seed: 36 },
    );
  });

  it('a group without server_metrics routes least-busy under inference-aware, with no index, no count and no reason', () => {
    const { group, states } = fleet(2, [0, 1]);
    expect(group.inference).toBe(false);
    expect(group.hashesPrompt).toBe(false);
    const out = pickResult(null, true);
    const first = pick(group, states, settings(), NOW, null, out) as Deployment;
    expect([out.reason, out.shed, states.sentSinceScrape(first.slot)]).toEqual([null, false, 0]);
    const second = pick(group, states, settings(), NOW, null, pickResult(null, false)) as Deployment;
    expect(second.slot).not.toBe(first.slot);
  });
});
