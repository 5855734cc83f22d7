/**
 * A worker that dies mid-call (an adapter's async throw, or a thread exit):
 * the request it held gets 502 worker_crashed, the pool replaces the
 * worker, calls on the other worker complete, /health reports the restart.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';

const yaml = `
model_list:
  - model_name: crash
    params: { model: mock/crash, mock_fault: crash }
  - model_name: exit
    params: { model: mock/exit, mock_fault: exit }
  - model_name: slow
    params: { model: mock/slow, mock_latency_ms: 400 }
  - model_name: fast
    params: { model: mock/fast }
`;

const chat = (gw: TestGateway, model: string) =>
  gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }) });

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
      await new Promise((r) => setTimeout(r, 50));
      const crashed = await chat(gw, fault);
      expect(crashed.status).toBe(502);
      expect(await crashed.json()).toMatchObject({ error: { type: 'gateway_error', code: 'worker_crashed' } });
      const survivor = await slow;
      expect(survivor.status).toBe(200);
      const pool = gw.gateway.context.pool;
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
});
