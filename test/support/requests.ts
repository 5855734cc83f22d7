/**
 * What the tests send most (issue 34, point 6: one helper for each thing): a chat request's
 * body, and the liveness probe, asked (`live`) or asserted (`expectLive`).
 */
import { expect } from 'vitest';
import type { GatewayEndpoint } from './gateway.js';

/**
 * A chat request's JSON body: `model`, one user message saying `content`, and `extra` on top.
 *
 * @example
 * gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody('up-chat', { stream: true }) });
 */
export function chatBody(model: string, extra: Record<string, unknown> = {}, content = 'hi'): string {
  return JSON.stringify({ model, messages: [{ role: 'user', content }], ...extra });
}

/** Whether `path` (the liveness probe by default) answers 200 on `port` within a second; false while nothing listens there. */
export async function live(port: number, path = '/health/live'): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** The gateway's liveness probe answers 200 `{"object":"health","status":"ok"}` within `timeoutMs`. */
export async function expectLive(gw: GatewayEndpoint, context = 'liveness', timeoutMs = 2000): Promise<void> {
  const res = await gw.fetch('/health/live', { auth: false, signal: AbortSignal.timeout(timeoutMs) });
  expect(res.status, context).toBe(200);
  expect(await res.json(), context).toEqual({ object: 'health', status: 'ok' });
}
