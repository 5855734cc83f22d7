/**
 * The front's keeper of scrapers and prefix indexes across config swaps
 * (src/inference/fleet.ts): keyed by deployment id like the state slots, an
 * id that survives keeps its index memory (so its entries) and its scraper,
 * a new id gets both, a gone id loses both; a changed block size or bound
 * makes the index again; a dead worker's lock is taken back; the status
 * figures read the shared slot.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AliasRoute, InferenceRouting, RoutingConfig } from '../../protocol/config.js';
import { DeploymentStates, deploymentStateMemory } from '../../protocol/deployment-state.js';
import { PrefixIndex } from '../../protocol/prefix-index.js';
import { InferenceFleet } from './fleet.js';

const INFERENCE: InferenceRouting = { metricsIntervalMs: 60_000, staleAfterMs: 180_000, weights: { prefix: 3, queue: 2, kvCache: 2 }, queueThreshold: 5, kvCacheThreshold: 0.8, prefixBlockChars: 64, prefixIndexBlocks: 128 };
const timeouts = { connectMs: 1000, headersMs: 60_000, idleMs: 60_000, totalMs: 60_000 };

/** Deployments by id (port 9 on loopback: nothing listens, each scrape fails at once), each with its slot. */
function routing(ids: ReadonlyArray<readonly [string, number, 'vllm' | 'sglang' | null]>, inference: Partial<InferenceRouting> = {}, base = 'http://127.0.0.1:9'): RoutingConfig {
  const aliases: AliasRoute[] = ids.map(([id, , kind]) => ({ alias: 'llama', id, weight: 1, order: 1, maxParallel: 0, provider: 'openai', upstreamModel: 'm', apiBase: `${base}/v1`, credentials: { kind: 'not_required' }, responsesApi: false, timeouts, settings: {}, dropParams: false, serverMetrics: kind, rpm: 0, tpm: 0, replica: null, connectTo: null }));
  return {
    version: 1,
    aliases,
    slots: ids.map(([, slot]) => slot),
    replicaSets: [],
    rules: [],
    maxResponseBodyBytes: 1 << 20,
    router: { strategy: 'inference-aware', numRetries: 2, retryAfterMs: 0, allowedFails: 3, cooldownMs: 30_000, fallbacks: [], contextWindowFallbacks: [], streamCommitTimeoutMs: 10_000, maxRetryWaitMs: 10_000, timeoutMs: null, limitWindowMs: 60_000, inference: { ...INFERENCE, ...inference } },
  };
}

const fleets: InferenceFleet[] = [];
afterEach(() => {
  for (const f of fleets.splice(0)) f.close();
});

function fleet() {
  const states = new DeploymentStates(deploymentStateMemory(8, 2), 0);
  const f = new InferenceFleet(states);
  fleets.push(f);
  return { f, states };
}

describe('InferenceFleet', () => {
  it('one index and one scraper per deployment with server_metrics; none for the others', () => {
    const { f } = fleet();
    const grant = f.assign(routing([['a', 0, 'vllm'], ['b', 1, 'sglang'], ['plain', 2, null]]));
    expect(Object.keys(grant).sort()).toEqual(['a', 'b']);
    expect(grant.a?.blocks).toBe(128);
    expect(f.scraperOf('a')?.target).toMatchObject({ url: 'http://127.0.0.1:9/metrics', kind: 'vllm', slot: 0, intervalMs: 60_000 });
    expect(f.scraperOf('plain')).toBeNull();
    expect(f.inferenceFigures('plain')).toBeNull();
    expect(f.grant).toBe(grant);
  });

  it('a swap keeps the memory (and entries) of surviving ids, makes new ones, drops gone ones', () => {
    const { f } = fleet();
    const first = f.assign(routing([['a', 0, 'vllm'], ['b', 1, 'vllm']]));
    const worker = new PrefixIndex(first.a as NonNullable<typeof first.a>, 1);
    worker.insert(Int32Array.of(7, 8, 9), 3);
    const scraperA = f.scraperOf('a');
    const second = f.assign(routing([['a', 0, 'vllm'], ['c', 2, 'vllm']]));
    expect(second.a).toBe(first.a);
    expect(second.c).toBeDefined();
    expect(second.b).toBeUndefined();
    expect(f.scraperOf('a')).toBe(scraperA);
    expect(f.scraperOf('b')).toBeNull();
    expect(f.inferenceFigures('a')?.prefix_index_entries).toBe(3);
    expect(f.inferenceFigures('c')?.prefix_index_entries).toBe(0);
    expect(f.inferenceFigures('b')).toBeNull();
  });

  it('another block size or bound makes the index again, empty; another address restarts the scraper, its failures counted on', async () => {
    const { f } = fleet();
    const first = f.assign(routing([['a', 0, 'vllm']]));
    const scraper = f.scraperOf('a');
    await scraper?.next();
    expect(scraper?.failures).toBe(1);
    const resized = f.assign(routing([['a', 0, 'vllm']], { prefixIndexBlocks: 256 }));
    expect(resized.a).not.toBe(first.a);
    expect(resized.a?.blocks).toBe(256);
    expect(f.scraperOf('a')?.failures).toBe(1);
    const moved = f.assign(routing([['a', 0, 'vllm']], { prefixIndexBlocks: 256 }, 'http://127.0.0.1:19'));
    expect(moved.a).toBe(resized.a);
    expect(f.scraperOf('a')?.target.url).toBe('http://127.0.0.1:19/metrics');
    await f.scraperOf('a')?.next();
    // The first loop's failure, the resized one's first, the moved one's first: the count never goes back.
    expect(f.scrapeFailures()).toEqual([{ model: 'llama', replica: 'a', failures: expect.any(Number) as number }]);
    expect(f.scrapeFailures()[0]?.failures).toBeGreaterThanOrEqual(2);
  });

  it('status figures read the shared slot: null before a good scrape, then the scrape and its age', () => {
    const { f, states } = fleet();
    f.assign(routing([['a', 3, 'vllm']]));
    expect(f.inferenceFigures('a', 10_000)).toEqual({ waiting: null, running: null, kv_cache: null, metrics_age_ms: null, prefix_index_entries: 0 });
    states.scraped(3, 2, 5, 0.25, 9_000);
    expect(f.inferenceFigures('a', 10_000)).toEqual({ waiting: 2, running: 5, kv_cache: 0.25, metrics_age_ms: 1_000, prefix_index_entries: 0 });
  });

  it('a worker that died holding an index lock is taken back: the lock is free for the others', () => {
    const { f } = fleet();
    const grant = f.assign(routing([['a', 0, 'vllm']]));
    const memory = grant.a as NonNullable<typeof grant.a>;
    // Worker 1 took the lock and died mid-insert (its lock word set, nothing released).
    new Int32Array(memory.buffer)[0] = 2;
    const other = new PrefixIndex(memory, 0);
    expect(other.insert(Int32Array.of(1), 1)).toBe(false);
    f.takeBack(1);
    expect(other.insert(Int32Array.of(1), 1)).toBe(true);
  });

  it('close stops every scraper and later swaps hand out nothing', () => {
    const { f } = fleet();
    f.assign(routing([['a', 0, 'vllm']]));
    f.close();
    expect(f.scraperOf('a')).toBeNull();
    expect(f.assign(routing([['a', 0, 'vllm']]))).toEqual({});
  });
});
