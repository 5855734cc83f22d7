/**
 * Upstream reachability for the optional `upstream:<origin>` health checks:
 * a `GET <api_base>/models`, never a completion or anything a provider
 * bills for.
 */
import type { ProbeFrame, ProbedFrame } from '../protocol/frames.js';
import { toUpstreamError, upstreamExchange, UpstreamExchange } from './upstream-http.js';

/** A model list is small; a longer body is cut off (the status is all a probe needs). */
const MAX_PROBE_BODY_BYTES = 256 * 1024;
const ignoreActivity = { headersArrived() {}, chunkArrived() {} };

export async function probeUpstream(frame: ProbeFrame): Promise<ProbedFrame> {
  const exchange = new UpstreamExchange(MAX_PROBE_BODY_BYTES, ignoreActivity);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    exchange.abort(new Error('probe timeout'));
  }, frame.timeoutMs);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (frame.apiKey) headers.authorization = `Bearer ${frame.apiKey}`;
  try {
    upstreamExchange(frame.apiBase, frame.timeoutMs, 'GET', '/models', null, headers, exchange);
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
