/**
 * Upstream reachability for the optional `upstream:<origin>` health checks:
 * the route's provider's own free probe (a model list: `GET /models` with
 * Bearer for `openai`, `GET /openai/models?api-version=…` with `api-key`
 * for `azure`, `GET /v1/models` with `x-api-key` for `anthropic`, a signed
 * `GET /async-invoke` for `bedrock`), never a completion or anything a
 * provider bills for.
 */
import type { ProbeFrame, ProbedFrame } from '../protocol/frames.js';
import { toUpstreamError, upstreamExchange, UpstreamExchange } from './upstream-http.js';
import { PROVIDERS } from './providers/index.js';

/** A model list is small; a longer body is cut off (the status is all a probe needs). */
const MAX_PROBE_BODY_BYTES = 256 * 1024;
const ignoreActivity = { headersArrived() {}, chunkArrived() {} };

export async function probeUpstream(frame: ProbeFrame): Promise<ProbedFrame> {
  const { upstream } = frame;
  let request;
  try {
    request = upstream.apiBase === null ? null : await PROVIDERS[upstream.provider].probe(upstream);
  } catch (err) {
    // A probe that cannot be made (bedrock signs its own): no request, and nothing of the error's detail.
    return { t: 'probed', id: frame.id, status: null, error: `the probe request could not be made (${(err as Error).name})` };
  }
  if (upstream.apiBase === null || request === null) return { t: 'probed', id: frame.id, status: null, error: 'this provider has nothing to reach' };
  const exchange = new UpstreamExchange(MAX_PROBE_BODY_BYTES, ignoreActivity);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    exchange.abort(new Error('probe timeout'));
  }, frame.timeoutMs);
  try {
    upstreamExchange(upstream.apiBase, upstream.connectTo, frame.timeoutMs, 'GET', request.path, null, request.headers, exchange);
    const { status } = await exchange.head;
    // Read to the end so the connection is kept for the next probe; a body cut off changes nothing.
    await exchange.body.catch(() => undefined);
    return { t: 'probed', id: frame.id, status, error: null };
  } catch (err) {
    const reason = timedOut ? `no answer within ${frame.timeoutMs} ms` : toUpstreamError(err, false).message;
    return { t: 'probed', id: frame.id, status: null, error: reason };
  } finally {
    clearTimeout(timer);
  }
}
