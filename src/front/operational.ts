/**
 * The operational routes of spec 000 answered on the front thread: probes,
 * status, the alias list and metrics. None of them waits on a worker or a
 * provider.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { AliasRoute } from '../../protocol/config.js';
import { httpStatusOf } from '../health/types.js';
import { VERSION } from '../../protocol/version.js';
import { workerModeReport } from '../config/workers.js';
import type { FrontContext } from './context.js';
import type { ModelStatus } from './status-schemas.js';
import { send, sendError, sendJson, type Exchange } from './http.js';

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
    models_configured: uniqueAliases(ctx.config.routing.aliases).length,
    route_rules: ctx.config.routing.rules.length,
    config_version: ctx.config.routing.version,
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

/** One entry per alias; an alias with several deployments reports the first and how many there are. */
function uniqueAliases(aliases: readonly AliasRoute[]): Array<{ route: AliasRoute; deployments: number }> {
  const byAlias = new Map<string, { route: AliasRoute; deployments: number }>();
  for (const route of aliases) {
    const seen = byAlias.get(route.alias);
    if (seen) seen.deployments++;
    else byAlias.set(route.alias, { route, deployments: 1 });
  }
  return [...byAlias.values()];
}

/** Never the key itself: only whether it is there and where it comes from. */
function modelStatus({ route, deployments }: { route: AliasRoute; deployments: number }): ModelStatus {
  const { credentials } = route;
  return {
    alias: route.alias,
    provider: route.provider,
    upstream_model: route.upstreamModel,
    api_base: route.apiBase,
    credentials: credentials.kind === 'key' ? 'present' : credentials.kind,
    credentials_source: credentials.kind === 'key' ? credentials.source : credentials.kind === 'missing' ? credentials.variable : null,
    routable: credentials.kind !== 'missing',
    deployments,
  };
}

export function statusModels(ctx: FrontContext, ex: Exchange): void {
  sendJson(ex, 200, { object: 'list', data: uniqueAliases(ctx.config.routing.aliases).map(modelStatus) });
}

export function statusModel(ctx: FrontContext, ex: Exchange, req: HttpRequest): void {
  const found = aliasOfPath(ctx, ex, req);
  if (found) sendJson(ex, 200, modelStatus(found));
}

/** spec 000: exactly the model_list aliases, in the compatible list format. */
export function models(ctx: FrontContext, ex: Exchange): void {
  sendJson(ex, 200, { object: 'list', data: uniqueAliases(ctx.config.routing.aliases).map((alias) => modelObject(ctx, alias)) });
}

/** CONTRACT.md: `GET /v1/models/{model}`, one alias as `GET /v1/models` lists it (the SDKs' `models.retrieve`). */
export function model(ctx: FrontContext, ex: Exchange, req: HttpRequest): void {
  const found = aliasOfPath(ctx, ex, req);
  if (found) sendJson(ex, 200, modelObject(ctx, found));
}

function modelObject(ctx: FrontContext, { route }: { route: AliasRoute }) {
  return { id: route.alias, object: 'model', created: Math.floor(ctx.counters.startedAt / 1000), owned_by: route.provider };
}

/** The alias named by the route's `{model}` segment, or null once the 404 is sent. */
function aliasOfPath(ctx: FrontContext, ex: Exchange, req: HttpRequest): { route: AliasRoute; deployments: number } | null {
  let alias: string;
  try {
    alias = decodeURIComponent(req.getParameter(0));
  } catch {
    sendError(ex, 'model_not_found', 'the alias is not validly percent-encoded');
    return null;
  }
  const found = uniqueAliases(ctx.config.routing.aliases).find((a) => a.route.alias === alias);
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
