/**
 * TOOLKIT_HEALTH_CHECK_TIMEOUT and TOOLKIT_HEALTH_STARTUP_DELAY (spec 001,
 * Limits; CONTRACT.md, Environment): durations as `5`, `5s`, `500ms`; bad
 * values stop the start with a message naming the variable.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../config/load.js';
import { HealthRegistry } from './registry.js';
import { HEALTH_DEFAULTS, HealthSettingsError, healthSettingsFromEnv, parseDuration } from './settings.js';

describe('parseDuration', () => {
  it.each([
    ['5', 5_000],
    ['5s', 5_000],
    ['500ms', 500],
    ['1.5s', 1_500],
    ['2m', 120_000],
    ['0', 0],
    [' 3s ', 3_000],
  ])('%j → %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', 'abc', '-1', '5h', 's', '1e3', '5 seconds', 'NaN', '1,5s'])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeNull();
  });
});

describe('healthSettingsFromEnv', () => {
  it('defaults: 5 s check timeout, no warm-up window', () => {
    expect(healthSettingsFromEnv({})).toEqual({ defaultTimeoutMs: 5_000, startupDelayMs: 0 });
    expect(HEALTH_DEFAULTS).toEqual({ defaultTimeoutMs: 5_000, startupDelayMs: 0 });
  });

  it('reads both variables', () => {
    expect(healthSettingsFromEnv({ TOOLKIT_HEALTH_CHECK_TIMEOUT: '500ms', TOOLKIT_HEALTH_STARTUP_DELAY: '30s' })).toEqual({ defaultTimeoutMs: 500, startupDelayMs: 30_000 });
    expect(healthSettingsFromEnv({ TOOLKIT_HEALTH_CHECK_TIMEOUT: '2', TOOLKIT_HEALTH_STARTUP_DELAY: '0' })).toEqual({ defaultTimeoutMs: 2_000, startupDelayMs: 0 });
  });

  it('an empty value means the default', () => {
    expect(healthSettingsFromEnv({ TOOLKIT_HEALTH_CHECK_TIMEOUT: '', TOOLKIT_HEALTH_STARTUP_DELAY: '' })).toEqual(HEALTH_DEFAULTS);
  });

  it.each([
    ['TOOLKIT_HEALTH_CHECK_TIMEOUT', 'soon'],
    ['TOOLKIT_HEALTH_CHECK_TIMEOUT', '-5'],
    ['TOOLKIT_HEALTH_CHECK_TIMEOUT', '0'],
    ['TOOLKIT_HEALTH_CHECK_TIMEOUT', '5h'],
    ['TOOLKIT_HEALTH_STARTUP_DELAY', 'later'],
    ['TOOLKIT_HEALTH_STARTUP_DELAY', '-1s'],
  ])('a bad %s=%j throws a HealthSettingsError naming the variable and the value', (name, value) => {
    let thrown: unknown;
    try {
      healthSettingsFromEnv({ [name]: value });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(HealthSettingsError);
    expect((thrown as Error).message).toContain(name);
    expect((thrown as Error).message).toContain(value);
  });

  it('the settings drive a registry', async () => {
    const settings = healthSettingsFromEnv({ TOOLKIT_HEALTH_CHECK_TIMEOUT: '20ms', TOOLKIT_HEALTH_STARTUP_DELAY: '1m' });
    const registry = new HealthRegistry(settings).register({ name: 'stuck', check: () => new Promise(() => {}) });
    const live = await registry.checkLiveness();
    expect(live.checks[0]).toMatchObject({ status: 'unhealthy', reason: expect.stringContaining('20 ms') });
    const ready = await registry.checkReadiness();
    expect(ready.checks.map((c) => c.name)).toEqual(['startup', 'stuck']);
  });
});

describe('the gateway config (loadConfig / parseConfig)', () => {
  const base = { GATEWAY_API_KEY: 'gw-key' };

  /** Throws unless `fn` throws a ConfigError; returns its message. */
  function configError(fn: () => unknown): string {
    let thrown: unknown;
    try {
      fn();
    } catch (err) {
      thrown = err;
    }
    expect(thrown, 'expected a ConfigError').toBeInstanceOf(ConfigError);
    return (thrown as Error).message;
  }

  it.each([
    ['TOOLKIT_HEALTH_CHECK_TIMEOUT', 'soon'],
    ['TOOLKIT_HEALTH_CHECK_TIMEOUT', '0'],
    ['TOOLKIT_HEALTH_STARTUP_DELAY', 'abc'],
    ['TOOLKIT_HEALTH_STARTUP_DELAY', '-3'],
  ])('loadConfig with a bad %s=%j throws a ConfigError naming the variable', (name, value) => {
    const message = configError(() => loadConfig({ ...base, [name]: value }));
    expect(message).toContain(name);
  });

  it('loadConfig reads both variables into the health config', () => {
    const config = loadConfig({ ...base, TOOLKIT_HEALTH_CHECK_TIMEOUT: '750ms', TOOLKIT_HEALTH_STARTUP_DELAY: '12s' });
    expect(config.health.checkTimeoutMs).toBe(750);
    expect(config.health.startupDelayMs).toBe(12_000);
  });

  it('defaults: 5 s check timeout, no warm-up window, 1 s cache TTL, 900 ms probe budget', () => {
    const config = loadConfig(base);
    expect(config.health).toMatchObject({ checkTimeoutMs: 5_000, startupDelayMs: 0, cacheTtlMs: 1_000, probeBudgetMs: 900 });
  });

  it('yaml health settings are read, in seconds; the environment overrides them', () => {
    const yaml = 'health: { check_timeout: 2, startup_delay: 3, cache_ttl: 0.25, probe_budget: 0.3 }\n';
    const fromFile = parseConfig(yaml, 'test.yaml', base);
    expect(fromFile.health).toMatchObject({ checkTimeoutMs: 2_000, startupDelayMs: 3_000, cacheTtlMs: 250, probeBudgetMs: 300 });
    const overridden = parseConfig(yaml, 'test.yaml', { ...base, TOOLKIT_HEALTH_CHECK_TIMEOUT: '400ms', TOOLKIT_HEALTH_STARTUP_DELAY: '0' });
    expect(overridden.health.checkTimeoutMs).toBe(400);
    expect(overridden.health.startupDelayMs).toBe(0);
  });
});
