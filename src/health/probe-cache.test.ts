/**
 * ProbeCache (issue 3): concurrent probes share one run (single flight), a
 * completed result is reused for a TTL (default 1 s), and a probe never
 * waits past the probe budget (default 900 ms): it answers from the last
 * completed result (with its age, marked stale) or, when there is none yet,
 * unhealthy with a `health_run` check.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProbeCache, type CachedReport } from './probe-cache.js';
import type { HealthReport, HealthStatus } from './types.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

function report(status: HealthStatus, tag: string): HealthReport {
  return { status, checks: [{ name: tag, status, duration_ms: 0 }], timestamp: new Date().toISOString(), probe_type: 'liveness' };
}

/** A run function that takes `ms` (fake timers) and counts its calls; each run's report is tagged `run<n>`. */
function slowRun(ms: () => number, status: HealthStatus = 'healthy') {
  const state = { calls: 0 };
  const run = (): Promise<HealthReport> => {
    const n = ++state.calls;
    return new Promise((resolve) => setTimeout(() => resolve(report(status, `run${n}`)), ms()));
  };
  return { run, state };
}

function track(promise: Promise<CachedReport>): { done: boolean; value: CachedReport | undefined; error: unknown } {
  const state = { done: false, value: undefined as CachedReport | undefined, error: undefined as unknown };
  promise.then(
    (value) => {
      state.done = true;
      state.value = value;
    },
    (error: unknown) => {
      state.done = true;
      state.error = error;
    },
  );
  return state;
}

const tagOf = (c: CachedReport | undefined) => c?.report.checks[0]?.name;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('single flight', () => {
  it('concurrent probes share one run and get the same report', async () => {
    const { run, state } = slowRun(() => 100);
    const cache = new ProbeCache(run, { probe: 'liveness' });
    const probes = Array.from({ length: 200 }, () => track(cache.get()));
    expect(state.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(probes.every((p) => p.done)).toBe(true);
    expect(state.calls).toBe(1);
    const first = probes[0]!.value!;
    expect(tagOf(first)).toBe('run1');
    for (const p of probes) {
      expect(p.value!.report).toBe(first.report);
      expect(p.value!.stale).toBe(false);
      expect(p.value!.ageMs).toBe(0);
    }
  });

  it('probes that arrive while a run is going join it instead of starting another', async () => {
    const { run, state } = slowRun(() => 500);
    const cache = new ProbeCache(run, { probe: 'liveness', budgetMs: 10_000 });
    const a = track(cache.get());
    await vi.advanceTimersByTimeAsync(300);
    const b = track(cache.get());
    expect(state.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(a.done && b.done).toBe(true);
    expect(tagOf(b.value)).toBe('run1');
    expect(state.calls).toBe(1);
  });
});

describe('TTL', () => {
  it('a completed result is reused for 1 s by default, with its age, then a new run starts', async () => {
    const { run, state } = slowRun(() => 0);
    const cache = new ProbeCache(run, { probe: 'liveness' });
    const first = track(cache.get());
    await vi.advanceTimersByTimeAsync(0);
    expect(tagOf(first.value)).toBe('run1');

    await vi.advanceTimersByTimeAsync(400);
    const cached = await cache.get();
    expect(state.calls).toBe(1);
    expect(tagOf(cached)).toBe('run1');
    expect(cached.ageMs).toBe(400);
    expect(cached.stale).toBe(false);

    await vi.advanceTimersByTimeAsync(599);
    const stillCached = await cache.get();
    expect(state.calls).toBe(1);
    expect(stillCached.ageMs).toBe(999);

    await vi.advanceTimersByTimeAsync(1);
    const fresh = track(cache.get());
    await vi.advanceTimersByTimeAsync(0);
    expect(state.calls).toBe(2);
    expect(tagOf(fresh.value)).toBe('run2');
    expect(fresh.value!.ageMs).toBe(0);
  });

  it('the TTL is configurable; 0 runs on every probe', async () => {
    const { run, state } = slowRun(() => 0);
    const cache = new ProbeCache(run, { probe: 'liveness', ttlMs: 0 });
    for (let i = 1; i <= 3; i++) {
      const p = track(cache.get());
      await vi.advanceTimersByTimeAsync(0);
      expect(tagOf(p.value)).toBe(`run${i}`);
    }
    expect(state.calls).toBe(3);

    const { run: run2, state: state2 } = slowRun(() => 0);
    const longer = new ProbeCache(run2, { probe: 'liveness', ttlMs: 5_000 });
    void longer.get();
    await vi.advanceTimersByTimeAsync(4_999);
    await longer.get();
    expect(state2.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    void longer.get();
    expect(state2.calls).toBe(2);
  });

  it('at most one run per TTL however many probes arrive', async () => {
    const { run, state } = slowRun(() => 50);
    const cache = new ProbeCache(run, { probe: 'liveness', ttlMs: 1_000 });
    // 200 probes, one every 15 ms over 3 s. Runs start at 0, 1050 and 2100 ms
    // (each result is reused for 1 s after its 50 ms run completes).
    let probes = 0;
    for (let t = 0; t < 3_000; t += 15) {
      void cache.get();
      probes++;
      await vi.advanceTimersByTimeAsync(15);
    }
    expect(probes).toBe(200);
    expect(state.calls).toBe(3);
  });
});

describe('probe budget', () => {
  it('with no completed result yet, a probe answers unhealthy (check health_run) at the default 900 ms budget', async () => {
    const { run, state } = slowRun(() => 5_000);
    const cache = new ProbeCache(run, { probe: 'readiness' });
    const probe = track(cache.get());
    await vi.advanceTimersByTimeAsync(899);
    expect(probe.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(probe.done).toBe(true);
    const { report: r, stale } = probe.value!;
    expect(stale).toBe(true);
    expect(r.status).toBe('unhealthy');
    expect(r.probe_type).toBe('readiness');
    expect(r.timestamp).toMatch(ISO_UTC);
    expect(r.checks).toHaveLength(1);
    expect(r.checks[0]).toMatchObject({ name: 'health_run', status: 'unhealthy', reason: expect.any(String) });
    expect(Number.isInteger(r.checks[0]!.duration_ms)).toBe(true);
    expect(state.calls).toBe(1);
  });

  it('while a run outlasts the budget, probes answer from the last completed result, stale, with its age', async () => {
    let ms = 0;
    const { run, state } = slowRun(() => ms, 'degraded');
    const cache = new ProbeCache(run, { probe: 'liveness', ttlMs: 1_000, budgetMs: 300 });
    void cache.get();
    await vi.advanceTimersByTimeAsync(0);
    expect(state.calls).toBe(1);

    ms = 10_000; // the next run hangs
    await vi.advanceTimersByTimeAsync(1_500);
    const probe = track(cache.get());
    expect(state.calls).toBe(2);
    await vi.advanceTimersByTimeAsync(299);
    expect(probe.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(probe.done).toBe(true);
    expect(tagOf(probe.value)).toBe('run1');
    expect(probe.value!.report.status).toBe('degraded');
    expect(probe.value!.stale).toBe(true);
    expect(probe.value!.ageMs).toBe(1_800);

    // More probes during the same slow run: no new run, same stale answer, older.
    await vi.advanceTimersByTimeAsync(1_000);
    const later = track(cache.get());
    await vi.advanceTimersByTimeAsync(300);
    expect(state.calls).toBe(2);
    expect(tagOf(later.value)).toBe('run1');
    expect(later.value!.stale).toBe(true);
    expect(later.value!.ageMs).toBe(3_100);

    // The slow run completes at 11 500 ms; its result is then served, not stale.
    await vi.advanceTimersByTimeAsync(8_500);
    const fresh = await cache.get();
    expect(tagOf(fresh)).toBe('run2');
    expect(fresh.stale).toBe(false);
    expect(fresh.ageMs).toBe(100);
    expect(state.calls).toBe(2);
  });

  it('a run that finishes within the budget is served fresh', async () => {
    const { run } = slowRun(() => 250);
    const cache = new ProbeCache(run, { probe: 'liveness', budgetMs: 300 });
    const probe = track(cache.get());
    await vi.advanceTimersByTimeAsync(250);
    expect(probe.done).toBe(true);
    expect(probe.value).toMatchObject({ ageMs: 0, stale: false });
    expect(tagOf(probe.value)).toBe('run1');
  });

  it('a probe leaves no budget timer behind once it is answered', async () => {
    const { run } = slowRun(() => 10);
    const cache = new ProbeCache(run, { probe: 'liveness', budgetMs: 900 });
    const probe = track(cache.get());
    await vi.advanceTimersByTimeAsync(10);
    expect(probe.done).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('a run that fails', () => {
  it('rejects the probes waiting on it, and the next probe starts a new run', async () => {
    let calls = 0;
    const cache = new ProbeCache(
      () => {
        calls++;
        return calls === 1 ? Promise.reject(new Error('registry exploded')) : Promise.resolve(report('healthy', 'ok'));
      },
      { probe: 'liveness' },
    );
    const first = track(cache.get());
    await vi.advanceTimersByTimeAsync(0);
    expect(first.error).toBeInstanceOf(Error);
    const second = track(cache.get());
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(2);
    expect(tagOf(second.value)).toBe('ok');
  });
});
