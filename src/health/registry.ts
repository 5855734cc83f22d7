/**
 * The health-check registry of spec 001: `register`, `checkLiveness` (every
 * check, in parallel) and `checkReadiness` (required checks only, in
 * parallel). Each check runs under its own timeout with an AbortSignal; a
 * check that times out or throws reports `unhealthy` and never holds the
 * probe past its timeout.
 */
import { HEALTH_DEFAULTS, type HealthSettings } from './settings.js';
import { overallStatus, type CheckResult, type HealthCheck, type HealthReport, type ModuleHealth, type ProbeType } from './types.js';

/** spec 001, Limits: a structured warning for checks slower than 3 s. */
export const SLOW_CHECK_MS = 3_000;

/** The name of the check readiness reports during the warm-up window. */
export const STARTUP_CHECK = 'startup';

/** Where slow-check warnings go; a pino logger fits. */
export interface WarnLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface RegistryOptions extends Partial<HealthSettings> {
  readonly logger?: WarnLogger;
  /** Strings that must never appear in a reason (keys, tokens): replaced by `[redacted]`. */
  readonly secrets?: readonly string[];
  /** Milliseconds clock for the warm-up window; Date.now by default (fake timers control it). */
  readonly now?: () => number;
}

export class HealthRegistry {
  readonly #checks = new Map<string, HealthCheck>();
  readonly #defaultTimeoutMs: number;
  readonly #readyAt: number;
  readonly #logger: WarnLogger | undefined;
  readonly #now: () => number;
  #secrets: readonly string[];

  constructor(options: RegistryOptions = {}) {
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? HEALTH_DEFAULTS.defaultTimeoutMs;
    this.#now = options.now ?? Date.now;
    this.#readyAt = this.#now() + (options.startupDelayMs ?? HEALTH_DEFAULTS.startupDelayMs);
    this.#logger = options.logger;
    this.#secrets = options.secrets ?? [];
  }

  /** Adds a check; a second check with the same name is refused. */
  register(check: HealthCheck): this {
    if (!check.name) throw new Error('a health check needs a name');
    if (this.#checks.has(check.name)) throw new Error(`a health check named "${check.name}" is already registered`);
    this.#checks.set(check.name, check);
    return this;
  }

  /** Replaces the strings redacted from reasons (after a config reload). */
  setSecrets(secrets: readonly string[]): void {
    this.#secrets = secrets;
  }

  get names(): string[] {
    return [...this.#checks.keys()];
  }

  /** Every registered check, in parallel. */
  checkLiveness(): Promise<HealthReport> {
    return this.#run('liveness', [...this.#checks.values()]);
  }

  /** Checks required for readiness, in parallel; unhealthy during the startup warm-up window. */
  checkReadiness(): Promise<HealthReport> {
    return this.#run(
      'readiness',
      [...this.#checks.values()].filter((c) => c.requiredForReadiness !== false),
    );
  }

  async #run(probe: ProbeType, checks: HealthCheck[]): Promise<HealthReport> {
    const results = await Promise.all(checks.map((check) => this.#runOne(check)));
    if (probe === 'readiness') {
      const left = this.#readyAt - this.#now();
      if (left > 0) results.unshift({ name: STARTUP_CHECK, status: 'unhealthy', duration_ms: 0, reason: `warming up: ready in ${Math.ceil(left / 1000)} s` });
    }
    return { status: overallStatus(results), checks: results, timestamp: new Date().toISOString(), probe_type: probe };
  }

  #runOne(check: HealthCheck): Promise<CheckResult> {
    const timeoutMs = check.timeoutMs ?? this.#defaultTimeoutMs;
    const controller = new AbortController();
    const started = performance.now();
    return new Promise<ModuleHealth>((resolve) => {
      const timer = setTimeout(() => {
        controller.abort();
        resolve({ status: 'unhealthy', reason: `timed out after ${timeoutMs} ms` });
      }, timeoutMs);
      const settle = (health: ModuleHealth) => {
        clearTimeout(timer);
        resolve(health);
      };
      try {
        Promise.resolve(check.check(controller.signal)).then(
          (health) => settle(isHealth(health) ? health : { status: 'unhealthy', reason: 'the check returned no health status' }),
          (err: unknown) => settle({ status: 'unhealthy', reason: messageOf(err) }),
        );
      } catch (err) {
        settle({ status: 'unhealthy', reason: messageOf(err) });
      }
    }).then((health) => {
      const duration = performance.now() - started;
      if (duration > SLOW_CHECK_MS) {
        this.#logger?.warn({ event: 'slow_health_check', check: check.name, duration_ms: Math.round(duration) }, `health check "${check.name}" took ${Math.round(duration)} ms`);
      }
      const result: CheckResult = { name: check.name, status: health.status, duration_ms: Math.round(duration) };
      return health.status === 'healthy' ? result : { ...result, reason: this.#clean(health.reason) };
    });
  }

  /** A reason never carries a secret, a URL with credentials or a stack trace. */
  #clean(reason: string): string {
    let text = String(reason).split('\n')[0] ?? '';
    text = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, '$1[redacted]@');
    for (const secret of this.#secrets) if (secret) text = text.split(secret).join('[redacted]');
    return text.length > 300 ? `${text.slice(0, 300)}…` : text;
  }
}

function isHealth(value: unknown): value is ModuleHealth {
  const status = (value as { status?: unknown } | null)?.status;
  return status === 'healthy' || status === 'degraded' || status === 'unhealthy';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}
