/**
 * Errors answered before the body is read (CONTRACT.md, HTTP; issue 24, point 2): the
 * gateway reads and drops the rest of the body before answering, so a client still
 * sending sees the status and the JSON error instead of a broken pipe (RFC 9112 §9.6).
 * Before, a 413 or a 401 with a large body closed the connection under the client:
 * the openai SDK reported APIConnectionError and retried, re-uploading the body.
 */
import { APIError, AuthenticationError } from 'openai';
import http from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { raw, rawBodies, statusCodes } from './support/raw-http.js';
import { checkErrorBody, sendOnAfterAnswer, uploadTo } from './support/uploads.js';
import { LINGER_MAX_MS, LINGER_QUIET_MS } from '../src/front/body.js';
import { useGateway } from './support/gateway.js';
import { MARGIN_MS, sleep, until } from './support/waits.js';

const MiB = 1024 * 1024;
const { gw } = useGateway({ upstreams: 0, gateway: { workers: 1, env: { GATEWAY_MAX_BODY_BYTES: String(MiB) } } });

const chatOf = (bytes: number) => ({ model: 'mock-chat', messages: [{ role: 'user' as const, content: 'x'.repeat(bytes) }] });

describe('errors before the body is read', () => {
  it.each([2, 8, 16])('a %i MiB chat body over the limit: the SDK sees 413 body_too_large on every try, no connection error', async (mib) => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const err = await gw.client({ maxRetries: 0 }).chat.completions.create(chatOf(mib * MiB)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(APIError);
      expect((err as APIError).status).toBe(413);
      expect((err as APIError).error).toMatchObject({ code: 'body_too_large', type: 'gateway_error' });
    }
  });

  it('a wrong key with a 16 MiB body: AuthenticationError, not a broken pipe', async () => {
    const err = await gw.client({ apiKey: 'wrong', maxRetries: 0 }).chat.completions.create(chatOf(16 * MiB)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).error).toMatchObject({ code: 'invalid_api_key' });
  });

  it.each([
    ['413, Content-Length', '/v1/chat/completions', 'POST', 'sized', 413, 'body_too_large'],
    ['413, chunked', '/v1/chat/completions', 'POST', 'chunked', 413, 'body_too_large'],
    ['401', '/v1/embeddings', 'POST', 'sized', 401, 'invalid_api_key'],
    ['404', '/v1/nothing-here', 'POST', 'sized', 404, 'route_not_found'],
    ['405', '/health', 'POST', 'chunked', 405, 'method_not_allowed'],
  ] as const)('fetch, %s: the status and the JSON error arrive after 8 MiB were sent', async (_name, path, method, framing, status, code) => {
    const body = Buffer.alloc(8 * MiB, 'a');
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < body.length; i += MiB) controller.enqueue(body.subarray(i, i + MiB));
        controller.close();
      },
    });
    const res = await gw.fetch(path, {
      method,
      auth: status !== 401,
      body: framing === 'sized' ? body : stream,
      ...(framing === 'chunked' ? { duplex: 'half' } : {}),
    } as RequestInit & { auth: boolean });
    expect(res.status).toBe(status);
    expect(((await res.json()) as any).error).toMatchObject({ code });
  });

  it.each([
    ['413', `Authorization: Bearer KEY`, 413],
    ['401', 'Authorization: Bearer wrong', 401],
  ] as const)('%s while the body is still coming: nothing is answered, nothing closed, until the last byte; then the answer, and the connection stays open', async (_name, auth, status) => {
    const declared = 4 * MiB;
    const socket = net.connect(gw.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let out = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth.replace('KEY', gw.key)}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
    socket.write(Buffer.alloc(MiB, 'a'));
    // Nothing to wait on (the point is that no answer comes and nothing closes while the body is coming): the gateway has
    // read the first MiB well within this.
    await sleep(200);
    expect({ out, closed }).toEqual({ out: '', closed: false });
    socket.write(Buffer.alloc(declared - MiB, 'a'));
    await until(() => rawBodies(out).length === 1, 'the whole answer', 5000);
    expect(statusCodes(out)).toEqual([status]);
    expect(out.toLowerCase()).not.toContain('connection: close');
    // The same: nothing closes it after the answer (a keep-alive connection stays open).
    await sleep(100);
    expect(closed).toBe(false);
    socket.destroy();
  });

  it('the connection stays usable after a dropped body: a second request on it is served', async () => {
    const big = 'y'.repeat(2 * MiB);
    const request = (body: string) =>
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const small = JSON.stringify(chatOf(5));
    const result = await raw(gw.port, request(big) + request(small), 3000);
    expect(statusCodes(result.out)).toEqual([413, 200]);
  });
});

// Past the bound the answer goes out at once; the connection closes only once the client is quiet
// (src/front/body.ts, CutBody): a close under a client still sending makes its kernel reset the
// connection, and a reset can drop the answer before the client reads it (CI lost the 413 that way).
describe('past the discard bound (64 MiB)', () => {
  const head = (auth: string, framing: 'chunked' | 'declared', close: boolean) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\n` +
    (framing === 'chunked' ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${200 * MiB}\r\n`) +
    (close ? 'Connection: close\r\n' : '') +
    '\r\n';

  it.each([
    ['413, a chunked body', 'chunked', `Bearer KEY`, 413, 'body_too_large'],
    ['413, 200 MiB declared', 'declared', `Bearer KEY`, 413, 'body_too_large'],
    ['401, a chunked body', 'chunked', 'Bearer wrong', 401, 'invalid_api_key'],
  ] as const)('%s: a client that goes on sending for 300 ms after the answer reads all of it, gets no reset, and the connection closes once it is quiet', async (name, framing, auth, status, code) => {
    const r = await sendOnAfterAnswer(gw.port, head(auth.replace('KEY', gw.key), framing, true), 300, 10_000);
    expect(r.error, name).toBeNull();
    expect(r.closedByServer, name).toBe(true);
    expect(r.head, name).toMatch(new RegExp(`^http/1\\.1 ${status} `));
    expect(r.head, name).toContain('connection: close');
    expect(checkErrorBody(r.body ?? '', name).code).toBe(code);
    expect(r.bytesAfterAnswer, name).toBeGreaterThan(MiB);
    const quietFor = (r.msAnswerToClose ?? NaN) - (r.msAnswerToStop ?? NaN);
    expect(quietFor, name).toBeGreaterThanOrEqual(LINGER_QUIET_MS - 20);
    expect(quietFor, name).toBeLessThan(LINGER_QUIET_MS + MARGIN_MS);
  });

  it.each([
    ['413, a chunked body', 'chunked', `Bearer KEY`, 413, 'body_too_large'],
    ['413, 200 MiB declared', 'declared', `Bearer KEY`, 413, 'body_too_large'],
    ['401, a chunked body', 'chunked', 'Bearer wrong', 401, 'invalid_api_key'],
  ] as const)('%s, keep-alive: a client that sends until the answer is whole (as curl does) gets it whole at once, with Connection: close, and no reset', async (name, framing, auth, status, code) => {
    const r = await sendOnAfterAnswer(gw.port, head(auth.replace('KEY', gw.key), framing, false), 'until-whole', 10_000);
    expect(r.error, name).toBeNull();
    expect(r.head, name).toMatch(new RegExp(`^http/1\\.1 ${status} `));
    expect(r.head, name).toContain('connection: close');
    expect(r.head, name).toMatch(/content-length: \d+/);
    expect(checkErrorBody(r.body ?? '', name).code).toBe(code);
    // Whole at once: the client stopped within moments of the answer's first byte, long before any linger bound.
    expect(r.msAnswerToStop ?? Infinity, name).toBeLessThan(LINGER_QUIET_MS);
  });

  it('a client that never stops sending is cut off once the linger bound passes, its answer already sent', async () => {
    const r = await sendOnAfterAnswer(gw.port, head(`Bearer ${gw.key}`, 'chunked', true), Infinity, 10_000);
    expect(r.closedByServer).toBe(true);
    expect(r.head).toMatch(/^http\/1\.1 413 /);
    expect(r.msAnswerToClose).toBeGreaterThanOrEqual(LINGER_MAX_MS - 20);
    expect(r.msAnswerToClose).toBeLessThan(LINGER_MAX_MS + MARGIN_MS);
  });

  it('a keep-alive client gets the whole answer with Connection: close, and node:http then closes the connection', async () => {
    const r = await sendOnAfterAnswer(gw.port, head(`Bearer ${gw.key}`, 'declared', false), 0, 1500);
    expect(r.head).toMatch(/^http\/1\.1 413 /);
    expect(r.head).toContain('connection: close');
    expect(checkErrorBody(r.body ?? '', 'raw keep-alive').code).toBe('body_too_large');
    const agent = new http.Agent({ keepAlive: true });
    try {
      const upload = await uploadTo(gw.port, gw.key, '/v1/chat/completions', 100 * MiB, 'chunked', agent);
      expect(upload.status).toBe(413);
      expect(checkErrorBody(upload.body, 'node:http keep-alive').code).toBe('body_too_large');
      expect(upload.msResponseToClose).not.toBeNull();
    } finally {
      agent.destroy();
    }
  });
});
