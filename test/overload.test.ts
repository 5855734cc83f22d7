/**
 * Overload: past `max_in_flight` provider requests, new ones are refused at
 * once with 503 `overloaded` and Retry-After, instead of queueing without
 * bound; capacity comes back as calls finish. On the Messages routes (and
 * any request with `anthropic-version`) the 503 is Anthropic's
 * `overloaded_error` (CONTRACT.md, Anthropic Messages API (inbound),
 * Errors), which the official SDK raises as its 5xx class.
 */
import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { TEST_KEY, useGateway, type TestGateway } from './support/gateway.js';

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

  it("the Messages routes at capacity: 503 overloaded_error in Anthropic's shape with Retry-After, at once, which the SDK (retries off) raises as InternalServerError; stream, count_tokens and a chat call carrying anthropic-version alike", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: TEST_KEY, maxRetries: 0 });
    const slow = Array.from({ length: 4 }, () => chat(gw, 'slow'));
    await expect.poll(() => gw.gateway.context.lifecycle.active.size, { timeout: 2000 }).toBe(4);
    const params = { model: 'fast', max_tokens: 16, messages: [{ role: 'user' as const, content: 'x' }] };
    const started = performance.now();
    const calls: Array<[string, Promise<unknown>]> = [
      ['create', client.messages.create(params)],
      ['stream', client.messages.stream(params).finalMessage()],
      ['count_tokens', client.messages.countTokens({ model: 'fast', messages: params.messages })],
    ];
    for (const [name, call] of calls) {
      const error = (await call.then(() => null, (e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(error, name).toBeInstanceOf(Anthropic.InternalServerError);
      expect(error.status, name).toBe(503);
      expect(error.error, name).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'the gateway is at capacity, retry shortly' }, request_id: expect.any(String) });
      expect(error.headers?.get('retry-after'), name).toBe('1');
      expect(error.requestID ?? (error.error as { request_id: string }).request_id, name).toBeTruthy();
    }
    expect(performance.now() - started).toBeLessThan(800);
    // CONTRACT.md: every error of a request carrying anthropic-version is in Anthropic's shape, whatever the route.
    const viaChat = await gw.fetch('/v1/chat/completions', { method: 'POST', headers: { 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'x' }] }) });
    expect(viaChat.status).toBe(503);
    expect(await viaChat.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    // Capacity back: the same SDK call is served.
    expect(await client.messages.create(params)).toMatchObject({ type: 'message', role: 'assistant' });
  });
});
