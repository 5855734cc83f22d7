/**
 * The uWS app, built from the route table: one handler per path that
 * checks the method (405 with `Allow`), the bearer token (401), makes the
 * request id, then calls the route's handler. Anything else is a 404.
 */
import uws from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { FrontContext } from './context.js';
import { agentDescription, buildDocsHtml, buildManifest } from '../discovery/agent.js';
import { discardBody } from './body.js';
import { asksToClose, send, sendError, type Exchange } from './http.js';
import * as ops from './operational.js';
import { providerHandler } from './proxy.js';
import { requestIdFrom } from './request-id.js';
import { ROUTES, isProviderKind, methodsByPath, uwsPattern, type RouteKind, type RouteSpec } from './routes.js';
import type { Operation } from '../../protocol/frames.js';
import { refusal } from '../tracing/tracing.js';

type Handler = (res: HttpResponse, req: HttpRequest, requestId: string) => void;

/** Whether the uWS native binary loaded; the package silently falls back to a slow pure-JS server otherwise. */
export const UWS_NATIVE: boolean = typeof (uws as unknown as { getParts?: unknown }).getParts === 'function';

const WWW_AUTHENTICATE = ['www-authenticate', 'Bearer'] as const;
/** A request speaking Anthropic's API may send its key either way. */
const ANTHROPIC_KEY_MESSAGE = 'invalid or missing API key: send a gateway key in x-api-key or Authorization: Bearer';

export function buildApp(ctx: FrontContext): TemplatedApp {
  const app = uws.App();
  for (const [path, methods] of methodsByPath()) {
    const routes = new Map<string, { route: RouteSpec; handler: Handler }>();
    for (const route of ROUTES) if (route.path === path) routes.set(route.method, { route, handler: handlerFor(ctx, route) });
    const allow = ['allow', methods.join(', ')] as const;
    // A Messages path answers every error in Anthropic's shape; any other, a request that carries anthropic-version.
    const anthropicPath = ROUTES.some((route) => route.path === path && route.auth === 'anthropic');
    app.any(uwsPattern(path), (res, req) => {
      const requestId = requestIdFrom(req.getHeader('x-request-id'));
      const anthropic = anthropicPath || req.getHeader('anthropic-version') !== '';
      if (refusedHeaders(res, req, requestId, anthropic)) return;
      const entry = routes.get(req.getCaseSensitiveMethod());
      if (!entry) {
        refuse(res, req, requestId, 'method_not_allowed', allow, false, undefined, anthropic);
        return;
      }
      if (!ctx.lifecycle.accepting && entry.route.kind !== 'live') {
        // Draining and the listen socket is closed: this came on a kept-alive connection; close it.
        refuse(res, req, requestId, 'shutting_down', undefined, true, undefined, anthropic);
        return;
      }
      const auth = entry.route.auth;
      // CONTRACT.md, Anthropic Messages API (inbound), Auth: x-api-key or a bearer token, on the Messages
      // routes and on any request carrying anthropic-version (which the Anthropic SDKs always send).
      const refused =
        auth === 'none' ? false : anthropic ? !ctx.auth.acceptsEither(req.getHeader('authorization'), req.getHeader('x-api-key')) : !ctx.auth.accepts(req.getHeader('authorization'));
      if (refused) {
        // spec 000, Authentication: missing or invalid bearer token → 401.
        if (isProviderKind(entry.route.kind)) {
          ctx.counters.record(401);
          // CONTRACT.md, Tracing: a refused request gets its server span too.
          if (ctx.tracing !== null) ctx.tracing.begin(req, entry.route.kind, entry.route.path, requestId).end(refusal(401, 'invalid_api_key'));
        }
        ctx.metrics.requests.inc({ route: entry.route.path, model: 'unrouted', provider: 'none', status: '401' });
        refuse(res, req, requestId, 'invalid_api_key', WWW_AUTHENTICATE, false, anthropic ? ANTHROPIC_KEY_MESSAGE : undefined, anthropic);
        return;
      }
      entry.handler(res, req, requestId);
    });
  }
  app.any('/*', (res, req) => {
    const requestId = requestIdFrom(req.getHeader('x-request-id'));
    const anthropic = req.getHeader('anthropic-version') !== '';
    if (!refusedHeaders(res, req, requestId, anthropic)) refuse(res, req, requestId, 'route_not_found', undefined, false, undefined, anthropic);
  });
  return app;
}

/**
 * Answers a request whose header block is refused, whatever its route: one
 * pass over the headers. uWS accepts header blocks up to ~125 KiB and never
 * answers 431 itself; two Authorization headers make "which one counts" a
 * guess; framing errors are smuggling vectors. True when it answered.
 */
function refusedHeaders(res: HttpResponse, req: HttpRequest, requestId: string, anthropic: boolean): boolean {
  const problem = headerProblem(req);
  if (problem === null) return false;
  if (problem === 'too_large') refuse(res, req, requestId, 'headers_too_large', undefined, true, undefined, anthropic);
  else if (problem === 'two_authorizations') refuse(res, req, requestId, 'invalid_request', undefined, true, 'the Authorization header appears more than once', anthropic);
  else refuseFraming(res, requestId, problem.framing, anthropic);
  return true;
}

/**
 * Answers an error without reading the body. A body on its way is read and
 * dropped first (body.ts, `discardBody`), so the client sees the answer; past
 * the discard bounds the answer goes out at once and the connection closes once
 * the client is quiet (CutBody). `close`: the connection closes after the
 * answer whatever the body did.
 */
function refuse(
  res: HttpResponse,
  req: HttpRequest,
  requestId: string,
  code: 'method_not_allowed' | 'invalid_api_key' | 'route_not_found' | 'shutting_down' | 'invalid_request' | 'headers_too_large',
  extra?: readonly string[],
  close = false,
  message?: string,
  anthropic = false,
): void {
  const length = req.getHeader('content-length');
  const bodyPending = (length !== '' && length !== '0') || req.getHeader('transfer-encoding') !== '';
  const ex: Exchange = { res, requestId, aborted: false, started: false, closeAsked: asksToClose(req), anthropic };
  const after = close ? 'close' : 'keep';
  if (!bodyPending) {
    sendError(ex, code, message, extra, after);
    return;
  }
  res.onAborted(() => (ex.aborted = true));
  // A framing error never gets here: this length is plain digits (headerProblem).
  discardBody(res, length === '' ? null : Number(length), (cut) => sendError(ex, code, message, extra, cut ?? after));
}

/** Node's default limit for a request's header block. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** RFC 9112 §6.2: Content-Length = 1*DIGIT (uWS has trimmed the whitespace around it). */
const DIGITS = /^[0-9]+$/;

type HeaderProblem = 'too_large' | 'two_authorizations' | { readonly framing: string };

/**
 * `too_large` past MAX_HEADER_BYTES; two Authorization headers; a framing
 * error (RFC 9112 §6.3: the body's length cannot be known) with its message;
 * else null. uWS frames any Transfer-Encoding as chunked (gzip included),
 * unlike a proxy in front of it may. It closes Content-Length with
 * Transfer-Encoding, and most malformed lengths, before any handler runs;
 * those checks stay in case a build lets one through.
 */
function headerProblem(req: HttpRequest): HeaderProblem | null {
  let size = 0;
  let lengths = 0;
  let validLength = true;
  let codings = 0;
  let chunked = true;
  let auths = 0;
  req.forEach((key, value) => {
    size += key.length + value.length + 4;
    if (key === 'content-length') {
      lengths++;
      validLength &&= DIGITS.test(value) && Number.isSafeInteger(Number(value));
    } else if (key === 'transfer-encoding') {
      codings++;
      chunked &&= value.toLowerCase() === 'chunked';
    } else if (key === 'authorization') auths++;
  });
  if (size > MAX_HEADER_BYTES) return 'too_large';
  if (lengths > 1) return { framing: 'the Content-Length header appears more than once' };
  if (!validLength) return { framing: 'invalid Content-Length' };
  if (lengths > 0 && codings > 0) return { framing: 'Content-Length and Transfer-Encoding together' };
  if (codings > 1 || !chunked) return { framing: 'Transfer-Encoding must be chunked, once' };
  return auths > 1 ? 'two_authorizations' : null;
}

/**
 * Answers a framing error: 400, then the connection closes and nothing
 * after it on the connection is parsed or served (RFC 9112 §6.3). Not in
 * this handler: uWS runs every request already read before it acts on a
 * close, and an answer written here waits in its cork buffer until then,
 * so a request pipelined behind this one would be served (and `res.close()`
 * here drops the unsent answer). On the next turn instead: a request that
 * arrives while an answer is pending makes uWS close the connection before
 * parsing it, so the 400 goes out only when nothing followed in time.
 */
function refuseFraming(res: HttpResponse, requestId: string, message: string, anthropic: boolean): void {
  const ex: Exchange = { res, requestId, aborted: false, started: false, anthropic };
  res.onAborted(() => (ex.aborted = true));
  setImmediate(() => sendError(ex, 'invalid_request', message, undefined, 'close'));
}

function handlerFor(ctx: FrontContext, route: RouteSpec): Handler {
  if (isProviderKind(route.kind)) return providerHandler(ctx, route, route.kind);
  const serve = operational(ctx, route.kind);
  return (res, req, requestId) => {
    const onSent = (status: number) => ctx.metrics.requests.inc({ route: route.path, model: 'none', provider: 'none', status: String(status) });
    const ex: Exchange = { res, requestId, aborted: false, started: false, onSent, anthropic: req.getHeader('anthropic-version') !== '' };
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
