/**
 * Overload: past `max_in_flight` provider requests, new ones are refused at
 * once with 503 `overloaded` and Retry-After, instead of queueing without
 * bound; capacity comes back as calls finish.
 */
import { describe, expect, it } from 'vitest';
import { useGateway, type TestGateway } from './support/gateway.js';

const yaml = `
model_list:
  - model_name: slow
    params: { model: mock/slow, mock_latency_ms: 800 }
  - model_name: fast
    params: { model: mock/fast }
`;

const chat = (gw: TestGateway, model: string) =>
  gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }) });

describe('overload', () => {
  const { gw } = useGateway({ upstreams: 0, gateway: { yaml, env: { GATEWAY_MAX_IN_FLIGHT: '4' } } });

  it('answers 503 overloaded with Retry-After at once past max_in_flight, then recovers', async () => {
    const slow = Array.from({ length: 4 }, () => chat(gw, 'slow'));
    await expect.poll(() => gw.gateway.context.lifecycle.active.size, { timeout: 2000 }).toBe(4);
    const started = performance.now();
    const refused = await chat(gw, 'fast');
    const refusedMs = performance.now() - started;
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ error: { type: 'gateway_error', code: 'overloaded' } });
    expect(refusedMs).toBeLessThan(200);
    console.log(`overload 503 answered in ${refusedMs.toFixed(2)} ms`);
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect((await chat(gw, 'fast')).status).toBe(200);
    const status = (await (await gw.fetch('/status', { auth: false })).json()) as { requests: { in_flight: number } };
    expect(status.requests.in_flight).toBe(0);
  });

  it('probes and status still answer while overloaded', async () => {
    const slow = Array.from({ length: 4 }, () => chat(gw, 'slow'));
    await expect.poll(() => gw.gateway.context.lifecycle.active.size, { timeout: 2000 }).toBe(4);
    expect((await gw.fetch('/health/live', { auth: false })).status).toBe(200);
    expect((await gw.fetch('/status', { auth: false })).status).toBe(200);
    expect((await gw.fetch('/v1/models')).status).toBe(200);
    await Promise.all(slow);
  });
});
