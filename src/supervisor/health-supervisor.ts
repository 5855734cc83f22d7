/**
 * Drives the health registry for the gateway: builds it from the config
 * (the gateway's own checks plus any an embedder registered), and serves
 * probes through single-flight, TTL-cached, budget-bounded runs. A reload
 * builds a new registry and swaps it whole; the warm-up window keeps
 * counting from the process start.
 */
import type { Logger } from 'pino';
import { providerKey } from '../../protocol/config.js';
import type { GatewayConfig } from '../config/load.js';
import { ProbeCache, type CachedReport } from '../health/probe-cache.js';
import { HealthRegistry } from '../health/registry.js';
import type { HealthCheck, HealthReport } from '../health/types.js';
import type { AwsChainStates } from './aws-chain.js';
import { credentialsCheck, eventLoopCheck, upstreamChecks, workerPoolCheck } from './gateway-checks.js';
import type { WorkerPool } from './worker-pool.js';

export class HealthSupervisor {
  readonly #pool: WorkerPool;
  readonly #awsChain: AwsChainStates | null;
  readonly #log: Logger;
  readonly #readyAt: number;
  readonly #extra: HealthCheck[] = [];
  readonly #onRun: Array<(report: HealthReport) => void> = [];
  #config: GatewayConfig;
  #eventLoop: ReturnType<typeof eventLoopCheck>;
  #registry!: HealthRegistry;
  #liveness!: ProbeCache;
  #readiness!: ProbeCache;

  /** `awsChain`: what the workers reported of the AWS credential chain (readiness counts its deployments). */
  constructor(config: GatewayConfig, pool: WorkerPool, log: Logger, awsChain: AwsChainStates | null = null) {
    this.#config = config;
    this.#pool = pool;
    this.#awsChain = awsChain;
    this.#log = log;
    this.#readyAt = Date.now() + config.health.startupDelayMs;
    this.#eventLoop = eventLoopCheck(config.health.eventLoopDelayMs);
    this.#build();
  }

  /** Adds an embedder's check; it survives reloads. Duplicate names are refused. */
  register(check: HealthCheck): void {
    this.#registry.register(check);
    this.#extra.push(check);
  }

  /**
   * Calls `listener` with the report of every health run as it finishes
   * (not for probes answered from the cache); survives reloads. The
   * metrics record check durations and statuses through it.
   */
  onRun(listener: (report: HealthReport) => void): void {
    this.#onRun.push(listener);
  }

  get registry(): HealthRegistry {
    return this.#registry;
  }

  liveness(): Promise<CachedReport> {
    return this.#liveness.get();
  }

  readiness(): Promise<CachedReport> {
    return this.#readiness.get();
  }

  reload(config: GatewayConfig): void {
    this.#config = config;
    this.#eventLoop.stop();
    this.#eventLoop = eventLoopCheck(config.health.eventLoopDelayMs);
    this.#build();
  }

  stop(): void {
    this.#eventLoop.stop();
  }

  #build(): void {
    const { health, routing, apiKeys } = this.#config;
    const secrets = [...apiKeys, ...[...routing.aliases, ...routing.rules].flatMap((r) => providerKey(r.credentials) ?? [])];
    const registry = new HealthRegistry({
      defaultTimeoutMs: health.checkTimeoutMs,
      startupDelayMs: Math.max(0, this.#readyAt - Date.now()),
      logger: this.#log,
      secrets,
    });
    const config = this.#config;
    const pool = this.#pool;
    const chain = this.#awsChain === null ? undefined : { states: this.#awsChain, resolve: (region: string, timeoutMs: number) => pool.resolveAwsChain(region, timeoutMs), timeoutMs: Math.max(1, health.checkTimeoutMs - 300) };
    registry.register(credentialsCheck(() => config.routing, chain));
    registry.register(workerPoolCheck(this.#pool, Math.min(health.checkTimeoutMs, health.probeBudgetMs), this.#config.maxInFlight));
    registry.register(this.#eventLoop);
    for (const check of upstreamChecks(routing, this.#pool, health.checkTimeoutMs)) registry.register(check);
    for (const check of this.#extra) registry.register(check);
    this.#registry = registry;
    const options = { ttlMs: health.cacheTtlMs, budgetMs: health.probeBudgetMs };
    this.#liveness = new ProbeCache(() => registry.checkLiveness().then(this.#ran), { ...options, probe: 'liveness' });
    this.#readiness = new ProbeCache(() => registry.checkReadiness().then(this.#ran), { ...options, probe: 'readiness' });
  }

  readonly #ran = (report: HealthReport): HealthReport => {
    for (const listener of this.#onRun) {
      try {
        listener(report);
      } catch (err) {
        // A listener's bug must not fail the probe.
        this.#log.error({ event: 'health_listener_failed', err: err instanceof Error ? err.message : String(err) }, 'a health-run listener threw');
      }
    }
    return report;
  };
}
