/**
 * HTTP to OpenAI-compatible upstreams over undici's dispatcher API: one
 * keep-alive Pool per (origin, connect timeout), reused by every call of
 * this worker. Each way of failing maps to its own error code.
 */
import { Pool, type Dispatcher } from 'undici';
import type { Upstream } from '../protocol/config.js';
import { GatewayError, type ErrorCode } from '../src/errors.js';

const pools = new Map<string, Pool>();

function poolFor(origin: string, connectMs: number): Pool {
  const key = `${origin}|${connectMs}`;
  let pool = pools.get(key);
  if (!pool) {
    pool = new Pool(origin, { connect: { timeout: connectMs }, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });
    pools.set(key, pool);
  }
  return pool;
}

const targets = new Map<string, { origin: string; basePath: string }>();

function parseBase(apiBase: string): { origin: string; basePath: string } {
  let target = targets.get(apiBase);
  if (!target) {
    const url = new URL(apiBase);
    target = { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
    targets.set(apiBase, target);
  }
  return target;
}

/** One upstream call with the route's timeouts; `signal` ends it early (client gone or total timeout). */
export function upstreamRequest(
  upstream: Upstream,
  path: string,
  body: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Dispatcher.ResponseData> {
  if (upstream.apiBase === null) throw new GatewayError('internal_error', 'this provider has no api_base');
  const { origin, basePath } = parseBase(upstream.apiBase);
  const { connectMs, headersMs, idleMs } = upstream.timeouts;
  return poolFor(origin, connectMs).request({
    method: 'POST',
    path: basePath + path,
    headers,
    body,
    signal,
    headersTimeout: headersMs,
    bodyTimeout: idleMs,
  });
}

/** A GET for reachability checks (`/models`); costs the provider nothing billable. */
export function upstreamGet(apiBase: string, path: string, headers: Record<string, string>, signal: AbortSignal, timeoutMs: number): Promise<Dispatcher.ResponseData> {
  const { origin, basePath } = parseBase(apiBase);
  return poolFor(origin, timeoutMs).request({ method: 'GET', path: basePath + path, headers, signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

const CODES: Record<string, ErrorCode> = {
  UND_ERR_CONNECT_TIMEOUT: 'upstream_connect_timeout',
  UND_ERR_HEADERS_TIMEOUT: 'upstream_headers_timeout',
  UND_ERR_BODY_TIMEOUT: 'upstream_idle_timeout',
  ECONNREFUSED: 'upstream_unreachable',
  ENOTFOUND: 'upstream_unreachable',
  EAI_AGAIN: 'upstream_unreachable',
  EHOSTUNREACH: 'upstream_unreachable',
  ENETUNREACH: 'upstream_unreachable',
};

/**
 * Maps an undici or socket error to a gateway error. `answered` tells
 * whether response headers had arrived: a reset before them means the
 * provider could not be reached, after them that it broke off.
 */
export function toUpstreamError(err: unknown, answered: boolean): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: string } | null)?.code ?? '';
  const mapped = CODES[code];
  if (mapped) return new GatewayError(mapped);
  return new GatewayError(answered ? 'upstream_reset' : 'upstream_unreachable');
}

/** Drains and discards a body we do not forward, so the connection can be reused. */
export async function discard(body: Dispatcher.ResponseData['body']): Promise<void> {
  try {
    await body.dump({ limit: 64 * 1024 });
  } catch {
    // the connection is dropped instead; nothing to report
  }
}
