/**
 * Built-in test checks (spec 001): always healthy, always degraded, and an
 * optional one that readiness does not run. With one always-healthy and one
 * optional registered, liveness reports 2 checks and readiness 1.
 *
 * For an integrator's tests: `import { alwaysHealthy } from 'switchyard/health/testing'`.
 */
import { Health, type HealthCheck } from './types.js';

export function alwaysHealthy(name = 'always_healthy'): HealthCheck {
  return { name, check: () => Health.healthy() };
}

export function alwaysDegraded(name = 'always_degraded', reason = 'always degraded (test check)'): HealthCheck {
  return { name, check: () => Health.degraded(reason) };
}

export function optionalCheck(name = 'optional'): HealthCheck {
  return { name, check: () => Health.healthy(), requiredForReadiness: false };
}
