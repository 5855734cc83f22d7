/**
 * The uWS app, built from the route table: one handler per path that
 * checks the method (405 with `Allow`), the bearer token (401), makes the
 * request id, then calls the route's handler. Anything else is a 404.
 */
import uws from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { FrontContext } from './context.js';
import { agentDescription, buildDocsHtml, buildManifest } from '../discovery/agent.js';
import { send, sendError, type Exchange } from './http.js';
import * as ops from './operational.js';
import { providerHandler } from './proxy.js';
import { requestIdFrom } from './request-id.js';
import { ROUTES, isProviderKind, methodsByPath, uwsPattern, type RouteKind, type RouteSpec } from './routes.js';
import type { Operation } from '../../protocol/frames.js';

type Handler = (res: HttpResponse, req: HttpRequest, requestId: string) => void;

/** Whether the uWS native binary loaded; the package silently falls back to a slow pure-JS server otherwise. */
export const UWS_NATIVE: boolean = typeof (uws as unknown as { getParts?: unknown }).getParts === 'function';

const WWW_AUTHENTICATE = ['www-authenticate', 'Bearer'] as const;

export function buildApp(ctx: FrontContext): TemplatedApp {
  const app = uws.App();
  for (const [path, methods] of methodsByPath()) {
    const routes = new Map<string, { route: RouteSpec; handler: Handler }>();
    for (const route of ROUTES) if (route.path === path) routes.set(route.method, { route, handler: handlerFor(ctx, route) });
    const allow = ['allow', methods.join(', ')] as const;
    app.any(uwsPattern(path), (res, req) => {
      const entry = routes.get(req.getCaseSensitiveMethod());
      const requestId = requestIdFrom(req.getHeader('x-request-id'));
      if (!entry) {
        refuse(res, req, requestId, 'method_not_allowed', allow);
        return;
      }
      // One pass over the headers: uWS accepts header blocks up to ~125 KiB and never answers 431 itself;
      // two Content-Length headers are a smuggling vector, two Authorization headers make "which one counts" a guess.
      const problem = headerProblem(req);
      if (problem !== null) {
        if (problem === 'too_large') refuse(res, req, requestId, 'headers_too_large', undefined, true);
        else refuse(res, req, requestId, 'invalid_request', undefined, true, `the ${problem} header appears more than once`);
        return;
      }
      if (!ctx.lifecycle.accepting && entry.route.kind !== 'live') {
        // Draining and the listen socket is closed: this came on a kept-alive connection; close it.
        refuse(res, req, requestId, 'shutting_down', undefined, true);
        return;
      }
      if (entry.route.auth === 'bearer' && !ctx.auth.accepts(req.getHeader('authorization'))) {
        // spec 000, Authentication: missing or invalid bearer token → 401.
        if (isProviderKind(entry.route.kind)) ctx.counters.record(401);
        ctx.metrics.requests.inc({ route: entry.route.path, model: 'unrouted', provider: 'none', status: '401' });
        refuse(res, req, requestId, 'invalid_api_key', WWW_AUTHENTICATE);
        return;
      }
      entry.handler(res, req, requestId);
    });
  }
  app.any('/*', (res, req) => refuse(res, req, requestIdFrom(req.getHeader('x-request-id')), 'route_not_found'));
  return app;
}

/** Answers an error before reading the body; the connection closes if a body is on its way, since it is never read. */
function refuse(
  res: HttpResponse,
  req: HttpRequest,
  requestId: string,
  code: 'method_not_allowed' | 'invalid_api_key' | 'route_not_found' | 'shutting_down' | 'invalid_request' | 'headers_too_large',
  extra?: readonly string[],
  close = false,
  message?: string,
): void {
  const length = req.getHeader('content-length');
  const bodyPending = (length !== '' && length !== '0') || req.getHeader('transfer-encoding') !== '';
  sendError({ res, requestId, aborted: false, started: false }, code, message, extra, close || bodyPending);
}

/** Node's default limit for a request's header block. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** `too_large` past MAX_HEADER_BYTES; the name of a header that must be single but repeats; else null. */
function headerProblem(req: HttpRequest): 'too_large' | 'Content-Length' | 'Authorization' | null {
  let size = 0;
  let lengths = 0;
  let auths = 0;
  req.forEach((key, value) => {
    size += key.length + value.length + 4;
    if (key === 'content-length') lengths++;
    else if (key === 'authorization') auths++;
  });
  if (size > MAX_HEADER_BYTES) return 'too_large';
  return lengths > 1 ? 'Content-Length' : auths > 1 ? 'Authorization' : null;
}

function handlerFor(ctx: FrontContext, route: RouteSpec): Handler {
  if (isProviderKind(route.kind)) return providerHandler(ctx, route, route.kind);
  const serve = operational(ctx, route.kind);
  return (res, req, requestId) => {
    const ex: Exchange = { res, requestId, aborted: false, started: false, onSent: (status) => ctx.metrics.requests.inc({ route: route.path, model: 'none', provider: 'none', status: String(status) }) };
    serve(ex, req, res);
  };
}

function operational(ctx: FrontContext, kind: Exclude<RouteKind, Operation>): (ex: Exchange, req: HttpRequest, res: HttpResponse) => void {
  switch (kind) {
    case 'live':
      return (ex) => ops.live(ex);
    case 'ready':
      return (ex, _req, res) => ops.healthReport(ctx, ex, res, 'readiness');
    case 'health':
      return (ex, _req, res) => ops.healthReport(ctx, ex, res, 'liveness');
    case 'status':
      return (ex) => ops.status(ctx, ex);
    case 'status_models':
      return (ex) => ops.statusModels(ctx, ex);
    case 'status_model':
      return (ex, req) => ops.statusModel(ctx, ex, req);
    case 'models':
      return (ex) => ops.models(ctx, ex);
    case 'model':
      return (ex, req) => ops.model(ctx, ex, req);
    case 'metrics':
      return (ex, _req, res) => ops.metrics(ctx, ex, res);
    case 'agent': {
      const body = JSON.stringify(agentDescription);
      return (ex) => send(ex, 200, 'application/json', body);
    }
    case 'manifest': {
      const body = JSON.stringify(buildManifest());
      return (ex) => send(ex, 200, 'application/json', body);
    }
    case 'docs': {
      const body = buildDocsHtml();
      return (ex) => send(ex, 200, 'text/html; charset=utf-8', body);
    }
  }
}
