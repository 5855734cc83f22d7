/**
 * The health-check contract of spec 001: a named async check returning
 * `Healthy | Degraded{reason} | Unhealthy{reason}`, with a timeout
 * (default 5 s) and a flag saying whether readiness runs it (default true).
 */

/** What a check or a module returns (spec 001, Module health). */
export type ModuleHealth =
  | { readonly status: 'healthy' }
  | { readonly status: 'degraded'; readonly reason: string }
  | { readonly status: 'unhealthy'; readonly reason: string };

export type HealthStatus = ModuleHealth['status'];

/** Constructors, so a check reads `return Health.degraded('queue is saturated')`. */
export const Health = {
  healthy: (): ModuleHealth => ({ status: 'healthy' }),
  degraded: (reason: string): ModuleHealth => ({ status: 'degraded', reason }),
  unhealthy: (reason: string): ModuleHealth => ({ status: 'unhealthy', reason }),
} as const;

export interface HealthCheck {
  readonly name: string;
  /** Runs the check; `signal` fires at the check's timeout, so a well-behaved check stops its work. */
  check(signal: AbortSignal): Promise<ModuleHealth> | ModuleHealth;
  /** Milliseconds; the registry's default (TOOLKIT_HEALTH_CHECK_TIMEOUT, 5 s) when absent. */
  readonly timeoutMs?: number;
  /** Whether `/ready` runs it; default true. */
  readonly requiredForReadiness?: boolean;
}

/** One check's line in a report (spec 001, Check result). */
export interface CheckResult {
  readonly name: string;
  readonly status: HealthStatus;
  /** Integer milliseconds. */
  readonly duration_ms: number;
  readonly reason?: string;
}

export type ProbeType = 'liveness' | 'readiness';

/** spec 001, Health report. */
export interface HealthReport {
  readonly status: HealthStatus;
  readonly checks: readonly CheckResult[];
  /** ISO 8601, UTC. */
  readonly timestamp: string;
  readonly probe_type: ProbeType;
}

/**
 * The overall status: unhealthy if any check is unhealthy, else degraded if
 * any is degraded, else healthy (spec 001 leaves the rule open; this is ours).
 */
export function overallStatus(checks: readonly CheckResult[]): HealthStatus {
  let status: HealthStatus = 'healthy';
  for (const check of checks) {
    if (check.status === 'unhealthy') return 'unhealthy';
    if (check.status === 'degraded') status = 'degraded';
  }
  return status;
}

/** spec 001, States: Unhealthy → 503; Healthy and Degraded → 200. */
export function httpStatusOf(report: Pick<HealthReport, 'status'>): 200 | 503 {
  return report.status === 'unhealthy' ? 503 : 200;
}
