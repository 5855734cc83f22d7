/**
 * The operational routes of spec 000 answered on the front thread: probes,
 * status, the alias list and metrics. None of them waits on a worker or a
 * provider.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { settingsOf, type AliasRoute, type Credentials } from '../../protocol/config.js';
import { groupsOf, leadRoute, type GroupSpec } from '../../protocol/routing-groups.js';
import type { DeploymentStates } from '../../protocol/deployment-state.js';
import { httpStatusOf } from '../health/types.js';
import { VERSION } from '../../protocol/version.js';
import { workerModeReport } from '../config/workers.js';
import type { FrontContext } from './context.js';
import type { DeploymentCredentials, DeploymentLimitsStatus, ModelStatus } from './status-schemas.js';
import { isoOrNull, type AwsChainStates } from '../supervisor/aws-chain.js';
import { send, sendError, sendJson, type Exchange } from './http.js';
import { replicaSetsStatus } from './replica-status.js';
import type { InferenceFigures } from '../inference/fleet.js';

/** spec 000, Health object; CONTRACT.md: the same body on /health/live and /health/liveliness. */
const LIVE_BODY = JSON.stringify({ object: 'health', status: 'ok' });

export function live(ex: Exchange): void {
  send(ex, 200, 'application/json', LIVE_BODY);
}

/**
 * spec 001, Health report, through the supervisor's single-flight cache:
 * 200 unless unhealthy (503). A report served from an earlier run carries
 * its age (`age_ms`), and `stale: true` when the current run outlasted the
 * probe budget.
 */
export function healthReport(ctx: FrontContext, ex: Exchange, res: HttpResponse, probe: 'liveness' | 'readiness'): void {
  if (probe === 'readiness' && ctx.lifecycle.phase !== 'serving') {
    // Draining: tell load balancers at once, without running checks.
    const check = { name: 'shutting_down', status: 'unhealthy', duration_ms: 0, reason: 'the gateway is draining for shutdown' };
    sendJson(ex, 503, { status: 'unhealthy', checks: [check], timestamp: new Date().toISOString(), probe_type: probe });
    return;
  }
  res.onAborted(() => {
    ex.aborted = true;
  });
  const pending = probe === 'liveness' ? ctx.health.liveness() : ctx.health.readiness();
  pending.then(
    ({ report, ageMs, stale }) => {
      const body = ageMs > 0 || stale ? { ...report, age_ms: Math.round(ageMs), ...(stale && { stale: true }) } : report;
      sendJson(ex, httpStatusOf(report), body);
    },
    () => sendError(ex, 'internal_error', 'the health run failed'),
  );
}

export function status(ctx: FrontContext, ex: Exchange): void {
  const c = ctx.counters;
  const pool = ctx.pool.stats();
  sendJson(ex, 200, {
    object: 'status',
    version: VERSION,
    uptime_seconds: Math.round((Date.now() - c.startedAt) / 1000),
    uws_native: ctx.uwsNative,
    workers: pool.workers,
    worker_mode: workerModeReport(ctx.config.workerMode),
    worker_restarts: pool.restarts,
    models_configured: groupsOf(ctx.config.routing).size,
    route_rules: ctx.config.routing.rules.length,
    config_version: ctx.config.routing.version,
    // CONTRACT.md, Shared state across pods: off without a redis_url; degraded while Redis is lost (limits per pod).
    shared_state: ctx.sharedState?.state ?? 'off',
    requests: {
      total: c.total,
      in_flight: c.inFlight,
      streams_open: c.streamsOpen,
      success: c.success,
      client_errors: c.clientErrors,
      server_errors: c.serverErrors,
      upstream_errors: c.upstreamErrors,
    },
  });
}

/**
 * Never the key itself: only whether it is there and where it comes from. The alias-level fields
 * describe its first deployment; `deployments` lists every one with its live routing state.
 */
function modelStatus(group: GroupSpec, ctx: FrontContext, now: number): ModelStatus {
  const route = leadRoute(group);
  const { credentials } = route;
  const states = ctx.deployments.states;
  return {
    alias: route.alias,
    provider: route.provider,
    upstream_model: route.upstreamModel,
    api_base: route.apiBase,
    credentials: credentials.kind === 'key' || credentials.kind === 'aws' ? 'present' : credentials.kind,
    credentials_source: credentialsSource(credentials),
    routable: group.deployments.some((d) => d.credentials.kind !== 'missing'),
    routing_strategy: ctx.config.routing.router.strategy,
    fallbacks: [...group.fallbacks],
    deployments: group.deployments.map((d, i) => withLimits(withInference(deploymentStatus(d, group.slots[i] as number, states, ctx.awsChain, now), ctx.inference.inferenceFigures(d.id, now)), d, group.slots[i] as number, ctx, now)),
    replica_sets: replicaSetsStatus(group, { states, replicas: ctx.replicas, inferenceFigures: (id) => ctx.inference.inferenceFigures(id, now) }, now),
  };
}

const credentialsSource = (c: Credentials): string | null => (c.kind === 'key' || c.kind === 'aws' ? c.source : c.kind === 'missing' ? c.variable : c.kind === 'aws_chain' ? 'aws_chain' : null);

/** A deployment's credentials, never a key: for the AWS chain, what the workers last reported of its region's chain. */
function credentialsStatus(d: AliasRoute, chains: AwsChainStates): DeploymentCredentials {
  const { credentials } = d;
  if (credentials.kind !== 'aws_chain') {
    const state = credentials.kind === 'key' || credentials.kind === 'aws' ? 'present' : credentials.kind;
    return { source: credentialsSource(credentials), state, expires_at: null, sdk_provider: null, error: null };
  }
  const chain = chains.status(settingsOf<{ readonly region: string }>(d).region);
  return { source: 'aws_chain', state: chain.state, expires_at: isoOrNull(chain.expiresAt), sdk_provider: chain.source, error: chain.error };
}

function deploymentStatus(d: AliasRoute, slot: number, states: DeploymentStates, chains: AwsChainStates, now: number) {
  const s = states.snapshot(slot, now);
  return {
    id: d.id,
    provider: d.provider,
    upstream_model: d.upstreamModel,
    // The origin only: a path can carry a tenant or a token.
    api_base: d.apiBase === null ? null : new URL(d.apiBase).origin,
    weight: d.weight,
    order: d.order,
    state: s.state,
    cooldown_remaining_ms: s.cooldownRemainingMs,
    // The wait its provider asked for (Retry-After), which every thread honours: no call before it ends.
    backoff_remaining_ms: s.backoffRemainingMs,
    in_flight: s.inFlight,
    latency_ewma_ms: s.latencyEwmaMs === null ? null : Math.round(s.latencyEwmaMs * 100) / 100,
    failures_last_minute: s.failuresLastMinute,
    last_error: s.lastError,
    credentials: credentialsStatus(d, chains),
  };
}

/** A deployment with rpm or tpm shows its limits and this pod's use of them; any other is as it was. */
function withLimits<T extends object>(status: T, d: AliasRoute, slot: number, ctx: FrontContext, now: number): T | (T & { limits: DeploymentLimitsStatus }) {
  if (d.rpm === 0 && d.tpm === 0) return status;
  const windowMs = ctx.config.routing.router.limitWindowMs;
  const used = ctx.deployments.limits.snapshot(slot, now, windowMs);
  return {
    ...status,
    limits: {
      rpm: d.rpm === 0 ? null : d.rpm,
      tpm: d.tpm === 0 ? null : d.tpm,
      window_s: windowMs / 1000,
      requests_in_window: Math.round(used.requests),
      tokens_in_window: Math.round(used.tokens),
      refused_total: Math.round(used.refusedTotal),
    },
  };
}

/** A deployment with server_metrics shows its figures (InferenceFleet.inferenceFigures); any other is as it was. */
function withInference<T extends object>(status: T, figures: InferenceFigures | null): T | (T & { inference: InferenceFigures }) {
  return figures === null ? status : { ...status, inference: figures };
}

export function statusModels(ctx: FrontContext, ex: Exchange): void {
  const now = Date.now();
  sendJson(ex, 200, { object: 'list', data: [...groupsOf(ctx.config.routing).values()].map((group) => modelStatus(group, ctx, now)) });
}

export function statusModel(ctx: FrontContext, ex: Exchange, req: HttpRequest): void {
  const found = aliasOfPath(ctx, ex, req);
  if (found) sendJson(ex, 200, modelStatus(found, ctx, Date.now()));
}

/**
 * spec 000: exactly the model_list aliases, in the compatible list format; in Anthropic's (CONTRACT.md,
 * Anthropic Messages API (inbound), Routes) when the request carries `anthropic-version`.
 */
export function models(ctx: FrontContext, ex: Exchange): void {
  const groups = [...groupsOf(ctx.config.routing).values()];
  if (ex.anthropic !== true) return sendJson(ex, 200, { object: 'list', data: groups.map((group) => modelObject(ctx, group)) });
  const data = groups.map((group) => anthropicModel(ctx, group));
  sendJson(ex, 200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}

/** CONTRACT.md: `GET /v1/models/{model}`, one alias as `GET /v1/models` lists it (the SDKs' `models.retrieve`). */
export function model(ctx: FrontContext, ex: Exchange, req: HttpRequest): void {
  const found = aliasOfPath(ctx, ex, req);
  if (found) sendJson(ex, 200, ex.anthropic === true ? anthropicModel(ctx, found) : modelObject(ctx, found));
}

/** Anthropic's ModelInfo: the alias is its id and display name; created when the config loaded. */
function anthropicModel(ctx: FrontContext, group: GroupSpec) {
  return { type: 'model', id: group.name, display_name: group.name, created_at: new Date(ctx.config.loadedAt).toISOString() };
}

/** An alias's owner is its first deployment's provider. */
function modelObject(ctx: FrontContext, group: GroupSpec) {
  return { id: group.name, object: 'model', created: Math.floor(ctx.counters.startedAt / 1000), owned_by: leadRoute(group).provider };
}

/** The alias named by the route's `{model}` segment, or null once the 404 is sent. */
function aliasOfPath(ctx: FrontContext, ex: Exchange, req: HttpRequest): GroupSpec | null {
  let alias: string;
  try {
    alias = decodeURIComponent(req.getParameter(0));
  } catch {
    sendError(ex, 'model_not_found', 'the alias is not validly percent-encoded');
    return null;
  }
  const found = groupsOf(ctx.config.routing).get(alias);
  if (!found) sendError(ex, 'model_not_found', 'no configured alias has this name');
  return found ?? null;
}

/** Prometheus text; gauges read the gateway's state at scrape (src/metrics/registry.ts). */
export function metrics(ctx: FrontContext, ex: Exchange, res: HttpResponse): void {
  res.onAborted(() => {
    ex.aborted = true;
  });
  ctx.metrics.registry.metrics().then(
    (text) => send(ex, 200, ctx.metrics.registry.contentType, text),
    () => sendError(ex, 'internal_error', 'metrics collection failed'),
  );
}
