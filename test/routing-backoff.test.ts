/**
 * CONTRACT.md, Routing for high volume: "A provider's Retry-After /
 * retry-after-ms is honoured." Through the real gateway (real worker
 * threads, and inline) in front of scripted deployments over real HTTP:
 * no request calls a deployment again before the wait it asked for, in
 * each of the header's forms; another deployment serves at once; a wait
 * over max_retry_wait or past the deadline is answered at once with the
 * wait left; a client that leaves stops the wait; an uncommitted stream
 * waits, a committed one never retries; the wait is in the access log.
 */
import { describe, expect, it } from 'vitest';
import type { LogLine } from './support/gateway-process.js';
import { chat, deploymentStates, startRouted, withRouted } from './support/routing.js';
import { sseData, streamedContent } from './support/sse.js';
import { deploymentYaml, type ScriptedDeployment, type ScriptedUpstream, type Step } from './support/scripted-upstream.js';

/** One deployment `solo` and nothing to fall back to; `router` adds router_settings keys. */
const lone = (router = '') => (up: ScriptedUpstream) => `
model_list:${deploymentYaml('chat', up.at('solo'))}
router_settings: { num_retries: 2${router} }
`;

/** How long after the first request the second reached the deployment, in ms. */
function gapMs(d: ScriptedDeployment): number {
  const [first, second] = d.received;
  if (first === undefined || second === undefined) throw new Error(`${d.name} received ${d.received.length} request(s), not 2`);
  return second.at - first.at;
}

/** How much later than asked a wait may end: a busy CI host's timers and one round trip. */
const LATE_MS = 600;

describe('a lone deployment: the second call arrives no earlier than its provider asked', () => {
  const forms: Array<{ name: string; step: () => Step; waitMs: number; status: number }> = [
    { name: '429 with Retry-After: 1 (seconds)', step: () => ({ kind: 'status', status: 429, retryAfter: '1' }), waitMs: 1000, status: 429 },
    { name: '503 with Retry-After: 2 (seconds)', step: () => ({ kind: 'status', status: 503, retryAfter: '2' }), waitMs: 2000, status: 503 },
    { name: '429 with retry-after-ms: 700', step: () => ({ kind: 'status', status: 429, headers: { 'retry-after-ms': '700' } }), waitMs: 700, status: 429 },
    { name: '503 with retry-after-ms: 400 beside Retry-After: 5 (the finer one wins)', step: () => ({ kind: 'status', status: 503, retryAfter: '5', headers: { 'retry-after-ms': '400' } }), waitMs: 400, status: 503 },
  ];
  for (const workers of [2, 0]) {
    describe(workers === 0 ? 'inline' : 'two worker threads', () => {
      it.each(forms)('$name', ({ step, waitMs, status }) =>
        withRouted(startRouted(['solo'], lone(), { workers }), async ({ gw, up }) => {
          const solo = up.at('solo');
          solo.script(step());
          const answer = await chat(gw, 'chat');
          expect(answer.status).toBe(200);
          expect(answer.routing).toEqual({ deployment: 'solo', attempts: '2', fallback: null });
          // The access line says how long the gateway waited and why (and, when the gap is short, what the first attempt met).
          const access = accessLines(gw.logs()).at(-1) as LogLine;
          const seen = `the access line: ${JSON.stringify(access)}; the deployment received: ${JSON.stringify(solo.received.map((r) => r.at))}`;
          expect(gapMs(solo), seen).toBeGreaterThanOrEqual(waitMs);
          expect(gapMs(solo), seen).toBeLessThan(waitMs + LATE_MS);
          console.info(`[figures] back-off, ${workers === 0 ? 'inline' : 'two workers'}, ${status} asking for ${waitMs} ms: the second call ${gapMs(solo).toFixed(1)} ms after the first`);
          expect(access).toMatchObject({ status: 200, attempts: 2, backoff_reason: `${status} Retry-After from solo` });
          // The gateway's own wait starts when it has read the answer and decided, a few ms into the pause it asked for.
          expect(access.backoff_ms).toBeGreaterThanOrEqual(waitMs - 50);
          expect(access.backoff_ms).toBeLessThan(waitMs + LATE_MS);
        }),
      );
    });
  }

  it('Retry-After as an HTTP date: no call before that date', () =>
    withRouted(startRouted(['solo'], lone()), async ({ gw, up }) => {
      const solo = up.at('solo');
      // An HTTP date has whole seconds: two seconds on from the next whole second.
      const at = (Math.floor(Date.now() / 1000) + 2) * 1000;
      solo.script({ kind: 'status', status: 429, retryAfter: new Date(at).toUTCString() });
      const answer = await chat(gw, 'chat');
      expect(answer.status).toBe(200);
      expect(solo.received[1]?.wall).toBeGreaterThanOrEqual(at);
      expect(solo.received[1]?.wall).toBeLessThan(at + LATE_MS);
    }));

  it('requests arriving during the wait, on every thread, wait for its end too; none reaches the deployment before it', () =>
    withRouted(startRouted(['solo'], lone(), { workers: 2 }), async ({ gw, up }) => {
      const solo = up.at('solo');
      solo.script({ kind: 'status', status: 429, retryAfter: '1' });
      const first = chat(gw, 'chat');
      await up.waitFor(() => solo.received.length === 1);
      // Eight more while the deployment backs off. The pool lends a call to the thread with the fewest in flight, and
      // the first is in flight on its thread while it waits: the next goes to the other thread, which knows of the
      // wait only through the shared state.
      await expect.poll(async () => (await deploymentStates(gw, 'chat')).solo?.backoff_remaining_ms).toBeGreaterThan(0);
      const during = await Promise.all(Array.from({ length: 8 }, () => chat(gw, 'chat')));
      expect((await first).status).toBe(200);
      expect(during.map((a) => a.status)).toEqual(Array(8).fill(200));
      expect(during.map((a) => a.routing.attempts)).toEqual(Array(8).fill('1'));
      const start = (solo.received[0] as { at: number }).at;
      expect(solo.received).toHaveLength(10);
      for (const r of solo.received.slice(1)) expect(r.at - start).toBeGreaterThanOrEqual(1000);
    }));
});

describe('another deployment serves at once', () => {
  const pair = (up: ScriptedUpstream) => `
model_list:${deploymentYaml('chat', up.at('east'), ', order: 1')}${deploymentYaml('chat', up.at('west'), ', order: 2')}
`;

  it('a 503 with Retry-After: 2 (not enough to cool it): west serves at once, and east gets nothing until its wait is over', () =>
    withRouted(startRouted(['east', 'west'], pair), async ({ gw, up }) => {
      const east = up.at('east');
      east.script({ kind: 'status', status: 503, retryAfter: '2' });
      const t0 = performance.now();
      const answer = await chat(gw, 'chat');
      expect(performance.now() - t0).toBeLessThan(LATE_MS);
      expect(answer.routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
      expect(accessLines(gw.logs()).at(-1)).not.toHaveProperty('backoff_ms');
      // east is first in order, but backs off: the next requests go to west until the wait is over.
      const state = (await deploymentStates(gw, 'chat')).east;
      expect(state).toMatchObject({ state: 'healthy', failures_last_minute: 1 });
      expect(state?.backoff_remaining_ms).toBeGreaterThan(1000);
      for (let i = 0; i < 3; i++) expect((await chat(gw, 'chat')).routing).toEqual({ deployment: 'west', attempts: '1', fallback: null });
      expect(east.received).toHaveLength(1);
      await expect.poll(async () => (await deploymentStates(gw, 'chat')).east?.backoff_remaining_ms, { timeout: 3000 }).toBe(0);
      expect((await chat(gw, 'chat')).routing).toEqual({ deployment: 'east', attempts: '1', fallback: null });
      expect(gapMs(east)).toBeGreaterThanOrEqual(2000);
    }));
});

describe('a wait that is not waited out: the caller gets the failure at once, with the wait left', () => {
  it('over max_retry_wait (default 10 s): a 429 with Retry-After: 30 is passed through at once; a request during the wait gets 429 rate_limited with the wait left', () =>
    withRouted(startRouted(['solo'], lone()), async ({ gw, up }) => {
      const solo = up.at('solo');
      solo.script({ kind: 'status', status: 429, retryAfter: '30' });
      let t0 = performance.now();
      const answer = await chat(gw, 'chat');
      expect(performance.now() - t0).toBeLessThan(LATE_MS);
      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toBe('30');
      expect(JSON.parse(answer.text).error.message).toBe('solo says 429');
      expect(answer.routing).toEqual({ deployment: 'solo', attempts: '1', fallback: null });
      t0 = performance.now();
      const during = await chat(gw, 'chat');
      expect(performance.now() - t0).toBeLessThan(LATE_MS);
      expect(during.status).toBe(429);
      expect(JSON.parse(during.text).error).toMatchObject({ code: 'rate_limited', type: 'gateway_error' });
      expect(Number(during.headers.get('retry-after'))).toBeGreaterThanOrEqual(29);
      expect(Number(during.headers.get('retry-after'))).toBeLessThanOrEqual(30);
      expect(during.routing).toEqual({ deployment: 'solo', attempts: '0', fallback: null });
      expect(solo.received).toHaveLength(1);
    }));

  it('over a max_retry_wait of 1: a 503 with Retry-After: 3 is a 502 at once with Retry-After: 3; a request during the wait, a 502 too', () =>
    withRouted(startRouted(['solo'], lone(', max_retry_wait: 1')), async ({ gw, up }) => {
      const solo = up.at('solo');
      solo.script({ kind: 'status', status: 503, retryAfter: '3' });
      const answer = await chat(gw, 'chat');
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text).error.code).toBe('upstream_error');
      expect(answer.headers.get('retry-after')).toBe('3');
      const during = await chat(gw, 'chat');
      expect(during.status).toBe(502);
      expect(JSON.parse(during.text).error).toMatchObject({ code: 'upstream_error', message: expect.stringContaining('asked for a pause (status 503)') as string });
      expect(Number(during.headers.get('retry-after'))).toBeGreaterThanOrEqual(2);
      expect(solo.received).toHaveLength(1);
    }));

  it("past the request's deadline (router_settings.timeout 1 s, Retry-After: 2): at once, with the provider's Retry-After", () =>
    withRouted(startRouted(['solo'], lone(', timeout: 1')), async ({ gw, up }) => {
      up.at('solo').script({ kind: 'status', status: 429, retryAfter: '2' });
      const t0 = performance.now();
      const answer = await chat(gw, 'chat');
      expect(performance.now() - t0).toBeLessThan(LATE_MS);
      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toBe('2');
      expect(up.at('solo').received).toHaveLength(1);
    }));

  it('num_retries 0: nothing is waited for, the provider answer goes back at once', () =>
    withRouted(startRouted(['solo'], (up) => `
model_list:${deploymentYaml('chat', up.at('solo'))}
router_settings: { num_retries: 0 }
`), async ({ gw, up }) => {
      up.at('solo').script({ kind: 'status', status: 429, retryAfter: '1' });
      const t0 = performance.now();
      const answer = await chat(gw, 'chat');
      expect(performance.now() - t0).toBeLessThan(LATE_MS);
      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toBe('1');
    }));
});

describe('the client and the stream', () => {
  it('a client that leaves during the wait stops it at once: nothing more reaches the deployment', () =>
    withRouted(startRouted(['solo'], lone()), async ({ gw, up }) => {
      const solo = up.at('solo');
      solo.script({ kind: 'status', status: 429, retryAfter: '2' });
      const leave = new AbortController();
      const request = chat(gw, 'chat', {}, { signal: leave.signal }).catch((err: unknown) => err);
      await up.waitFor(() => solo.received.length === 1);
      await expect.poll(async () => (await deploymentStates(gw, 'chat')).solo?.backoff_remaining_ms).toBeGreaterThan(0);
      leave.abort();
      expect(await request).toBeInstanceOf(Error);
      // The access line of the call that was left (499) comes at once, long before the wait's end.
      await expect.poll(() => accessLines(gw.logs()).map((l) => l.status), { timeout: 1000 }).toEqual([499]);
      expect((await deploymentStates(gw, 'chat')).solo?.in_flight).toBe(0);
      // Past the wait's end, still nothing was sent again.
      await expect.poll(async () => (await deploymentStates(gw, 'chat')).solo?.backoff_remaining_ms, { timeout: 3000 }).toBe(0);
      await new Promise((resolve) => setImmediate(resolve));
      expect(solo.received).toHaveLength(1);
    }));

  it('a stream not yet committed waits too: one clean stream from the second attempt', () =>
    withRouted(startRouted(['solo'], lone()), async ({ gw, up }) => {
      const solo = up.at('solo');
      solo.script({ kind: 'status', status: 429, retryAfter: '1' });
      const answer = await chat(gw, 'chat', { stream: true });
      expect(answer.status).toBe(200);
      expect(answer.routing).toEqual({ deployment: 'solo', attempts: '2', fallback: null });
      expect(streamedContent(answer.text)).toBe('from solo');
      expect(sseData(answer.text).filter((e) => e.startsWith('{"error"'))).toEqual([]);
      expect(gapMs(solo)).toBeGreaterThanOrEqual(1000);
      expect(accessLines(gw.logs()).at(-1)).toMatchObject({ stream: true, backoff_reason: '429 Retry-After from solo' });
    }));

  it('a committed stream that breaks is never retried: one error event, one call', () =>
    withRouted(startRouted(['solo'], lone()), async ({ gw, up }) => {
      up.at('solo').script({ kind: 'reset-after-content' });
      const answer = await chat(gw, 'chat', { stream: true });
      expect(answer.status).toBe(200);
      const events = sseData(answer.text);
      expect(events.filter((e) => e.startsWith('{"error"'))).toHaveLength(1);
      expect(up.at('solo').received).toHaveLength(1);
    }));
});

function accessLines(lines: LogLine[]): LogLine[] {
  return lines.filter((l) => l.event === 'access');
}
