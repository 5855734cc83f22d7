import { describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';

describe('smoke: the openai SDK through the gateway', () => {
  const { gw, upstream } = useGateway();

  it('chat through an upstream alias rewrites model and returns the provider answer', async () => {
    const out = await gw.client().chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'hi there' }] });
    expect(out.choices[0]?.message.content).toBe('echo: hi there');
    const seen = upstream.requests.at(-1);
    expect(seen?.path).toBe('/v1/chat/completions');
    expect((seen?.json as { model: string }).model).toBe('fake-model');
  });

  it('streams from the upstream', async () => {
    const stream = await gw.client().chat.completions.create({ model: 'up-chat', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const parts: string[] = [];
    for await (const chunk of stream) parts.push(chunk.choices[0]?.delta.content ?? '');
    expect(parts.join('')).toBe('tok0 tok1 tok2 ');
  });
});
