/**
 * The one table of Switchyard's metrics: names, help and labels
 * (docs/METRICS.md documents each; a test keeps the two in step). Labels
 * are bounded: `route` is a route-table path, `model` a configured alias or
 * `<provider>/*` (never raw caller input), `provider` a provider name,
 * `status` an HTTP status code, `check` a registered health check.
 *
 * Request series are plain objects (see families.ts) looked up once per
 * request by one Map lookup (`forResult`); gauges of gateway state (in
 * flight, open streams, workers, health) are read or recorded from their
 * sources, never updated per request.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { STARTUP_CHECK } from '../health/registry.js';
import type { HealthReport, HealthStatus } from '../health/types.js';
import type { PoolStats } from '../supervisor/worker-pool.js';
import type { RoutingConfig } from '../../protocol/config.js';
import type { DeploymentStates } from '../../protocol/deployment-state.js';
import type { DeploymentLimits } from '../../protocol/deployment-limits.js';
import type { SharedStateView } from '../shared-state/fleet.js';
import type { InferencePick, RoutingFacts } from '../../protocol/frames.js';
import { CounterFamily, HistogramFamily, ScrapedCounter, type CounterSeries, type HistogramSeries } from './families.js';
import { statusClass } from './status-class.js';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** 64 B to 64 MiB, by fours. */
const BYTE_BUCKETS = [64, 256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864];
const HEALTH_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** switchyard_health_check_status: 1 healthy, 0.5 degraded, 0 unhealthy. */
const HEALTH_VALUE: Readonly<Record<HealthStatus, number>> = { healthy: 1, degraded: 0.5, unhealthy: 0 };

/** Gaps between a stream's data events: 0.5 ms to 2.5 s (a token every 10-100 ms is common; a stall shows in the top buckets). */
const PACING_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5];
/** An inference-aware pick's prefix score, 0..1: none held, an eighth, a quarter, half, three quarters, nearly all, all. */
const PREFIX_RATIO_BUCKETS = [0, 0.125, 0.25, 0.5, 0.75, 0.9, 0.99, 1];
/** The gateway's own share of the time to headers: 50 µs (a quiet pod) to 1 s (a retry_after wait, a pod out of CPU). */
const OVERHEAD_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

/** The series of one model alias and provider. */
export interface ModelSeries {
  readonly upstreamDuration: HistogramSeries;
  readonly timeToFirstToken: HistogramSeries;
  readonly timePerOutputToken: HistogramSeries;
  readonly overhead: HistogramSeries;
  readonly promptTokens: CounterSeries;
  readonly completionTokens: CounterSeries;
}

/** The series one finished provider-route request moves. */
export interface ResultSeries {
  readonly requests: CounterSeries;
  readonly duration: HistogramSeries;
  readonly requestBytes: HistogramSeries;
  readonly responseBytes: HistogramSeries;
  readonly model: ModelSeries;
}

/** The labels of switchyard_requests_total that callers give; `status_class` is derived from `status`. */
export interface RequestLabels {
  readonly route: string;
  readonly model: string;
  readonly provider: string;
  /** An HTTP status code, e.g. `"200"`. */
  readonly status: string;
}

/** Per-worker in-flight calls, when the pool reports them (`PoolStats.inFlightByWorker`). */
type StatsWithWorkers = PoolStats & { readonly inFlightByWorker?: readonly number[] };

/** The gateway state read at scrape time and the health runs recorded as they finish. */
export interface MetricSources {
  readonly counters: { readonly inFlight: number; readonly streamsOpen: number };
  readonly pool: { stats(): PoolStats };
  readonly health: { onRun(listener: (report: HealthReport) => void): void };
  /** The shared deployment state, and the config whose deployments it holds (swapped on reload). */
  readonly deployments: { readonly states: DeploymentStates; readonly limits: DeploymentLimits };
  /** Null without a redis_url (`shared_state` off). */
  readonly sharedState: SharedStateView | null;
  readonly config: { readonly routing: RoutingConfig };
  /** Null when tracing is off. */
  readonly tracing: { readonly dropped: number } | null;
  /** Deployments with server_metrics: their scrapers' failures (src/inference/fleet.ts). */
  readonly inference: { scrapeFailures(): Array<{ model: string; replica: string; failures: number }> };
}

export class GatewayMetrics {
  readonly registry = new Registry();

  // ── per request (hot path: through forResult / forModel) ──
  readonly requestsTotal = new CounterFamily(
    {
      name: 'switchyard_requests_total',
      help: 'Requests answered, by route, model alias, provider, HTTP status and status class',
      labelNames: ['route', 'model', 'provider', 'status', 'status_class'] as const,
    },
    this.registry,
  );
  readonly requestDuration = new HistogramFamily(
    {
      name: 'switchyard_request_duration_seconds',
      help: 'Provider routes: time from request received to response complete, by route, model alias and status class',
      labelNames: ['route', 'model', 'status_class'] as const,
      buckets: LATENCY_BUCKETS,
    },
    this.registry,
  );
  readonly upstreamDuration = new HistogramFamily(
    {
      name: 'switchyard_upstream_duration_seconds',
      help: 'Time spent on the provider call as the worker measured it, by model alias and provider',
      labelNames: ['model', 'provider'] as const,
      buckets: LATENCY_BUCKETS,
    },
    this.registry,
  );
  readonly timeToFirstToken = new HistogramFamily(
    {
      name: 'switchyard_time_to_first_token_seconds',
      help: 'Streams: time from request received to the first data event written to the client, by model alias and provider',
      labelNames: ['model', 'provider'] as const,
      buckets: LATENCY_BUCKETS,
    },
    this.registry,
  );
  readonly timePerOutputToken = new HistogramFamily(
    {
      name: 'switchyard_time_per_output_token_seconds',
      help: 'Streams: time between consecutive data events written to the client, by model alias and provider',
      labelNames: ['model', 'provider'] as const,
      buckets: PACING_BUCKETS,
    },
    this.registry,
  );
  readonly overhead = new HistogramFamily(
    {
      name: 'switchyard_gateway_overhead_seconds',
      help: "Routed answers: the gateway's own share of the time to response headers (x-switchyard-overhead-ms), by model alias and provider",
      labelNames: ['model', 'provider'] as const,
      buckets: OVERHEAD_BUCKETS,
    },
    this.registry,
  );
  readonly tokens = new CounterFamily(
    {
      name: 'switchyard_tokens_total',
      help: 'Tokens reported by providers in usage, by model alias, provider and kind (prompt or completion)',
      labelNames: ['model', 'provider', 'kind'] as const,
    },
    this.registry,
  );
  readonly upstreamErrors = new CounterFamily(
    {
      name: 'switchyard_upstream_errors_total',
      help: 'Provider calls that failed, by model alias, provider and error code',
      labelNames: ['model', 'provider', 'code'] as const,
    },
    this.registry,
  );
  readonly requestBodyBytes = new HistogramFamily(
    {
      name: 'switchyard_request_body_bytes',
      help: 'Provider routes: size of request bodies read in full, by route',
      labelNames: ['route'] as const,
      buckets: BYTE_BUCKETS,
    },
    this.registry,
  );
  readonly responseBodyBytes = new HistogramFamily(
    {
      name: 'switchyard_response_body_bytes',
      help: 'Provider routes: body bytes written to the client (SSE events and comments included), by route',
      labelNames: ['route'] as const,
      buckets: BYTE_BUCKETS,
    },
    this.registry,
  );

  // ── routing (docs/ROUTING.md): counted when a request that was retried or fell back finishes ──
  readonly retries = new CounterFamily(
    {
      name: 'switchyard_retries_total',
      help: 'Attempts after the first (retries and fallback attempts), by the model alias the caller asked for',
      labelNames: ['model'] as const,
    },
    this.registry,
  );
  readonly fallbacks = new CounterFamily(
    {
      name: 'switchyard_fallbacks_total',
      help: 'Requests answered from a fallback group, by the model alias the caller asked for and the fallback group',
      labelNames: ['model', 'fallback'] as const,
    },
    this.registry,
  );

  // ── inference-aware routing (CONTRACT.md, Inference-aware routing, Visible): from the routing facts of each answer ──
  readonly inferencePicks = new CounterFamily(
    {
      name: 'switchyard_inference_picks_total',
      help: 'Inference-aware picks of the replica that answered, by model alias and reason (prefix, load, all_saturated, no_metrics)',
      labelNames: ['model', 'reason'] as const,
    },
    this.registry,
  );
  readonly prefixMatchRatio = new HistogramFamily(
    {
      name: 'switchyard_inference_prefix_match_ratio',
      help: "Inference-aware picks: the share of the prompt's leading blocks the chosen replica's prefix index held, by model alias",
      labelNames: ['model'] as const,
      buckets: PREFIX_RATIO_BUCKETS,
    },
    this.registry,
  );
  readonly inferenceShed = new CounterFamily(
    {
      name: 'switchyard_inference_shed_total',
      help: 'Sheddable requests answered 429 capacity_exhausted because every replica with fresh metrics was saturated, by model alias',
      labelNames: ['model'] as const,
    },
    this.registry,
  );

  // ── gateway state, read when scraped ──
  #sources: MetricSources | null = null;

  readonly inFlight: Gauge;
  readonly streamsOpen: Gauge;
  readonly workers: Gauge;
  readonly workerInFlight: Gauge<'worker'>;
  readonly workerRestarts: Counter;
  readonly healthCheckDuration: Histogram<'check'>;
  readonly healthCheckStatus: Gauge<'check'>;
  readonly deploymentState: Gauge<'model' | 'deployment'>;
  readonly cooldowns: ScrapedCounter;
  readonly spansDropped: ScrapedCounter;
  readonly sharedState: Gauge<'state'>;
  readonly sharedDraws: ScrapedCounter;
  readonly sharedClockOffset: Gauge;
  readonly limitUsed: Gauge<'model' | 'deployment' | 'limit'>;
  readonly limitAdmitted: ScrapedCounter;
  readonly limitRefused: ScrapedCounter;
  readonly scrapeFailures: ScrapedCounter;

  readonly #byResult = new Map<string, ResultSeries>();
  readonly #byModel = new Map<string, ModelSeries>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'switchyard_' });
    const registers = [this.registry];
    const sources = () => this.#sources;
    this.inFlight = new Gauge({
      name: 'switchyard_requests_in_flight',
      help: 'Provider-route requests handed to a worker and not finished (the /status in_flight counter)',
      registers,
      collect() {
        const s = sources();
        if (s) this.set(s.counters.inFlight);
      },
    });
    this.streamsOpen = new Gauge({
      name: 'switchyard_streams_open',
      help: 'SSE streams open to clients (the /status streams_open counter)',
      registers,
      collect() {
        const s = sources();
        if (s) this.set(s.counters.streamsOpen);
      },
    });
    this.workers = new Gauge({
      name: 'switchyard_workers',
      help: 'Provider worker threads in the pool',
      registers,
      collect() {
        const s = sources();
        if (s) this.set(s.pool.stats().workers);
      },
    });
    this.workerInFlight = new Gauge({
      name: 'switchyard_worker_inflight',
      help: 'Calls in flight on each provider worker; the pool has no queue, so this is its load, not a queue depth',
      labelNames: ['worker'] as const,
      registers,
      collect() {
        const s = sources();
        const perWorker = s ? (s.pool.stats() as StatsWithWorkers).inFlightByWorker : undefined;
        if (!perWorker) return;
        this.reset();
        for (let i = 0; i < perWorker.length; i++) this.set({ worker: String(i) }, perWorker[i] as number);
      },
    });
    let restartsSeen = 0;
    this.workerRestarts = new Counter({
      name: 'switchyard_worker_restarts_total',
      help: 'Provider workers that died and were replaced (the /status worker_restarts counter)',
      registers,
      collect() {
        const s = sources();
        const restarts = s ? s.pool.stats().restarts : 0;
        if (restarts > restartsSeen) this.inc(restarts - restartsSeen);
        restartsSeen = Math.max(restartsSeen, restarts);
      },
    });
    this.healthCheckDuration = new Histogram({
      name: 'switchyard_health_check_duration_seconds',
      help: 'Duration of each health-check run (whole milliseconds, as the report gives them), by check',
      labelNames: ['check'] as const,
      buckets: HEALTH_BUCKETS,
      registers,
    });
    this.healthCheckStatus = new Gauge({
      name: 'switchyard_health_check_status',
      help: 'Result of the latest run of each health check: 1 healthy, 0.5 degraded, 0 unhealthy',
      labelNames: ['check'] as const,
      registers,
    });
    this.deploymentState = new Gauge({
      name: 'switchyard_deployment_state',
      help: 'Each deployment of the config: 0 healthy, 1 half-open, 2 cooling down (the pod-wide shared state)',
      labelNames: ['model', 'deployment'] as const,
      registers,
      collect() {
        const s = sources();
        if (!s) return;
        this.reset();
        const { aliases, slots } = s.config.routing;
        const now = Date.now();
        aliases.forEach((route, i) => this.set({ model: route.alias, deployment: route.id }, s.deployments.states.stateAt(slots[i] as number, now)));
      },
    });
    this.cooldowns = new ScrapedCounter(
      {
        name: 'switchyard_cooldowns_total',
        help: 'Cooldowns each deployment of the config began, since its id was first configured',
        labelNames: ['model', 'deployment'],
      },
      this.registry,
      () => {
        const s = sources();
        if (!s) return [];
        const { aliases, slots } = s.config.routing;
        return aliases.map((route, i) => ({ labels: { model: route.alias, deployment: route.id }, value: s.deployments.states.cooldowns(slots[i] as number) }));
      },
    );
    this.sharedState = new Gauge({
      name: 'switchyard_shared_state',
      help: 'The link to the fleet through Redis: 1 on the state it is in (ok, degraded: Redis lost, limits per pod; off: no redis_url), 0 on the others',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const now = sources()?.sharedState?.state ?? 'off';
        for (const state of ['ok', 'degraded', 'off'] as const) this.set({ state }, state === now ? 1 : 0);
      },
    });
    this.sharedDraws = new ScrapedCounter(
      {
        name: 'switchyard_shared_state_draws_total',
        help: 'Draws of the fleet budget from Redis: granted in full (ok), granted less than asked because the fleet budget is spent (short), failed (timeout, Redis lost)',
        labelNames: ['result'],
      },
      this.registry,
      () => {
        const draws = sources()?.sharedState?.draws ?? { ok: 0, short: 0, failed: 0 };
        return (['ok', 'short', 'failed'] as const).map((result) => ({ labels: { result }, value: draws[result] }));
      },
    );
    this.sharedClockOffset = new Gauge({
      name: 'switchyard_shared_state_clock_offset_seconds',
      help: "Redis' clock less this pod's, as the last quick ping measured it: the pod names the fleet's buckets in Redis' time (0 without a redis_url)",
      registers,
      collect() {
        this.set((sources()?.sharedState?.clockOffsetMs ?? 0) / 1000);
      },
    });
    this.limitUsed = new Gauge({
      name: 'switchyard_limit_used_ratio',
      help: 'Share of each deployment rpm (limit="rpm") or tpm (limit="tpm") this pod used over the last window (deployments with a limit only)',
      labelNames: ['model', 'deployment', 'limit'] as const,
      registers,
      collect() {
        const s = sources();
        if (!s) return;
        this.reset();
        const { aliases, slots, router } = s.config.routing;
        const now = Date.now();
        aliases.forEach((route, i) => {
          if (route.rpm === 0 && route.tpm === 0) return;
          const used = s.deployments.limits.snapshot(slots[i] as number, now, router.limitWindowMs);
          if (route.rpm > 0) this.set({ model: route.alias, deployment: route.id, limit: 'rpm' }, used.requests / route.rpm);
          if (route.tpm > 0) this.set({ model: route.alias, deployment: route.id, limit: 'tpm' }, used.tokens / route.tpm);
        });
      },
    });
    const limited = () => {
      const s = sources();
      if (!s) return [];
      const { aliases, slots, router } = s.config.routing;
      const now = Date.now();
      return aliases.flatMap((route, i) => (route.rpm === 0 && route.tpm === 0 ? [] : [{ labels: { model: route.alias, deployment: route.id }, used: s.deployments.limits.snapshot(slots[i] as number, now, router.limitWindowMs) }]));
    };
    this.limitAdmitted = new ScrapedCounter(
      { name: 'switchyard_limit_requests_total', help: 'Calls this pod sent to each deployment that has an rpm or tpm (calls never sent given back)', labelNames: ['model', 'deployment'] },
      this.registry,
      () => limited().map(({ labels, used }) => ({ labels, value: used.requestsTotal })),
    );
    this.limitRefused = new ScrapedCounter(
      { name: 'switchyard_limit_refused_total', help: 'Picks of each deployment refused because it was at its rpm or tpm (the call went to another deployment, or was answered 429)', labelNames: ['model', 'deployment'] },
      this.registry,
      () => limited().map(({ labels, used }) => ({ labels, value: used.refusedTotal })),
    );
    this.spansDropped = new ScrapedCounter(
      {
        name: 'switchyard_spans_dropped_total',
        help: 'Trace spans dropped: the export queue was full, or their export failed (0 while tracing is off)',
        labelNames: [],
      },
      this.registry,
      () => [{ labels: {}, value: sources()?.tracing?.dropped ?? 0 }],
    );
    this.scrapeFailures = new ScrapedCounter(
      {
        name: 'switchyard_inference_scrape_failures_total',
        help: "Scrapes of a deployment's server /metrics that gave no usable figures (unreachable, slow, not 200, figures missing), by model alias and replica (deployment id)",
        labelNames: ['model', 'replica'],
      },
      this.registry,
      () => (sources()?.inference.scrapeFailures() ?? []).map((f) => ({ labels: { model: f.model, replica: f.replica }, value: f.failures })),
    );
  }

  /** An answer whose replica an inference-aware pick chose: why, and how much of its prompt that replica held. */
  recordInferencePick(model: string, pick: InferencePick): void {
    this.inferencePicks.inc({ model, reason: pick.reason });
    this.prefixMatchRatio.observe({ model }, pick.ratio);
  }

  /** A finished request that took more than one attempt or was served by a fallback group. */
  recordRouting(model: string, routing: RoutingFacts): void {
    if (routing.attempts > 1) this.retries.inc({ model }, routing.attempts - 1);
    if (routing.fallback !== null) this.fallbacks.inc({ model, fallback: routing.fallback });
  }

  /**
   * Counts a request on switchyard_requests_total from its labels (the
   * status class is derived); for callers off the provider hot path, e.g.
   * a 401 refused before the body, or an operational route.
   */
  readonly requests = {
    inc: (labels: RequestLabels): void => {
      this.requestsTotal.inc({ ...labels, status_class: statusClass(Number(labels.status)) });
    },
  };

  /** Every series a finished provider-route request moves, by one Map lookup after the first. */
  forResult(route: string, model: string, provider: string, status: number): ResultSeries {
    const key = `${route}\u0000${model}\u0000${provider}\u0000${status}`;
    let found = this.#byResult.get(key);
    if (!found) {
      const cls = statusClass(status);
      found = {
        requests: this.requestsTotal.at({ route, model, provider, status: String(status), status_class: cls }),
        duration: this.requestDuration.at({ route, model, status_class: cls }),
        requestBytes: this.requestBodyBytes.at({ route }),
        responseBytes: this.responseBodyBytes.at({ route }),
        model: this.forModel(model, provider),
      };
      this.#byResult.set(key, found);
    }
    return found;
  }

  /** The series of one model alias and provider (time to first token, upstream time, tokens). */
  forModel(model: string, provider: string): ModelSeries {
    const key = `${model}\u0000${provider}`;
    let found = this.#byModel.get(key);
    if (!found) {
      found = {
        upstreamDuration: this.upstreamDuration.at({ model, provider }),
        timeToFirstToken: this.timeToFirstToken.at({ model, provider }),
        timePerOutputToken: this.timePerOutputToken.at({ model, provider }),
        overhead: this.overhead.at({ model, provider }),
        promptTokens: this.tokens.at({ model, provider, kind: 'prompt' }),
        completionTokens: this.tokens.at({ model, provider, kind: 'completion' }),
      };
      this.#byModel.set(key, found);
    }
    return found;
  }

  /**
   * Connects the gauges to the gateway's state and records every health
   * run from now on. Once per metrics object: later calls do nothing.
   */
  attach(sources: MetricSources): void {
    if (this.#sources) return;
    this.#sources = sources;
    sources.health.onRun((report) => this.recordHealth(report));
  }

  /** One health run's results: a duration per check and its status; a liveness run (every check) drops checks no longer registered. */
  recordHealth(report: HealthReport): void {
    if (report.probe_type === 'liveness') this.healthCheckStatus.reset();
    for (const check of report.checks) {
      // The warm-up entry of readiness is not a check that ran.
      if (check.name === STARTUP_CHECK) continue;
      this.healthCheckDuration.observe({ check: check.name }, check.duration_ms / 1000);
      this.healthCheckStatus.set({ check: check.name }, HEALTH_VALUE[check.status]);
    }
  }
}

export function createMetrics(): GatewayMetrics {
  return new GatewayMetrics();
}

export type Metrics = GatewayMetrics;
