/**
 * The gateway's own health checks (issue 3): provider credentials
 * (required; spec 000 readiness rule), the worker pool, the event loop, and
 * one optional reachability check per distinct upstream origin, run inside
 * the worker pool so the front thread never does provider I/O.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { hasCredentials, settingsOf, type RoutingConfig, type Upstream } from '../../protocol/config.js';
import type { AwsChainStateFrame, ProbeTarget } from '../../protocol/frames.js';
import { Health, type HealthCheck } from '../health/types.js';
import type { AwsChainStates } from './aws-chain.js';
import type { WorkerPool } from './worker-pool.js';

/** Share of `max_in_flight` past which the pool counts as saturated (degraded, still serving). */
export const SATURATION_SHARE = 0.9;

/** What readiness needs of the AWS credential chain: the pod's view of it, and a worker to ask. */
export interface AwsChainReadiness {
  readonly states: AwsChainStates;
  /** Asks a worker to resolve a region's chain now; null when no answer came within `timeoutMs`. */
  resolve(region: string, timeoutMs: number): Promise<AwsChainStateFrame | null>;
  readonly timeoutMs: number;
}

/**
 * spec 000, States: ready when at least one configured route has provider
 * credentials; a route that needs none (mock, a keyless self-hosted
 * `openai` deployment) counts as having them (CONTRACT.md, Config file).
 * A bedrock route on the AWS credential chain (`aws_chain`) counts once the
 * chain has produced credentials that have not expired (CONTRACT.md, Native
 * providers). When such routes are all the pod has and no worker has
 * reported credentials yet (no call, or they expired), the check asks a
 * worker to resolve the chain, so such a pod becomes ready before its first
 * call; that worker loads the AWS packages then. Unready, the reason names
 * the sources the chain tried.
 */
export function credentialsCheck(routing: () => RoutingConfig, chain?: AwsChainReadiness): HealthCheck {
  return {
    name: 'provider_credentials',
    check: async () => {
      const { aliases, rules, replicaSets } = routing();
      const routes = [...aliases, ...rules];
      if (routes.some((r) => r.credentials.kind !== 'missing' && r.credentials.kind !== 'aws_chain')) return Health.healthy();
      const regions = [...new Set(routes.filter((r) => r.credentials.kind === 'aws_chain').map((r) => settingsOf<{ readonly region: string }>(r).region))];
      if (regions.length === 0) {
        // A keyed `replicas: dns` set has no route until its name resolves: say so, as that is what readiness waits for.
        const waiting = replicaSets.filter((set) => set.source === 'dns' && set.entry.credentials.kind !== 'missing' && !aliases.some((r) => r.replica?.entry === set.entry.id)).map((set) => set.entry.id);
        const none = routes.length === 0 && replicaSets.length === 0 ? 'no routes are configured' : 'no configured route has provider credentials';
        return Health.unhealthy(waiting.length === 0 ? none : `${none}; ${waiting.join(', ')} ${waiting.length === 1 ? 'has' : 'have'} no replica until DNS answers (check replicas_dns)`);
      }
      if (chain === undefined) return Health.unhealthy('no configured route has provider credentials but the AWS credential chain, which has not been asked');
      const now = Date.now();
      if (regions.some((region) => chain.states.credentialed(region, now))) return Health.healthy();
      const answers = await Promise.all(regions.map((region) => chain.resolve(region, chain.timeoutMs)));
      if (answers.some((answer) => answer?.state === 'ok')) return Health.healthy();
      // The sources' names only: a reason is cut at 300 characters; their reasons are in /status/models and the log.
      const why = regions.map((region, i) => `${region}: ${answers[i] ? `tried ${answers[i].tried.join(', ')}` : `no worker answered within ${chain.timeoutMs} ms`}`).join('; ');
      return Health.unhealthy(`no configured route has provider credentials; the AWS credential chain gave none (${why}; why each gave none: /status/models)`);
    },
  };
}

/** Every worker answers a ping over the protocol within the check's timeout. */
export function workerPoolCheck(pool: WorkerPool, timeoutMs: number, maxInFlight: number): HealthCheck {
  return {
    name: 'worker_pool',
    timeoutMs,
    check: async () => {
      const answers = await pool.ping(Math.max(1, timeoutMs - 50));
      const silent = answers.flatMap((ms, i) => (ms === null ? [i] : []));
      if (silent.length > 0) return Health.unhealthy(`worker(s) ${silent.join(', ')} did not answer a ping within ${timeoutMs} ms`);
      const { inFlight, workers, restarts } = pool.stats();
      if (inFlight >= maxInFlight * SATURATION_SHARE) return Health.degraded(`pool saturated: ${inFlight} calls in flight on ${workers} workers (limit ${maxInFlight})`);
      if (restarts > 0) return Health.degraded(`${restarts} worker restart(s) since start`);
      return Health.healthy();
    },
  };
}

/** Degraded when the event loop's p99 delay since the last check passes the threshold. */
export function eventLoopCheck(thresholdMs: number): HealthCheck & { stop(): void } {
  const histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  return {
    name: 'event_loop',
    check: () => {
      const p99 = histogram.percentile(99) / 1e6;
      histogram.reset();
      return p99 > thresholdMs ? Health.degraded(`event-loop delay p99 ${Math.round(p99)} ms over ${thresholdMs} ms`) : Health.healthy();
    },
    stop: () => histogram.disable(),
  };
}

/** One optional check per distinct upstream origin (not required for readiness). */
export function upstreamChecks(routing: RoutingConfig, pool: WorkerPool, timeoutMs: number): HealthCheck[] {
  const byOrigin = new Map<string, Upstream | RoutingConfig['rules'][number]>();
  for (const route of [...routing.aliases, ...routing.rules]) {
    if (route.apiBase === null) continue;
    const origin = new URL(route.apiBase).origin;
    const seen = byOrigin.get(origin);
    // Prefer a route with a key, so its provider's authenticated model list can succeed.
    if (!seen || (!hasCredentials(seen.credentials) && hasCredentials(route.credentials))) byOrigin.set(origin, route);
  }
  return [...byOrigin].map(([origin, route]) => ({
    name: `upstream:${origin}`,
    requiredForReadiness: false,
    timeoutMs,
    check: async () => {
      const answer = await pool.probe(probeTarget(route), Math.max(1, timeoutMs - 300));
      if (answer === null) return Health.unhealthy(`timed out after ${timeoutMs} ms waiting for the probe`);
      if (answer.status === null) return Health.unhealthy(`unreachable: ${answer.error ?? 'no answer'}`);
      if (answer.status === 401 || answer.status === 403) return Health.degraded(`reachable, but the provider refused the credentials (${answer.status})`);
      if (answer.status >= 500) return Health.degraded(`reachable, but answered ${answer.status}`);
      return Health.healthy();
    },
  }));
}

/** Only what the probe needs crosses to the worker (not the alias, id, weights or globs). */
function probeTarget({ provider, apiBase, credentials, timeouts, settings, dropParams, responsesApi, connectTo }: ProbeTarget): ProbeTarget {
  return { provider, apiBase, credentials, timeouts, settings, dropParams, responsesApi, connectTo };
}
