/**
 * The reusable health-check toolkit (spec 001). Import it from another
 * service as `switchyard/health`; the built-in test checks of spec 001
 * (always healthy, always degraded, optional) are `switchyard/health/testing`,
 * kept out of this surface so no service registers one by mistake:
 *
 * @example
 * const registry = new HealthRegistry({ ...healthSettingsFromEnv(process.env), logger });
 * registry.register({ name: 'database', timeoutMs: 2000, check: async (signal) => {
 *   await db.ping({ signal });
 *   return Health.healthy();
 * } });
 * const report = await registry.checkReadiness(); // { status, checks, timestamp, probe_type }
 */
export { Health, overallStatus, httpStatusOf } from './types.js';
export type { ModuleHealth, HealthStatus, HealthCheck, CheckResult, HealthReport, ProbeType } from './types.js';
export { HealthRegistry, SLOW_CHECK_MS, STARTUP_CHECK, type RegistryOptions, type WarnLogger } from './registry.js';
export { registerModules, type HealthModule, type RegistrationContext } from './modules.js';
export { healthSettingsFromEnv, parseDuration, HEALTH_DEFAULTS, HealthSettingsError, type HealthSettings } from './settings.js';
export { ProbeCache, type CachedReport } from './probe-cache.js';
