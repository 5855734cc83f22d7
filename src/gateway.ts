/**
 * Assembles a running gateway from a validated config: worker pool,
 * metrics, counters and the uWS front, listening on the configured address.
 * Used by main.ts and by the integration tests (port 0).
 */
import uws from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/load.js';
import { BearerAuth } from './front/auth.js';
import type { FrontContext } from './front/context.js';
import { StreamKeepalive } from './front/keepalive.js';
import { Lifecycle } from './front/lifecycle.js';
import { UWS_NATIVE, buildApp } from './front/server.js';
import { createMetrics } from './metrics/registry.js';
import { AccessLog } from './access-log.js';
import { Counters } from './supervisor/counters.js';
import { HealthSupervisor } from './supervisor/health-supervisor.js';
import { WorkerPool } from './supervisor/worker-pool.js';
import { DeploymentSlots } from './supervisor/deployment-slots.js';
import { AwsChainStates } from './supervisor/aws-chain.js';
import { startTracing } from './tracing/otel.js';
import { ReplicaDns, type ResolveAddresses } from './supervisor/replica-dns.js';
import { isDnsSet, withDnsReplicas } from './config/replicas.js';
import { InferenceFleet } from './inference/fleet.js';

export interface Gateway {
  readonly port: number;
  /** `http://<host>:<port>` (127.0.0.1 when listening on all interfaces). */
  readonly url: string;
  readonly context: FrontContext;
  /** Swaps the config whole, in the front and in every worker; calls in flight finish on theirs. */
  reload(next: GatewayConfig): void;
  /**
   * Graceful drain (see src/front/lifecycle.ts): readiness 503 now, listen
   * socket closed after the drain delay, in-flight work given the drain
   * timeout, then whatever is left interrupted and everything closed.
   * Calling it again, or `now: true`, skips the waiting.
   */
  drain(options?: { now?: boolean }): Promise<DrainReport>;
  /** Stops listening, closes open connections and the worker pool at once. */
  close(): Promise<void>;
}

/** What a drain did, with times in ms since it began (for logs and the drain test). */
export interface DrainReport {
  readonly socketClosedAtMs: number;
  readonly idleAtMs: number | null;
  readonly interrupted: number;
  readonly closedAtMs: number;
}

export async function startGateway(loaded: GatewayConfig, log: Logger, options: GatewayOptions = {}): Promise<Gateway> {
  // One state slot per deployment id, kept across reloads (src/supervisor/deployment-slots.ts).
  const deployments = new DeploymentSlots(loaded.routing.aliases.length, loaded.workerMode.workers);
  // `replicas: dns` (src/supervisor/replica-dns.ts): the routed config is the loaded one with the
  // replicas of the last answers; an answer that changes swaps it as a reload does. The start
  // waits a little for the first answers, so a pod whose DNS answers has its replicas at once.
  let loadedNow = loaded;
  // Until the front is built, an answer that changes is only noted, and applied once it is.
  let missedSwap: boolean;
  let swapReplicas: () => void = () => void (missedSwap = true);
  const replicas = new ReplicaDns(log, () => swapReplicas(), options.resolveAddresses);
  replicas.update(loadedNow.routing.replicaSets.filter(isDnsSet));
  await replicas.firstAnswers(FIRST_ANSWER_WAIT_MS);
  const routed = (config: GatewayConfig): GatewayConfig => Object.freeze({ ...config, routing: withDnsReplicas(config.routing, replicas.answersFor(config.routing.replicaSets.filter(isDnsSet))) });
  const config = withSlots(routed(loaded), deployments);
  missedSwap = false; // the first answers are in `config`
  // Scrapers and prefix indexes of deployments with server_metrics, following every config the pool hands out.
  const inference = new InferenceFleet(deployments.states);
  const pool = await WorkerPool.start(config.workerMode.workers, config.routing, log, deployments, { indexes: inference });
  // Tracing on: the OpenTelemetry SDK is loaded now (import(), in src/tracing/otel.ts), and only then.
  const tracing = config.tracing === null ? null : await startTracing(config.tracing, log);
  if (tracing !== null) pool.onSpans = (frame) => tracing.attempts(frame);
  // With a redis_url only: the Redis client is loaded now (import(), in src/shared-state/fleet.ts), and only then.
  let live = config;
  const sharedState = config.sharedState === null ? null : await (await import('./shared-state/fleet.js')).SharedState.start({ config: config.sharedState, limits: deployments.limits, states: deployments.states, routing: () => live.routing, log });
  const awsChain = new AwsChainStates(log);
  pool.onAwsChain = (frame) => awsChain.report(frame);
  const ctx: FrontContext = {
    config,
    deployments,
    inference,
    auth: new BearerAuth(config.apiKeys),
    pool,
    awsChain,
    health: new HealthSupervisor(config, pool, log, awsChain),
    metrics: createMetrics(),
    counters: new Counters(),
    log,
    access: new AccessLog(log),
    keepalive: new StreamKeepalive(config.streamKeepaliveMs),
    uwsNative: UWS_NATIVE,
    lifecycle: new Lifecycle(),
    tracing,
    replicas,
    sharedState,
  };
  let dnsCheck = false;
  const watchReplicas = (c: GatewayConfig) => {
    // Registered once the config first has a `dns` set; an embedder's check survives reloads.
    if (dnsCheck || !c.routing.replicaSets.some(isDnsSet)) return;
    dnsCheck = true;
    ctx.health.register(replicas.check());
  };
  watchReplicas(config);
  swapReplicas = () => {
    const next = withSlots(routed(loadedNow), deployments);
    ctx.config = Object.freeze({ ...ctx.config, routing: next.routing });
    pool.setRouting(ctx.config.routing);
    ctx.health.reload(ctx.config);
  };
  if (missedSwap) swapReplicas();
  ctx.metrics.attach(ctx);
  const app = buildApp(ctx);
  const socket = await new Promise<uws.us_listen_socket>((resolve, reject) => {
    app.listen(config.host, config.port, (token) => (token ? resolve(token) : reject(new Error(`cannot listen on ${config.host}:${config.port}`))));
  });
  const port = uws.us_socket_local_port(socket);
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  let listening = true;
  const closeSocket = () => {
    if (!listening) return;
    listening = false;
    uws.us_listen_socket_close(socket);
  };
  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      ctx.lifecycle.phase = 'closed';
      closeSocket();
      (app as unknown as { close?: () => void }).close?.();
      replicas.stop();
      ctx.health.stop();
      inference.close();
      await pool.close();
      await sharedState?.close();
      // What is still queued gets a moment to go out; a collector that is down costs no more than that.
      await tracing?.shutdown(TRACE_FLUSH_MS);
    })();
    return closing;
  };

  let draining: Promise<DrainReport> | null = null;
  let skipWait: () => void = () => undefined;
  const drain = (options: { now?: boolean } = {}): Promise<DrainReport> => {
    if (draining) {
      skipWait(); // a second signal: stop waiting
      return draining;
    }
    const started = performance.now();
    const since = () => Math.round(performance.now() - started);
    const skipped = new Promise<void>((resolve) => {
      skipWait = resolve;
    });
    if (options.now) skipWait();
    const wait = (ms: number) => Promise.race([skipped, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
    ctx.lifecycle.phase = 'draining';
    draining = (async () => {
      await wait(ctx.config.drainDelayMs);
      ctx.lifecycle.phase = 'closing';
      closeSocket();
      const socketClosedAtMs = since();
      log.info({ event: 'drain_socket_closed', in_flight: ctx.lifecycle.active.size, at_ms: socketClosedAtMs }, 'listen socket closed; waiting for in-flight requests');
      let idle = false;
      await Promise.race([ctx.lifecycle.whenIdle().then(() => (idle = true)), wait(ctx.config.drainTimeoutMs)]);
      const idleAtMs = idle ? since() : null;
      const interrupted = ctx.lifecycle.interruptAll();
      if (interrupted > 0) log.warn({ event: 'drain_interrupted', interrupted }, `drain time is up: ended ${interrupted} request(s) still open with shutting_down`);
      // Let the final SSE events and 503s leave before connections close.
      await new Promise((resolve) => setImmediate(resolve));
      await close();
      return { socketClosedAtMs, idleAtMs, interrupted, closedAtMs: since() };
    })();
    return draining;
  };

  return {
    port,
    url: `http://${host}:${port}`,
    context: ctx,
    reload(loadedNext) {
      const current = ctx.config;
      // Before anything changes: a reload with more new deployment ids than there are state slots is refused whole.
      // A `dns` set that survives keeps its answer, so its replicas keep their ids and state.
      const sets = loadedNext.routing.replicaSets.filter(isDnsSet);
      const next = withSlots(Object.freeze({ ...loadedNext, routing: withDnsReplicas(loadedNext.routing, replicas.answersFor(sets)) }), deployments);
      replicas.update(sets);
      loadedNow = loadedNext;
      // A generated key stays the same across reloads; a configured one may rotate.
      // The worker mode stays the one the pool runs (and /status reports) until the next start.
      const config = Object.freeze({ ...next, workerMode: current.workerMode, ...(next.apiKeyGenerated && current.apiKeyGenerated && { apiKeys: current.apiKeys }) });
      const changed = { host: next.host !== current.host, port: next.port !== current.port, workers: next.workerMode.workers !== current.workerMode.workers, redis: next.sharedState?.url !== current.sharedState?.url };
      for (const [key, differs] of Object.entries(changed)) {
        if (differs) log.warn({ event: 'reload_needs_restart', setting: key }, `"${key}" changed; it takes effect at the next start`);
      }
      ctx.config = config;
      live = config;
      ctx.auth = new BearerAuth(config.apiKeys);
      pool.setRouting(config.routing);
      ctx.health.reload(config);
      watchReplicas(config);
    },
    drain,
    close,
  };
}

/** What a test or an embedder may swap in. */
export interface GatewayOptions {
  /** How `replicas: dns` names are resolved (default: the system resolver or the entry's dns_servers). */
  readonly resolveAddresses?: ResolveAddresses;
}

/** The longest the start waits for the first answers of the `replicas: dns` names. */
const FIRST_ANSWER_WAIT_MS = 2_000;

/** How long closing waits for queued spans to be exported. */
const TRACE_FLUSH_MS = 2_000;

/** The config with each deployment's state slot: deployments whose id survives a reload keep theirs. */
function withSlots(config: GatewayConfig, deployments: DeploymentSlots): GatewayConfig {
  return Object.freeze({ ...config, routing: deployments.assign(config.routing) });
}
