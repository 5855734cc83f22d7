/**
 * With worker threads, whole answers up to a quarter of a worker's byte ring
 * reach the front in shared memory, lent until written to the client
 * (protocol/byte-ring.ts); larger ones, or ones the ring has no room for
 * yet, are handed over as before. Many concurrent answers of mixed sizes,
 * many times the ring's 1 MiB in flight, each arrive exactly as the upstream
 * sent them: no answer is overwritten by the next before it was written.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { UPSTREAM_KEY, useGatewayWithUpstream } from './support/gateway.js';

interface Ask {
  readonly input: string[];
  readonly dimensions: number;
  readonly encoding_format: 'float' | 'base64';
}

/** 64 requests from ~1 KB to ~3 MB of JSON answer (floats are ~20 bytes each, base64 ~5.3). */
function asks(): Ask[] {
  return Array.from({ length: 64 }, (_, i) => ({
    input: Array.from({ length: 1 + ((i * 7) % 32) }, (_, j) => `ring test ${i} input ${j}`),
    dimensions: [64, 512, 1536, 3072, 8192][i % 5] as number,
    encoding_format: i % 3 === 0 ? 'base64' : 'float',
  }));
}

describe('whole answers through a worker byte ring', () => {
  const { gw, upstream } = useGatewayWithUpstream(() => ({ workers: 1 }));

  it('64 concurrent embeddings answers of mixed sizes each arrive byte for byte as the upstream sent them, twice over', async () => {
    const viaGateway = gw.client({ maxRetries: 0 });
    const direct = new OpenAI({ apiKey: UPSTREAM_KEY, baseURL: upstream.url, maxRetries: 0 });
    const list = asks();
    const expected = await Promise.all(list.map((ask) => direct.embeddings.create({ model: 'fake-embed', ...ask })));
    const answerBytes = expected.reduce((n, e) => n + JSON.stringify(e).length, 0);
    expect(answerBytes).toBeGreaterThan(4 * 4 * 1024 * 1024);
    // Many answers are over the ring's largest record (256 KiB) and take the other way.
    expect(Math.max(...expected.map((e) => JSON.stringify(e).length))).toBeGreaterThan(2 * 1024 * 1024);

    for (let round = 0; round < 2; round++) {
      const got = await Promise.all(list.map((ask) => viaGateway.embeddings.create({ model: 'up-embed', ...ask })));
      got.forEach((answer, i) => {
        expect(answer.data).toEqual(expected[i]?.data);
        expect(answer.usage).toEqual(expected[i]?.usage);
      });
    }
    expect(gw.gateway.context.pool.stats().inFlight).toBe(0);
  });
});
