/**
 * Resilience, "clients": clients that leave mid-body or mid-call, slow-loris
 * and stalled clients, and pipelining, against the real gateway (uWS front,
 * real worker threads) and the fake upstream. Disconnects mid-stream and
 * before the upstream answered (chat, upstream-backed) are in
 * streaming.test.ts; this file adds the request-body phase, embeddings, and
 * the mock provider. 2,000 idle keep-alive connections:
 * test/stress/connections.test.ts (`npm run test:stress`).
 * Results and figures: docs/RESILIENCE.md.
 */
import http from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { CHAT, EMBED, MiB, percentile, useClientGateway } from './support/client-gateway.js';
import { expectNoKeyLeak } from './support/gateway.js';
import { raw, rawBodies, statusCodes, UWS_IDLE_CLOSE_MS } from './support/raw-http.js';
import { parseSse } from './support/sse.js';
import { chatBody, expectLive } from './support/requests.js';
import { MARGIN_MS, sleep, until } from './support/waits.js';

const { upstream, gw, inFlight, expectIdle, timedChat } = useClientGateway();

// ───────────────────────── disconnects ─────────────────────────

describe('clients that leave', () => {
  /** Sends headers and part of a body, waits, then destroys the socket. */
  async function leaveMidBody(path: string, body: string, framing: 'content-length' | 'chunked'): Promise<void> {
    const socket = net.connect(gw.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const half = body.slice(0, Math.floor(body.length / 2));
    const framingHeader = framing === 'content-length' ? `Content-Length: ${Buffer.byteLength(body)}` : 'Transfer-Encoding: chunked';
    const payload = framing === 'content-length' ? half : `${Buffer.byteLength(half).toString(16)}\r\n${half}\r\n`;
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Type: application/json\r\n${framingHeader}\r\n\r\n${payload}`);
    let answered = '';
    socket.on('data', (d: Buffer) => (answered += d.toString('latin1')));
    // Nothing to wait on: the point is that no answer comes while the body is incomplete (no timeout of the gateway's ends it).
    await sleep(100);
    expect(answered, 'nothing is answered to half a body').toBe('');
    socket.destroy();
  }

  it('a client that sends half a body (Content-Length or chunked) and leaves: nothing in flight, nothing sent upstream, one 499 access line each', async () => {
    const before = gw.rawLogs.length;
    const chat = chatBody('up-chat', {}, 'x'.repeat(50_000));
    const embed = JSON.stringify({ model: 'up-embed', input: ['y'.repeat(50_000)] });
    for (const framing of ['content-length', 'chunked'] as const) {
      await leaveMidBody(CHAT, chat, framing);
      await leaveMidBody(EMBED, embed, framing);
    }
    await expectIdle('after half bodies', 1000);
    // Each one is done once its access line is written; the front calls no worker before the whole body is in.
    const access = await until(() => {
      const lines = gw.rawLogs.slice(before).filter((l) => l.includes('"event":"access"'));
      return lines.length >= 4 && lines;
    }, 'the four access lines', 1000);
    expect(upstream.requests).toHaveLength(0);
    expect(upstream.openRequests()).toBe(0);
    expect(access).toHaveLength(4);
    for (const line of access) expect(JSON.parse(line)).toMatchObject({ status: 499, bytes_in: 0, model: 'unrouted' });
  });

  it('an upload abandoned after 4 MiB (chunked, under the limit) frees everything; a declared 100 MB one is refused at once', async () => {
    const socket = net.connect(gw.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // A 100 MB Content-Length is refused at once (413, with Connection: close for the client to act on); a chunked upload under the limit is what can be abandoned.
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    const sentAt = performance.now();
    socket.write(`POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Length: ${100 * MiB}\r\n\r\n`);
    await until(() => rawBodies(out).length === 1, 'the whole 413', MARGIN_MS);
    expect(performance.now() - sentAt).toBeLessThan(MARGIN_MS);
    expect(statusCodes(out)).toEqual([413]);
    expect(out).toMatch(/^connection: close\r$/im);
    socket.destroy();
    const chunked = net.connect(gw.port, '127.0.0.1');
    chunked.on('error', () => undefined);
    await new Promise<void>((resolve) => chunked.once('connect', () => resolve()));
    chunked.write(`POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const piece = Buffer.alloc(256 * 1024, 0x61);
    for (let sent = 0; sent < 4 * MiB; sent += piece.length) {
      chunked.write(`${piece.length.toString(16)}\r\n`);
      chunked.write(piece);
      if (!chunked.write('\r\n')) await new Promise((r) => chunked.once('drain', r));
    }
    // Pacing, not a wait for an event: the gateway reads what the kernel still holds of the upload before the client leaves (nothing reports that read).
    await sleep(100);
    chunked.destroy();
    await expectIdle('after the abandoned upload', 1000);
    expect(upstream.requests).toHaveLength(0);
  });

  it('an embeddings client that leaves while the upstream has not answered cancels the upstream request', async () => {
    upstream.behave({ kind: 'hang' });
    const body = JSON.stringify({ model: 'up-embed', input: ['a', 'b'] });
    const req = http.request({ host: '127.0.0.1', port: gw.port, path: EMBED, method: 'POST', agent: false, headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    req.on('error', () => undefined);
    req.end(body);
    await upstream.waitFor(() => upstream.requests.length === 1 && upstream.openRequests() === 1, 2000);
    expect(inFlight().pool).toBe(1);
    const t0 = performance.now();
    req.destroy();
    // At once: the cancel is a frame to the worker, which aborts its upstream request.
    await upstream.waitFor(() => upstream.abortedRequests() === 1 && upstream.openRequests() === 0, MARGIN_MS);
    expect(performance.now() - t0).toBeLessThan(MARGIN_MS);
    await expectIdle('after the embeddings cancel', 1000);
    upstream.behave({ kind: 'ok' });
    const ok = await gw.fetch(EMBED, { method: 'POST', body });
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
  });

  it('a client that leaves a mock stream mid-way, or a slow mock call before it answers, frees its slot and stream at once', async () => {
    // Mid-stream (mock provider: 200 chunks, 20 ms apart).
    const body = chatBody('mock-slow-stream', { stream: true }, 'stream please');
    const req = http.request({ host: '127.0.0.1', port: gw.port, path: CHAT, method: 'POST', agent: false, headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    req.on('error', () => undefined);
    req.end(body);
    const res = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    expect(res.statusCode).toBe(200);
    await new Promise<void>((resolve) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
        if (parseSse(text).events.length >= 3) resolve();
      });
    });
    expect(inFlight()).toEqual({ pool: 1, counters: 1, streams: 1 });
    req.destroy();
    await expectIdle('after leaving the mock stream', 500);
    // Before the answer (mock latency 5 s).
    const slow = chatBody('mock-slow', {}, 'slow');
    const req2 = http.request({ host: '127.0.0.1', port: gw.port, path: CHAT, method: 'POST', agent: false, headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(slow) } });
    req2.on('error', () => undefined);
    req2.end(slow);
    await until(() => inFlight().pool === 1, 'the slow call is in flight', 1000);
    req2.destroy();
    await expectIdle('after leaving the slow mock call', 500);
    // The workers serve the next call.
    expect(await timedChat()).toBeLessThan(1000);
  });
});

// ───────────────────────── slow and stalled clients ─────────────────────────

describe('slow-loris and stalled clients', () => {
  interface Held {
    name: string;
    closedAfterMs: number | null;
    bytesSent: number;
    answer: string;
  }

  /** Opens a connection and feeds it `next()` every `everyMs` until the server closes it (or 20 s). */
  function hold(name: string, first: string, next: (() => string) | null, everyMs = 1000): Promise<Held> {
    return new Promise((resolve) => {
      const socket = net.connect(gw.port, '127.0.0.1');
      const t0 = performance.now();
      let bytesSent = 0;
      let answer = '';
      let closedAfterMs: number | null = null;
      let timer: NodeJS.Timeout | undefined;
      const giveUp = setTimeout(() => socket.destroy(), 20_000);
      socket.on('connect', () => {
        if (first) {
          socket.write(first);
          bytesSent += first.length;
        }
        if (next)
          timer = setInterval(() => {
            const piece = next();
            socket.write(piece);
            bytesSent += piece.length;
          }, everyMs);
      });
      socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('end', () => {
        closedAfterMs = performance.now() - t0;
      });
      socket.on('close', () => {
        closedAfterMs ??= performance.now() - t0;
        clearInterval(timer);
        clearTimeout(giveUp);
        // Closed by us at 20 s: report it as not closed by the server.
        resolve({ name, closedAfterMs: closedAfterMs >= 19_900 ? null : closedAfterMs, bytesSent, answer });
      });
    });
  }

  it('uWS closes a slow-loris (one header byte a second), a stalled body and an idle connection by its idle timeout (8-12 s); other clients are served meanwhile', async () => {
    const request = `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(200)}\r\n`;
    let i = 0;
    const byteByByte = () => request[i++ % request.length] as string;
    let h = 0;
    const headerByHeader = () => `X-Slow-${h++}: v\r\n`;
    const held = Promise.all([
      hold('slow-loris, a header byte every second', '', byteByByte),
      hold('slow-loris, a header line every second', 'GET /health/live HTTP/1.1\r\nHost: x\r\n', headerByHeader),
      hold('stalled body (Content-Length 1000, 2 bytes sent)', `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Length: 1000\r\n\r\n{"`, null),
      hold('chunked body, one byte a second', `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nTransfer-Encoding: chunked\r\n\r\n`, () => '1\r\n \r\n'),
      hold('idle connection, nothing sent', '', null),
    ]);
    // Meanwhile: normal traffic on other connections.
    const latencies: number[] = [];
    let done = false;
    void held.then(() => (done = true));
    while (!done) {
      latencies.push(await timedChat());
      await expectLive(gw, 'meanwhile', 1000);
      // Pacing the other traffic: a request every 200 ms or so while the slow clients are held.
      await sleep(200);
    }
    const results = await held;
    const summary = results.map((r) => `${r.name}: closed after ${r.closedAfterMs === null ? 'never' : (r.closedAfterMs / 1000).toFixed(1) + ' s'} (${r.bytesSent} bytes sent, answer ${JSON.stringify(statusCodes(r.answer))})`).join('; ');
    console.info(`[figures] slow clients: ${summary}; ${latencies.length} chats meanwhile, p50 ${percentile(latencies, 50).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`);
    for (const r of results) {
      expect(r.closedAfterMs, summary).not.toBeNull();
      expect(r.closedAfterMs as number, summary).toBeGreaterThan(UWS_IDLE_CLOSE_MS.min);
      expect(r.closedAfterMs as number, summary).toBeLessThan(UWS_IDLE_CLOSE_MS.max);
      expect(statusCodes(r.answer), summary).toEqual([]);
    }
    expect(latencies.length).toBeGreaterThan(10);
    expect(Math.max(...latencies)).toBeLessThan(1000);
  }, 25_000);
});

// ───────────────────────── pipelining ─────────────────────────

describe('pipelining', () => {
  /** Writes `payload` in one write and collects everything until the server closes (or 3 s). */
  const pipeline = (payload: string) => raw(gw.port, payload, 3000);
  const ids = (out: string): string[] => [...out.matchAll(/x-request-id: (\S+)/g)].map((m) => m[1] as string);
  const get = (id: string, path: string, close = false) => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Request-ID: ${id}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
  const post = (id: string, path: string, body: string, close = false) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nX-Request-ID: ${id}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${close ? 'Connection: close\r\n' : ''}\r\n${body}`;

  it('three requests answered on the front thread (probe, 404, unauthenticated POST) in one write: all answered, in order', async () => {
    const r = await pipeline(get('one', '/health/live') + get('two', '/nope') + `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nX-Request-ID: three\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    expect(statusCodes(r.out)).toEqual([200, 404, 401]);
    expect(ids(r.out)).toEqual(['one', 'two', 'three']);
  });

  it('three provider requests (chat, embeddings, chat) in one write: never a wrong or out-of-order answer, the connection closes, nothing leaks', async () => {
    // uWS closes a connection that pipelines a request behind one still being answered asynchronously
    // (every provider route is); answers already sent are whole and in order. Documented in docs/RESILIENCE.md.
    const chat = chatBody('mock-chat', {}, 'one');
    const embedBody = JSON.stringify({ model: 'mock-embed', input: 'two' });
    const r = await pipeline(post('p1', CHAT, chat) + post('p2', EMBED, embedBody) + post('p3', CHAT, chat, true));
    const answered = ids(r.out);
    expect(['p1', 'p2', 'p3'].slice(0, answered.length)).toEqual(answered);
    expect(statusCodes(r.out).every((s) => s === 200)).toBe(true);
    expect(r.closedByServer).toBe(true);
    await expect.poll(() => gw.gateway.context.pool.stats().inFlight, { timeout: 2000 }).toBe(0);
    expect(gw.gateway.context.counters.inFlight).toBe(0);
  });
});

// ───────────────────────── after the run ─────────────────────────

describe('after this file\'s run', () => {
  it('neither key appears (raw, URL-encoded, base64, hex) in any log line, /metrics, /status, /status/models or the probes', async () => {
    await expectNoKeyLeak(gw);
  });
});
