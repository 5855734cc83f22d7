/**
 * A 100 MB chunked body against the 64 MiB discard bound, on its own: in the parallel suite's load
 * the answer was lost three CI runs of four to the reset a close under a client still sending
 * makes (docs/RESILIENCE.md, the known gap); the stress suite runs its files one at a time.
 */
import { describe, expect, it } from 'vitest';
import { useGateway } from '../support/gateway.js';
import { checkErrorBody, uploadTo } from '../support/uploads.js';

const MiB = 1024 * 1024;
const HUNDRED_MB = 100 * MiB;
const CHAT = '/v1/chat/completions';

const { gw, upstream } = useGateway({ resetUpstreams: false });
const upload = (path: string, total: number, framing: 'content-length' | 'chunked') => uploadTo(gw.port, gw.key, path, total, framing);

describe('request size and framing', () => {
  // CONTRACT.md, HTTP: a refused body is read and dropped up to a bound (64 MiB) before the answer,
  // so a client that finishes within it reads the 413 (test/early-errors.test.ts); this one cannot.
  it('a 100 MB chunked body (no Content-Length) gets its 413 once 64 MiB of it are read and dropped, long before the end, and the connection closes', async () => {
    upstream.reset();
    const r = await upload(CHAT, HUNDRED_MB, 'chunked');
    console.info(`[figures] 100 MB chunked body: 413 after ${r.msToResponse.toFixed(1)} ms, ${(r.bytesWrittenAtResponse / MiB).toFixed(1)} MiB written by then, ${(r.bytesWrittenTotal / MiB).toFixed(1)} MiB in all; closed ${r.msResponseToClose?.toFixed(1)} ms after the answer`);
    expect(r.status).toBe(413);
    expect(checkErrorBody(r.body, 'chunked').code).toBe('body_too_large');
    expect(r.bytesWrittenAtResponse).toBeGreaterThanOrEqual(64 * MiB);
    expect(r.bytesWrittenTotal).toBeLessThan(80 * MiB);
    expect(r.msResponseToClose).not.toBeNull();
    expect(upstream.requests).toHaveLength(0);
  });
});
