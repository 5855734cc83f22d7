/**
 * A worker that dies mid-call (an adapter's async throw, or a thread exit):
 * the request it held gets 502 worker_crashed, the pool replaces the
 * worker, calls on the other worker complete, /health reports the restart.
 * An adapter that throws into its call (a bug) costs that call a 500 and
 * nothing else, and the log gets the cause under the request's id. A worker
 * stuck in a loop is stopped after 10 s of silence and replaced.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { chatBody } from './support/requests.js';
import { MARGIN_MS, until } from './support/waits.js';

/** The pool's defaults (src/supervisor/worker-pool.ts): a worker silent this long is stopped; pings go this often. */
const STALL_MS = 10_000;
const HEARTBEAT_MS = 1_000;

const yaml = `
model_list:
  - model_name: crash
    params: { model: mock/crash, mock_fault: crash }
  - model_name: exit
    params: { model: mock/exit, mock_fault: exit }
  - model_name: throw
    params: { model: mock/throw, mock_fault: throw }
  - model_name: hang
    params: { model: mock/hang, mock_fault: hang }
  - model_name: slow
    params: { model: mock/slow, mock_latency_ms: 400 }
  - model_name: fast
    params: { model: mock/fast }
`;

const chat = (gw: TestGateway, model: string) => gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody(model, {}, 'x') });

describe('worker crash', () => {
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  for (const fault of ['crash', 'exit'] as const) {
    it(`${fault}: the affected request gets 502 worker_crashed, other calls complete, the worker is replaced`, async () => {
      gw = await startTestGateway({ yaml, workers: 2 });
      // A slow call goes to one worker (least busy), the faulty call to the other.
      const slow = chat(gw, 'slow');
      const pool = gw.gateway.context.pool;
      await until(() => pool.stats().inFlight === 1, 'the slow call with a worker');
      const crashed = await chat(gw, fault);
      expect(crashed.status).toBe(502);
      expect(await crashed.json()).toMatchObject({ error: { type: 'gateway_error', code: 'worker_crashed' } });
      const survivor = await slow;
      expect(survivor.status).toBe(200);
      expect(pool.stats().restarts).toBe(1);
      // The replacement serves: enough calls to land on both workers.
      const after = await Promise.all(Array.from({ length: 6 }, () => chat(gw!, 'fast')));
      expect(after.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect((await pool.ping(2000)).every((ms) => ms !== null)).toBe(true);
      expect(pool.stats().inFlight).toBe(0);
      const health = (await (await gw.fetch('/health', { auth: false })).json()) as { checks: Array<{ name: string; status: string; reason?: string }> };
      const check = health.checks.find((c) => c.name === 'worker_pool');
      expect(check).toMatchObject({ status: 'degraded' });
      expect(check?.reason).toContain('1 worker restart');
      expect(gw.logs().some((l) => l.event === 'worker_died')).toBe(true);
    });
  }

  for (const workers of [1, 0]) {
    it(`an error thrown into a call (${workers === 0 ? 'inline' : '1 worker'}): the caller gets 500 internal_error and the generic message, the log the cause under the request id, redacted`, async () => {
      gw = await startTestGateway({ yaml, workers });
      const res = await chat(gw, 'throw');
      expect(res.status).toBe(500);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body).toMatchObject({ error: { type: 'gateway_error', code: 'internal_error', message: 'internal gateway error' } });
      expect(JSON.stringify(body)).not.toContain('mock_fault');
      const requestId = res.headers.get('x-request-id');
      expect(requestId).toMatch(/\S/);
      await expect.poll(() => gw!.logs().find((l) => l.event === 'internal_error')).toBeDefined();
      const line = gw.logs().find((l) => l.event === 'internal_error') as Record<string, unknown>;
      expect(line).toMatchObject({ level: 50, request_id: requestId });
      expect(line.error).toMatch(/^TypeError: mock_fault: throw \(injected\) with \[redacted\]$/);
      expect(String(line.stack)).toMatch(/^at /);
      expect(JSON.stringify(gw.logs())).not.toContain('sk-mockinjectedsecret');
      // Nothing else was hurt: no restart, the next call is served.
      expect(gw.gateway.context.pool.stats().restarts).toBe(0);
      expect((await chat(gw, 'fast')).status).toBe(200);
    });
  }

  it('a worker stuck in a loop: /ready turns 503 while it is silent; after 10 s it is stopped and replaced, its caller gets 502 worker_crashed, the other worker serves throughout', async () => {
    gw = await startTestGateway({ yaml, workers: 2 });
    const stuckAt = performance.now();
    const stuck = chat(gw, 'hang');
    await until(() => gw!.gateway.context.pool.stats().inFlight === 1, 'the hanging call with a worker');
    expect((await chat(gw, 'fast')).status).toBe(200);
    await expect.poll(async () => (await gw!.fetch('/ready', { auth: false })).status, { timeout: 8_000, interval: 500 }).toBe(503);
    const res = await stuck;
    // Stopped at the heartbeat that finds it silent for STALL_MS: within a beat of it (worker-pool.test has the timing at 1 s).
    const stoppedAfter = performance.now() - stuckAt;
    expect(stoppedAfter).toBeGreaterThanOrEqual(STALL_MS);
    expect(stoppedAfter).toBeLessThan(STALL_MS + HEARTBEAT_MS + MARGIN_MS);
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ error: { code: 'worker_crashed' } });
    const stalled = gw.logs().find((l) => l.event === 'worker_stalled') as Record<string, unknown> | undefined;
    expect(stalled?.silent_ms).toBeGreaterThanOrEqual(STALL_MS);
    expect(stalled?.silent_ms).toBeLessThan(STALL_MS + HEARTBEAT_MS + MARGIN_MS);
    await expect.poll(async () => (await gw!.fetch('/ready', { auth: false })).status, { timeout: 8_000, interval: 250 }).toBe(200);
    const after = await Promise.all(Array.from({ length: 4 }, () => chat(gw!, 'fast')));
    expect(after.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(gw.gateway.context.pool.stats().restarts).toBe(1);
  }, 40_000);
});
