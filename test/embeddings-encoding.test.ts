/**
 * Embeddings with the `openai` SDK's defaults (issue 24, point 3): the SDK asks for
 * `encoding_format: "base64"` when its caller names none and decodes the answer as
 * little-endian float32. The mock provider must answer that form: as floats, each
 * vector decoded as base64 turned into a quarter as many zeros.
 */
import { describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';

const { gw } = useGateway({ upstreams: 0, gateway: { workers: 1 } });

describe('embeddings encoding_format', () => {
  it('the SDK default (base64) decodes to the float answer, to float32 precision', async () => {
    const client = gw.client();
    const input = ['first text', 'second, longer text'];
    const byDefault = await client.embeddings.create({ model: 'mock-embed', input });
    const asFloat = await client.embeddings.create({ model: 'mock-embed', input, encoding_format: 'float' });
    expect(byDefault.data.map((d) => d.index)).toEqual([0, 1]);
    for (const [i, item] of byDefault.data.entries()) {
      const floats = asFloat.data[i]?.embedding as number[];
      expect(floats).toHaveLength(8);
      expect(item.embedding).toHaveLength(8);
      item.embedding.forEach((value, j) => expect(value).toBeCloseTo(floats[j] as number, 6));
      expect(item.embedding.some((value) => value !== 0)).toBe(true);
    }
  });

  it('on the wire: base64 strings of little-endian float32 when asked, numbers otherwise', async () => {
    const res = await gw.fetch('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: 'mock-embed', input: 'x', encoding_format: 'base64' }) });
    expect(res.status).toBe(200);
    const encoded = ((await res.json()) as any).data[0].embedding;
    expect(typeof encoded).toBe('string');
    const bytes = Buffer.from(encoded, 'base64');
    expect(bytes.length).toBe(8 * 4);
    const plain: any = await (await gw.fetch('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: 'mock-embed', input: 'x' }) })).json();
    const floats = plain.data[0].embedding as number[];
    floats.forEach((value, j) => expect(bytes.readFloatLE(j * 4)).toBeCloseTo(value, 6));
  });

  it('an encoding_format that is neither float nor base64 is a 400 naming it', async () => {
    const res = await gw.fetch('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: 'mock-embed', input: 'x', encoding_format: 'int8' }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('encoding_format') });
  });
});
