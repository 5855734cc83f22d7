/**
 * GATEWAY_WORKERS=0: one worker session on the front thread, same protocol
 * over an in-thread channel. Everything a worker thread does still works.
 */
import { describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';

describe('inline mode (GATEWAY_WORKERS=0)', () => {
  const { gw, upstream } = useGateway({ gateway: { workers: 0 } });

  it('serves chat, streams and embeddings without worker threads', async () => {
    const client = gw.client();
    const chat = await client.chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'inline' }] });
    expect(chat.choices[0]?.message.content).toBe('echo: inline');
    const parts: string[] = [];
    for await (const chunk of await client.chat.completions.create({ model: 'mock-chat', stream: true, messages: [{ role: 'user', content: 'x' }] })) {
      parts.push(chunk.choices[0]?.delta.content ?? '');
    }
    expect(parts.join('')).toContain('mock reply');
    const embeddings = await client.embeddings.create({ model: 'up-embed', input: ['a', 'b'], encoding_format: 'float' });
    expect(embeddings.data.map((d) => d.index)).toEqual([0, 1]);
    const status = (await (await gw.fetch('/status', { auth: false })).json()) as { workers: number };
    expect(status.workers).toBe(0);
    expect(gw.gateway.context.pool.inline).toBe(true);
  });

  it('answers validation errors and health pings, and cancels upstream calls whose client left', async () => {
    const bad = await gw.fetch('/v1/chat/completions', { method: 'POST', body: '{"messages":[]}' });
    expect(bad.status).toBe(400);
    expect((await (await gw.fetch('/ready', { auth: false })).json()) as { status: string }).toMatchObject({ status: 'healthy' });
    upstream.behaveOnce({ kind: 'hang' });
    const controller = new AbortController();
    const pending = gw
      .fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'up-chat', messages: [{ role: 'user', content: 'x' }] }), signal: controller.signal })
      .catch(() => 'aborted');
    await upstream.waitFor(() => upstream.openRequests() === 1);
    controller.abort();
    expect(await pending).toBe('aborted');
    await upstream.waitFor(() => upstream.openRequests() === 0 && upstream.abortedRequests() === 1, 2000);
    expect(gw.gateway.context.pool.stats().inFlight).toBe(0);
  });
});
