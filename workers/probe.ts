/**
 * Upstream reachability for the optional `upstream:<origin>` health checks:
 * a `GET <api_base>/models`, never a completion or anything a provider
 * bills for.
 */
import type { ProbeFrame, ProbedFrame } from '../protocol/frames.js';
import { toUpstreamError, upstreamGet } from './upstream-http.js';

export async function probeUpstream(frame: ProbeFrame): Promise<ProbedFrame> {
  const signal = AbortSignal.timeout(frame.timeoutMs);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (frame.apiKey) headers.authorization = `Bearer ${frame.apiKey}`;
  try {
    const res = await upstreamGet(frame.apiBase, '/models', headers, signal, frame.timeoutMs);
    await res.body.dump({ limit: 256 * 1024 }).catch(() => undefined);
    return { t: 'probed', id: frame.id, status: res.statusCode, error: null };
  } catch (err) {
    const reason = signal.aborted ? `no answer within ${frame.timeoutMs} ms` : toUpstreamError(err, false).message;
    return { t: 'probed', id: frame.id, status: null, error: reason };
  }
}
