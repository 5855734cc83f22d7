/**
 * The health-check toolkit of spec 001 / issue 3: the check contract, the
 * registry (register, checkLiveness, checkReadiness), timeouts with an
 * AbortSignal, failures as results, the overall-status rule, the warm-up
 * window, slow-check warnings, modules and the built-in test checks.
 */
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../logging.js';
import { registerModules, type HealthModule } from './modules.js';
import { HealthRegistry, SLOW_CHECK_MS, STARTUP_CHECK, type WarnLogger } from './registry.js';
import { HEALTH_DEFAULTS } from './settings.js';
import { alwaysDegraded, alwaysHealthy, optionalCheck } from './test-checks.js';
import { Health, httpStatusOf, overallStatus, type CheckResult, type HealthCheck, type HealthReport, type HealthStatus, type ModuleHealth } from './types.js';
import * as toolkit from './index.js';
import * as testing from './test-checks.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

/** Lets a test see whether a promise has settled without awaiting it. */
function track<T>(promise: Promise<T>): { readonly done: boolean; readonly value: T | undefined } {
  const state = { done: false, value: undefined as T | undefined };
  void promise.then((value) => {
    state.done = true;
    state.value = value;
  });
  return state;
}

/** A check that answers `health` after `ms` (timer based, so fake timers drive it). */
function after(name: string, ms: number, health: ModuleHealth = Health.healthy(), extra: Partial<HealthCheck> = {}): HealthCheck {
  return { name, check: () => new Promise<ModuleHealth>((resolve) => setTimeout(() => resolve(health), ms)), ...extra };
}

/** A check that never answers; records the signal it was given. */
function never(name: string, extra: Partial<HealthCheck> = {}): HealthCheck & { signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  return {
    name,
    signals,
    check: (signal) => {
      signals.push(signal);
      return new Promise<ModuleHealth>(() => {});
    },
    ...extra,
  };
}

function byName(report: HealthReport, name: string): CheckResult {
  const found = report.checks.find((c) => c.name === name);
  if (!found) throw new Error(`no check named ${name} in ${JSON.stringify(report)}`);
  return found;
}

function recordingLogger(): WarnLogger & { calls: Array<{ fields: Record<string, unknown>; message: string }> } {
  const calls: Array<{ fields: Record<string, unknown>; message: string }> = [];
  return { calls, warn: (fields, message) => void calls.push({ fields, message }) };
}

describe('the check contract', () => {
  it('Health builds Healthy, Degraded{reason} and Unhealthy{reason}', () => {
    expect(Health.healthy()).toEqual({ status: 'healthy' });
    expect(Health.degraded('slow disk')).toEqual({ status: 'degraded', reason: 'slow disk' });
    expect(Health.unhealthy('db down')).toEqual({ status: 'unhealthy', reason: 'db down' });
  });

  it('the default timeout is 5 seconds and readiness runs a check by default', () => {
    expect(HEALTH_DEFAULTS.defaultTimeoutMs).toBe(5_000);
    const registry = new HealthRegistry().register({ name: 'plain', check: () => Health.healthy() });
    return registry.checkReadiness().then((report) => expect(report.checks.map((c) => c.name)).toEqual(['plain']));
  });

  it('the toolkit entry point exports the contract, and its test checks only from the testing entry', () => {
    for (const name of ['Health', 'HealthRegistry', 'registerModules', 'healthSettingsFromEnv', 'ProbeCache', 'overallStatus', 'httpStatusOf']) {
      expect(toolkit, name).toHaveProperty(name);
    }
    for (const name of ['alwaysHealthy', 'alwaysDegraded', 'optionalCheck']) {
      expect(toolkit, name).not.toHaveProperty(name);
      expect(testing, name).toHaveProperty(name);
    }
    expect(toolkit.SLOW_CHECK_MS).toBe(3_000);
    expect(toolkit.STARTUP_CHECK).toBe('startup');
  });
});

describe('register', () => {
  it('refuses a second check with the same name, with a message naming it', () => {
    const registry = new HealthRegistry().register(alwaysHealthy('database'));
    expect(() => registry.register(alwaysDegraded('database'))).toThrow(/"database".*already registered/);
    expect(registry.names).toEqual(['database']);
  });

  it('refuses a check without a name', () => {
    expect(() => new HealthRegistry().register({ name: '', check: () => Health.healthy() })).toThrow(/name/);
  });

  it('keeps checks in registration order', async () => {
    const registry = new HealthRegistry().register(alwaysHealthy('b')).register(alwaysHealthy('a')).register(alwaysHealthy('c'));
    expect(registry.names).toEqual(['b', 'a', 'c']);
    expect((await registry.checkLiveness()).checks.map((c) => c.name)).toEqual(['b', 'a', 'c']);
  });
});

describe('checkLiveness and checkReadiness', () => {
  it('liveness runs every check; readiness only those required for readiness', async () => {
    const ran: string[] = [];
    const counted = (name: string, required?: boolean): HealthCheck => ({
      name,
      check: () => {
        ran.push(name);
        return Health.healthy();
      },
      ...(required !== undefined && { requiredForReadiness: required }),
    });
    const registry = new HealthRegistry().register(counted('default')).register(counted('required', true)).register(counted('optional', false));

    const live = await registry.checkLiveness();
    expect(live.probe_type).toBe('liveness');
    expect(live.checks.map((c) => c.name)).toEqual(['default', 'required', 'optional']);
    expect(ran).toEqual(['default', 'required', 'optional']);

    ran.length = 0;
    const ready = await registry.checkReadiness();
    expect(ready.probe_type).toBe('readiness');
    expect(ready.checks.map((c) => c.name)).toEqual(['default', 'required']);
    expect(ran).toEqual(['default', 'required']);
  });

  it('reports {status, checks:[{name,status,duration_ms,reason?}], timestamp, probe_type}', async () => {
    const registry = new HealthRegistry().register(alwaysHealthy('ok')).register(alwaysDegraded('meh', 'queue is long')).register({ name: 'bad', check: () => Health.unhealthy('gone') });
    const report = await registry.checkLiveness();
    expect(Object.keys(report).sort()).toEqual(['checks', 'probe_type', 'status', 'timestamp']);
    expect(report.timestamp).toMatch(ISO_UTC);
    expect(Math.abs(Date.parse(report.timestamp) - Date.now())).toBeLessThan(5_000);
    expect(byName(report, 'ok')).toEqual({ name: 'ok', status: 'healthy', duration_ms: expect.any(Number) });
    expect(byName(report, 'ok')).not.toHaveProperty('reason');
    expect(byName(report, 'meh')).toEqual({ name: 'meh', status: 'degraded', duration_ms: expect.any(Number), reason: 'queue is long' });
    expect(byName(report, 'bad')).toEqual({ name: 'bad', status: 'unhealthy', duration_ms: expect.any(Number), reason: 'gone' });
    for (const check of report.checks) {
      expect(Number.isInteger(check.duration_ms), `${check.name}: ${check.duration_ms}`).toBe(true);
      expect(check.duration_ms).toBeGreaterThanOrEqual(0);
    }
  });

  it('an empty registry is healthy with no checks', async () => {
    const report = await new HealthRegistry().checkLiveness();
    expect(report.status).toBe('healthy');
    expect(report.checks).toEqual([]);
  });

  it('runs checks in parallel: three 200 ms checks take about 200 ms, not 600', async () => {
    const realDelay = (name: string): HealthCheck => ({ name, check: () => new Promise((resolve) => setTimeout(() => resolve(Health.healthy()), 200)) });
    const registry = new HealthRegistry().register(realDelay('a')).register(realDelay('b')).register(realDelay('c'));
    const started = performance.now();
    const report = await registry.checkLiveness();
    const elapsed = performance.now() - started;
    expect(report.status).toBe('healthy');
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(450);
    for (const check of report.checks) expect(check.duration_ms).toBeGreaterThanOrEqual(190);
  });

  it('readiness runs its checks in parallel too', async () => {
    vi.useFakeTimers();
    try {
      const registry = new HealthRegistry().register(after('a', 200)).register(after('b', 200)).register(after('c', 200));
      const ready = track(registry.checkReadiness());
      await vi.advanceTimersByTimeAsync(199);
      expect(ready.done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(ready.done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('overall status', () => {
  const result = (status: HealthStatus): CheckResult => ({ name: status, status, duration_ms: 0, ...(status !== 'healthy' && { reason: 'r' }) });

  it.each<[HealthStatus[], HealthStatus]>([
    [[], 'healthy'],
    [['healthy'], 'healthy'],
    [['healthy', 'healthy'], 'healthy'],
    [['healthy', 'degraded'], 'degraded'],
    [['degraded', 'degraded'], 'degraded'],
    [['healthy', 'unhealthy'], 'unhealthy'],
    [['degraded', 'unhealthy'], 'unhealthy'],
    [['unhealthy', 'degraded'], 'unhealthy'],
    [['unhealthy', 'healthy', 'degraded'], 'unhealthy'],
  ])('%j → %s', (statuses, expected) => {
    expect(overallStatus(statuses.map(result))).toBe(expected);
  });

  it('the registry applies the rule', async () => {
    const registry = new HealthRegistry().register(alwaysHealthy()).register(alwaysDegraded());
    expect((await registry.checkLiveness()).status).toBe('degraded');
    registry.register({ name: 'down', check: () => Health.unhealthy('down') });
    expect((await registry.checkLiveness()).status).toBe('unhealthy');
  });

  it('HTTP: 503 when unhealthy, 200 when healthy or degraded', () => {
    expect(httpStatusOf({ status: 'healthy' })).toBe(200);
    expect(httpStatusOf({ status: 'degraded' })).toBe(200);
    expect(httpStatusOf({ status: 'unhealthy' })).toBe(503);
  });
});

describe('timeouts', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a check that never answers is unhealthy at the default 5 s timeout, with a reason that says so', async () => {
    const stuck = never('stuck');
    const report = track(new HealthRegistry().register(stuck).checkLiveness());
    await vi.advanceTimersByTimeAsync(4_999);
    expect(report.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(report.done).toBe(true);
    const result = byName(report.value!, 'stuck');
    expect(result.status).toBe('unhealthy');
    expect(result.reason).toMatch(/timed? ?out/i);
    expect(result.reason).toContain('5000 ms');
    expect(result.duration_ms).toBe(5_000);
    expect(report.value!.status).toBe('unhealthy');
  });

  it('the check is given an AbortSignal that fires at its timeout, not before', async () => {
    const stuck = never('stuck', { timeoutMs: 1_000 });
    void new HealthRegistry().register(stuck).checkLiveness();
    await vi.advanceTimersByTimeAsync(0);
    expect(stuck.signals).toHaveLength(1);
    const signal = stuck.signals[0]!;
    expect(signal).toBeInstanceOf(AbortSignal);
    await vi.advanceTimersByTimeAsync(999);
    expect(signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(signal.aborted).toBe(true);
  });

  it('a per-check timeout overrides the default; the registry default can be set', async () => {
    const registry = new HealthRegistry({ defaultTimeoutMs: 2_000 }).register(never('short', { timeoutMs: 300 })).register(never('default'));
    const report = track(registry.checkLiveness());
    await vi.advanceTimersByTimeAsync(300);
    expect(report.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1_699);
    expect(report.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(report.done).toBe(true);
    expect(byName(report.value!, 'short')).toMatchObject({ status: 'unhealthy', duration_ms: 300, reason: expect.stringMatching(/timed? ?out/i) });
    expect(byName(report.value!, 'default')).toMatchObject({ status: 'unhealthy', duration_ms: 2_000, reason: expect.stringMatching(/timed? ?out/i) });
  });

  it('a slow check never holds the probe past its timeout, and the fast checks are still reported', async () => {
    const registry = new HealthRegistry().register(alwaysHealthy('fast')).register(after('slow', 60_000, Health.healthy(), { timeoutMs: 1_000 }));
    const report = track(registry.checkLiveness());
    await vi.advanceTimersByTimeAsync(1_000);
    expect(report.done).toBe(true);
    expect(byName(report.value!, 'fast').status).toBe('healthy');
    expect(byName(report.value!, 'slow')).toMatchObject({ status: 'unhealthy', duration_ms: 1_000 });
  });

  it('a check that answers after its timeout does not change the result', async () => {
    const registry = new HealthRegistry().register(after('late', 1_500, Health.healthy(), { timeoutMs: 1_000 }));
    const report = track(registry.checkLiveness());
    await vi.advanceTimersByTimeAsync(2_000);
    expect(byName(report.value!, 'late').status).toBe('unhealthy');
    expect(report.value!.status).toBe('unhealthy');
  });

  it('a check that answers within its timeout is reported with its duration', async () => {
    const report = track(new HealthRegistry().register(after('quick', 250, Health.degraded('warming'))).checkLiveness());
    await vi.advanceTimersByTimeAsync(250);
    expect(report.value!.checks).toEqual([{ name: 'quick', status: 'degraded', duration_ms: 250, reason: 'warming' }]);
  });
});

describe('failures are results', () => {
  it('a check that throws is unhealthy with the error message as reason', async () => {
    const registry = new HealthRegistry().register({
      name: 'sync_throw',
      check: () => {
        throw new Error('connection refused');
      },
    });
    expect((await registry.checkLiveness()).checks).toEqual([{ name: 'sync_throw', status: 'unhealthy', duration_ms: expect.any(Number), reason: 'connection refused' }]);
  });

  it('a check whose promise rejects is unhealthy with the error message as reason', async () => {
    const registry = new HealthRegistry().register({ name: 'async_throw', check: async () => Promise.reject(new TypeError('bad pool state')) });
    const report = await registry.checkReadiness();
    expect(report.status).toBe('unhealthy');
    expect(byName(report, 'async_throw')).toMatchObject({ status: 'unhealthy', reason: 'bad pool state' });
  });

  it('a check that returns something that is not a health status is unhealthy', async () => {
    const registry = new HealthRegistry().register({ name: 'odd', check: () => ({ status: 'fine' }) as unknown as ModuleHealth });
    expect(byName(await registry.checkLiveness(), 'odd').status).toBe('unhealthy');
  });

  it('one failing check does not stop the others from being reported', async () => {
    const registry = new HealthRegistry()
      .register({
        name: 'boom',
        check: () => {
          throw new Error('boom');
        },
      })
      .register(alwaysHealthy('fine'));
    const report = await registry.checkLiveness();
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ['boom', 'unhealthy'],
      ['fine', 'healthy'],
    ]);
  });
});

describe('reasons never carry secrets, credentials in URLs or stack traces', () => {
  const SECRET = 'sk-live-0123456789abcdef';

  it('a configured secret is redacted from a reason', async () => {
    const registry = new HealthRegistry({ secrets: [SECRET] }).register({
      name: 'leaky',
      check: () => {
        throw new Error(`provider refused key ${SECRET}`);
      },
    });
    const reason = byName(await registry.checkLiveness(), 'leaky').reason!;
    expect(reason).not.toContain(SECRET);
    expect(reason).toContain('provider refused key');
  });

  it('secrets set later (after a reload) are redacted too', async () => {
    const registry = new HealthRegistry().register({ name: 'leaky', check: () => Health.degraded(`using ${SECRET}`) });
    registry.setSecrets([SECRET]);
    expect(byName(await registry.checkLiveness(), 'leaky').reason).not.toContain(SECRET);
  });

  it('credentials in a URL are removed', async () => {
    const registry = new HealthRegistry().register({ name: 'url', check: () => Health.unhealthy('cannot reach https://admin:hunter2@db.internal:5432/app') });
    const reason = byName(await registry.checkLiveness(), 'url').reason!;
    expect(reason).not.toContain('hunter2');
    expect(reason).not.toContain('admin:');
    expect(reason).toContain('db.internal:5432');
  });

  it('a stack trace in a reason is cut off', async () => {
    const err = new Error('socket hang up');
    const registry = new HealthRegistry()
      .register({ name: 'stacky', check: () => Health.unhealthy(String(err.stack)) })
      .register({
        name: 'thrown',
        check: () => {
          throw err;
        },
      });
    const report = await registry.checkLiveness();
    for (const name of ['stacky', 'thrown']) {
      const reason = byName(report, name).reason!;
      expect(reason).toContain('socket hang up');
      expect(reason).not.toMatch(/\n/);
      expect(reason).not.toMatch(/\bat .*(registry\.test|node:internal|\.ts:\d+|\.js:\d+)/);
    }
  });
});

describe('slow-check warning', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a check over 3 s logs a structured warning with its name and duration', async () => {
    const logger = recordingLogger();
    const registry = new HealthRegistry({ logger }).register(after('sluggish', 3_500)).register(alwaysHealthy('quick'));
    const report = track(registry.checkLiveness());
    await vi.advanceTimersByTimeAsync(3_500);
    expect(report.done).toBe(true);
    expect(logger.calls).toHaveLength(1);
    expect(logger.calls[0]!.fields).toMatchObject({ check: 'sluggish', duration_ms: 3_500 });
    expect(logger.calls[0]!.message).toContain('sluggish');
  });

  it('a check that takes 3 s or less logs nothing', async () => {
    expect(SLOW_CHECK_MS).toBe(3_000);
    const logger = recordingLogger();
    const registry = new HealthRegistry({ logger }).register(after('just_under', 2_999)).register(after('exactly', 3_000));
    void registry.checkLiveness();
    await vi.advanceTimersByTimeAsync(3_000);
    expect(logger.calls).toEqual([]);
  });

  it('a check that times out after more than 3 s is warned about too', async () => {
    const logger = recordingLogger();
    void new HealthRegistry({ logger }).register(never('stuck')).checkLiveness();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(logger.calls.map((c) => c.fields)).toEqual([expect.objectContaining({ check: 'stuck', duration_ms: 5_000 })]);
  });

  it('with a pino logger the warning is one JSON line at level warn', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    });
    const registry = new HealthRegistry({ logger: createLogger('info', sink) }).register(after('pino_slow', 4_000));
    void registry.checkLiveness();
    await vi.advanceTimersByTimeAsync(4_000);
    const warnings = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.check === 'pino_slow');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, check: 'pino_slow', duration_ms: 4_000 });
  });
});

describe('startup warm-up window', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('readiness is unhealthy with a `startup` check during the window; liveness stays available', async () => {
    const registry = new HealthRegistry({ startupDelayMs: 10_000 }).register(alwaysHealthy());

    const ready = await registry.checkReadiness();
    expect(ready.status).toBe('unhealthy');
    expect(httpStatusOf(ready)).toBe(503);
    const startup = byName(ready, STARTUP_CHECK);
    expect(STARTUP_CHECK).toBe('startup');
    expect(startup.status).toBe('unhealthy');
    expect(startup.reason).toEqual(expect.any(String));
    expect(Number.isInteger(startup.duration_ms)).toBe(true);

    const live = await registry.checkLiveness();
    expect(live.status).toBe('healthy');
    expect(live.checks.map((c) => c.name)).toEqual(['always_healthy']);

    await vi.advanceTimersByTimeAsync(9_999);
    expect((await registry.checkReadiness()).status).toBe('unhealthy');
    await vi.advanceTimersByTimeAsync(1);
    const after = await registry.checkReadiness();
    expect(after.status).toBe('healthy');
    expect(after.checks.map((c) => c.name)).toEqual(['always_healthy']);
  });

  it('no window by default', async () => {
    const ready = await new HealthRegistry().register(alwaysHealthy()).checkReadiness();
    expect(ready.status).toBe('healthy');
    expect(ready.checks.map((c) => c.name)).not.toContain(STARTUP_CHECK);
  });
});

describe('modules', () => {
  it('a module registers checks through its registration context, and registerModules adds its own health', async () => {
    const cache: HealthModule = {
      name: 'cache',
      register: (ctx) => {
        ctx.registerCheck(alwaysHealthy('cache_connection'));
        ctx.registerCheck(optionalCheck('cache_hit_rate'));
      },
      health: () => Health.degraded('evicting'),
    };
    const queue: HealthModule = { name: 'queue', health: () => Health.healthy(), requiredForReadiness: false };
    const registry = new HealthRegistry();
    registerModules(registry, [cache, queue]);

    expect(registry.names.sort()).toEqual(['cache', 'cache_connection', 'cache_hit_rate', 'queue']);
    const live = await registry.checkLiveness();
    expect(byName(live, 'cache')).toMatchObject({ status: 'degraded', reason: 'evicting' });
    expect(byName(live, 'queue').status).toBe('healthy');
    expect(live.status).toBe('degraded');
    const ready = await registry.checkReadiness();
    expect(ready.checks.map((c) => c.name).sort()).toEqual(['cache', 'cache_connection']);
  });

  it('a module health check gets the signal and the module timeout', async () => {
    vi.useFakeTimers();
    try {
      const signals: AbortSignal[] = [];
      const registry = new HealthRegistry();
      registerModules(registry, [
        {
          name: 'slow_module',
          timeoutMs: 700,
          health: (signal) => {
            signals.push(signal);
            return new Promise<ModuleHealth>(() => {});
          },
        },
      ]);
      const report = track(registry.checkLiveness());
      await vi.advanceTimersByTimeAsync(700);
      expect(signals[0]?.aborted).toBe(true);
      expect(byName(report.value!, 'slow_module')).toMatchObject({ status: 'unhealthy', duration_ms: 700 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('two modules with the same name are refused', () => {
    const module: HealthModule = { name: 'twin', health: () => Health.healthy() };
    expect(() => registerModules(new HealthRegistry(), [module, module])).toThrow(/"twin".*already registered/);
  });
});

describe('built-in test checks', () => {
  it('one always-healthy and one optional: liveness reports 2 checks, readiness 1', async () => {
    const registry = new HealthRegistry().register(alwaysHealthy()).register(optionalCheck());
    const live = await registry.checkLiveness();
    const ready = await registry.checkReadiness();
    expect(live.checks).toHaveLength(2);
    expect(live.status).toBe('healthy');
    expect(ready.checks).toHaveLength(1);
    expect(ready.checks[0]!.name).toBe(alwaysHealthy().name);
    expect(ready.status).toBe('healthy');
  });

  it('always-degraded is degraded with a reason, and serves 200', async () => {
    const report = await new HealthRegistry().register(alwaysDegraded()).checkLiveness();
    expect(report.status).toBe('degraded');
    expect(report.checks[0]!.reason).toEqual(expect.any(String));
    expect(report.checks[0]!.reason!.length).toBeGreaterThan(0);
    expect(httpStatusOf(report)).toBe(200);
  });

  it('the optional check is not required for readiness', () => {
    expect(optionalCheck().requiredForReadiness).toBe(false);
    expect(alwaysHealthy().requiredForReadiness).not.toBe(false);
  });
});
