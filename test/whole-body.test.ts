/**
 * A whole (non-streamed) answer that undici reads in many pieces: inline it
 * is written piece by piece under one Content-Length (uWS tryEnd, resumed as
 * the socket drains); with a worker thread the pieces are joined for the
 * hop. Either way a client that reads slowly gets every byte, in order, and
 * its connection stays usable.
 */
import { request as httpRequest, Agent } from 'node:http';
import { describe, expect, it } from 'vitest';
import { useGateway, type TestGateway } from './support/gateway.js';

const BYTES = 16 * 1024 * 1024;

/** POSTs a chat on `agent`, waits `pauseMs` after the headers before reading, and returns status, headers and body. */
function slowChat(gw: TestGateway, agent: Agent, pauseMs: number): Promise<{ status: number; length: string | undefined; body: Buffer }> {
  const url = new URL('/v1/chat/completions', gw.url);
  const payload = JSON.stringify({ model: 'up-chat', messages: [{ role: 'user', content: 'big' }] });
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', agent, headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json' } }, (res) => {
      res.pause();
      setTimeout(() => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, length: res.headers['content-length'], body: Buffer.concat(chunks) }));
        res.on('error', reject);
        res.resume();
      }, pauseMs);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

for (const workers of [0, 1]) {
  describe(`a 16 MiB answer read slowly (${workers === 0 ? 'inline' : 'one worker thread'})`, () => {
    const { gw, upstream } = useGateway({ gateway: { workers } });

    it('arrives whole and in order under its Content-Length, and the connection serves the next request', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        upstream.behaveOnce({ kind: 'huge', bytes: BYTES });
        // Paused long enough for the socket buffers to fill: the rest is written as the client drains them.
        const big = await slowChat(gw, agent, 400);
        expect(big.status).toBe(200);
        expect(big.length).toBe(String(BYTES));
        expect(big.body.length).toBe(BYTES);
        // Pieces out of order or repeated would break the JSON (the filler sits between a prefix and a suffix).
        const json = JSON.parse(big.body.toString('utf8')) as { choices: Array<{ message: { content: string } }>; usage: unknown };
        expect(json.choices[0]?.message.content).toMatch(/^x+$/);
        expect(json.usage).toEqual({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });

        const next = await slowChat(gw, agent, 0);
        expect(next.status).toBe(200);
        expect((JSON.parse(next.body.toString('utf8')) as { choices: unknown[] }).choices).toHaveLength(1);
        expect(gw.gateway.context.pool.stats().inFlight).toBe(0);
      } finally {
        agent.destroy();
      }
    });

    it('two answers written at once to slow clients each arrive whole (the buffer pieces are joined in is reused)', async () => {
      const sizes = [BYTES, BYTES - 1024 * 1024, 900_000, 700_000];
      for (const bytes of sizes) upstream.behaveOnce({ kind: 'huge', bytes });
      const agents = sizes.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
      try {
        const answers = await Promise.all(agents.map((agent) => slowChat(gw, agent, 300)));
        expect(answers.map((a) => a.body.length).sort((x, y) => y - x)).toEqual(sizes);
        for (const a of answers) {
          expect(a.length).toBe(String(a.body.length));
          const json = JSON.parse(a.body.toString('utf8')) as { choices: Array<{ message: { content: string } }> };
          expect(json.choices[0]?.message.content).toMatch(/^x+$/);
        }
      } finally {
        for (const agent of agents) agent.destroy();
      }
    });

    it('a client that leaves half-way through it does not stop the gateway', async () => {
      upstream.behaveOnce({ kind: 'huge', bytes: BYTES });
      const url = new URL('/v1/chat/completions', gw.url);
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest(url, { method: 'POST', headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json' } }, (res) => {
          let got = 0;
          res.on('data', (c: Buffer) => {
            got += c.length;
            // Gone after the first megabyte, with most of the answer still to be written.
            if (got > 1024 * 1024) {
              res.destroy();
              resolve();
            }
          });
        });
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'up-chat', messages: [{ role: 'user', content: 'big' }] }));
      });
      const after = await slowChat(gw, new Agent(), 0);
      expect(after.status).toBe(200);
      expect(gw.gateway.context.pool.stats().inFlight).toBe(0);
    });
  });
}
