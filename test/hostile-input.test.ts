/**
 * Resilience, "bad input": hostile bodies, framing lies, hostile headers and
 * property-based fuzzing of every route in the route table, against the real
 * gateway (uWS front, real worker threads, default 8 MiB body limit) and the
 * fake upstream. Every case checks the status and the error body
 * `{error:{message,type,code}}`, that nothing hangs, and that the gateway
 * still answers /health/live and has nothing left in flight afterwards.
 * Results and figures: docs/RESILIENCE.md.
 */
import http from 'node:http';
import { raw, rawBodies, statusCodes, UWS_IDLE_CLOSE_MS } from './support/raw-http.js';
import { MAX_JSON_DEPTH } from '../protocol/request-body.js';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ROUTES, methodsByPath, type RouteSpec } from '../src/front/routes.js';
import { expectNoKeyLeak, useGateway } from './support/gateway.js';
import { chatBody, expectLive } from './support/requests.js';
import { checkErrorBody, uploadTo, type ErrorObject } from './support/uploads.js';
import { errorTypeOf as anthropicErrorTypeOf } from '../protocol/anthropic-errors.js';
import { MARGIN_MS, sleep, until } from './support/waits.js';

// ───────────────────────── helpers ─────────────────────────

const MiB = 1024 * 1024;
const CHAT = '/v1/chat/completions';
const EMBED = '/v1/embeddings';

type Json = Record<string, unknown>;

/** Asserts a gateway-made error response: status, JSON content type, exact body shape, code. */
async function expectError(res: Response, status: number, code: string, context = ''): Promise<ErrorObject> {
  const text = await res.text();
  expect({ status: res.status, body: text.slice(0, 300) }, context).toMatchObject({ status });
  expect(res.headers.get('content-type') ?? '', context).toMatch(/^application\/json/);
  const error = checkErrorBody(text, context);
  expect(error.code, context).toBe(code);
  return error;
}


const nestedArrays = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const nestedObjects = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

// ───────────────────────── the shared gateway ─────────────────────────

const { gw, upstream } = useGateway({ resetUpstreams: false });

/** After every case: liveness answers and nothing is left in flight. */
async function expectHealthy(context = 'after the case'): Promise<void> {
  await expectLive(gw, context);
  await until(() => gw.gateway.context.pool.stats().inFlight === 0 && gw.gateway.context.counters.inFlight === 0, `${context}: in-flight back to 0`, 3000);
  expect(gw.gateway.context.pool.stats().restarts, context).toBe(0);
}

afterEach(async () => {
  await expectHealthy();
});

const post = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Response> =>
  gw.fetch(path, { method: 'POST', body, headers, signal: AbortSignal.timeout(10_000) });

// ───────────────────────── 1. bodies ─────────────────────────

describe('malformed bodies on chat and embeddings', () => {
  const routes = [CHAT, EMBED] as const;

  const notJson: Array<[string, string | Buffer]> = [
    ['empty', ''],
    ['not JSON', 'hello, gateway'],
    ['truncated JSON', '{"model":"mock-chat","messages":[{"role":"user","content":"hel'],
    ['a lone brace', '{'],
    ['trailing garbage', '{"model":"mock-chat"} xyz'],
    ['NaN literal', '{"model":"mock-chat","n":NaN}'],
    ['single quotes', "{'model':'mock-chat'}"],
    ['invalid UTF-8 (0xff 0xfe)', Buffer.concat([Buffer.from('{"model":"mock-chat","messages":[{"role":"user","content":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')])],
    ['invalid UTF-8 (overlong "/")', Buffer.concat([Buffer.from('{"model":"mock-embed","input":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')])],
    ['invalid UTF-8 (encoded surrogate)', Buffer.concat([Buffer.from('{"model":"mock-embed","input":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')])],
    ['invalid UTF-8 (truncated sequence at the end)', Buffer.concat([Buffer.from('{"model":"mock-embed","input":"x"}'), Buffer.from([0xe2, 0x82])])],
  ];
  it.each(routes)('%s: empty, not JSON, truncated and invalid UTF-8 bodies → 400 invalid_json', async (path) => {
    for (const [name, body] of notJson) await expectError(await post(path, body), 400, 'invalid_json', `${path} ${name}`);
  });

  const notObject: Array<[string, string]> = [
    ['array', '[]'],
    ['array of a valid request', `[${chatBody('mock-chat', {}, 'hello')}]`],
    ['string', '"mock-chat"'],
    ['number', '42'],
    ['null', 'null'],
    ['true', 'true'],
  ];
  it.each(routes)('%s: a JSON array, string, number, boolean or null instead of an object → 400 invalid_body', async (path) => {
    for (const [name, body] of notObject) await expectError(await post(path, body), 400, 'invalid_body', `${path} ${name}`);
  });

  it('10,000 levels of nesting as the whole body, or inside messages, are answered with a 400, not a crash', async () => {
    const depth = 10_000;
    for (const path of routes) {
      await expectError(await post(path, nestedArrays(depth)), 400, 'invalid_body', `${path} nested arrays as the body`);
      await expectError(await post(path, nestedObjects(depth)), 400, 'invalid_request', `${path} nested objects as the body`);
    }
    await expectError(await post(CHAT, `{"model":"mock-chat","messages":${nestedArrays(depth)}}`), 400, 'invalid_request', 'messages: nested arrays');
    await expectError(await post(CHAT, `{"model":"mock-chat","messages":[${nestedObjects(depth)}]}`), 400, 'invalid_request', 'messages[0]: nested objects');
    await expectError(await post(CHAT, `{"model":"mock-chat","messages":[{"role":"user","content":${nestedObjects(depth)}}]}`), 400, 'invalid_request', 'content: nested objects');
    await expectError(await post(EMBED, `{"model":"mock-embed","input":${nestedArrays(depth)}}`), 400, 'invalid_request', 'input: nested arrays');
  });

  it('nesting up to MAX_JSON_DEPTH is served by the mock and the upstream; 10,000 levels are a 400 naming the limit, and nothing reaches the upstream', async () => {
    const depth = MAX_JSON_DEPTH - 3; // the body object, messages array and message object are three levels
    for (const model of ['mock-chat', 'up-chat']) {
      const res = await post(CHAT, `{"model":"${model}","messages":[{"role":"user","content":${nestedArrays(depth)}}]}`);
      expect(res.status, model).toBe(200);
      expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
    }
    // Unknown fields are forwarded untouched, up to the limit.
    const ok = await post(CHAT, `{"model":"up-chat","extra":${nestedArrays(MAX_JSON_DEPTH - 1)},"messages":[{"role":"user","content":"hi"}]}`);
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    const before = upstream.requests.length;
    for (const body of [
      `{"model":"up-chat","messages":[{"role":"user","content":${nestedArrays(10_000)}}]}`,
      `{"model":"up-chat","extra":${nestedArrays(10_000)},"messages":[{"role":"user","content":"hi"}]}`,
      `{"model":"up-chat","extra":${nestedArrays(MAX_JSON_DEPTH)},"messages":[{"role":"user","content":"hi"}]}`,
    ]) {
      const res = await post(CHAT, body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { type: 'gateway_error', code: 'invalid_request', message: `the body is nested deeper than ${MAX_JSON_DEPTH} levels` } });
    }
    expect(upstream.requests.length).toBe(before);
  });

  it('100,000 levels of arrays inside a schema-valid field (200 KB, far under the limit) are a 4xx or a 200, never a 500', async () => {
    const depth = 100_000;
    const cases: Array<[string, string]> = [
      ['mock-chat content', `{"model":"mock-chat","messages":[{"role":"user","content":${nestedArrays(depth)}}]}`],
      ['mock-chat content, stream', `{"model":"mock-chat","stream":true,"messages":[{"role":"user","content":${nestedArrays(depth)}}]}`],
      ['up-chat content', `{"model":"up-chat","messages":[{"role":"user","content":${nestedArrays(depth)}}]}`],
      ['up-chat unknown field', `{"model":"up-chat","extra":${nestedArrays(depth)},"messages":[{"role":"user","content":"hi"}]}`],
    ];
    const seen: string[] = [];
    for (const [name, body] of cases) {
      const res = await post(CHAT, body);
      const text = await res.text();
      seen.push(`${name}: ${res.status} ${text.slice(0, 120)}`);
      if (res.status !== 200) checkErrorBody(text, name);
    }
    for (const line of seen) expect(line, seen.join('\n')).toMatch(/: (200|400|413) /);
  });

  describe('wrong types for every known field → 400 invalid_request naming the field', () => {
    const m = [{ role: 'user', content: 'hi' }];
    const chatCases: Array<[string, Json, string]> = [
      ['model: number', { model: 42, messages: m }, 'model'],
      ['model: null', { model: null, messages: m }, 'model'],
      ['model: empty string', { model: '', messages: m }, 'model'],
      ['model: array', { model: ['mock-chat'], messages: m }, 'model'],
      ['model: object', { model: { name: 'mock-chat' }, messages: m }, 'model'],
      ['model: boolean', { model: true, messages: m }, 'model'],
      ['model: missing', { messages: m }, 'model'],
      ['messages: string', { model: 'mock-chat', messages: 'hi' }, 'messages'],
      ['messages: object', { model: 'mock-chat', messages: { role: 'user', content: 'hi' } }, 'messages'],
      ['messages: null', { model: 'mock-chat', messages: null }, 'messages'],
      ['messages: empty', { model: 'mock-chat', messages: [] }, 'messages'],
      ['messages: missing', { model: 'mock-chat' }, 'messages'],
      ['messages[0]: string', { model: 'mock-chat', messages: ['hi'] }, 'messages[0]'],
      ['messages[0]: null', { model: 'mock-chat', messages: [null] }, 'messages[0]'],
      ['messages[1]: number', { model: 'mock-chat', messages: [...m, 7] }, 'messages[1]'],
      ['role: number', { model: 'mock-chat', messages: [{ role: 1, content: 'x' }] }, 'messages[0].role'],
      ['role: null', { model: 'mock-chat', messages: [{ role: null, content: 'x' }] }, 'messages[0].role'],
      ['role: empty', { model: 'mock-chat', messages: [{ role: '', content: 'x' }] }, 'messages[0].role'],
      ['role: object', { model: 'mock-chat', messages: [{ role: { r: 'user' }, content: 'x' }] }, 'messages[0].role'],
      ['role: missing', { model: 'mock-chat', messages: [{ content: 'x' }] }, 'messages[0].role'],
      ['content: number', { model: 'mock-chat', messages: [{ role: 'user', content: 5 }] }, 'messages[0].content'],
      ['content: object', { model: 'mock-chat', messages: [{ role: 'user', content: { text: 'x' } }] }, 'messages[0].content'],
      ['content: boolean', { model: 'mock-chat', messages: [{ role: 'user', content: true }] }, 'messages[0].content'],
      ['stream: "true"', { model: 'mock-chat', messages: m, stream: 'true' }, 'stream'],
      ['stream: 1', { model: 'mock-chat', messages: m, stream: 1 }, 'stream'],
      ['stream: object', { model: 'mock-chat', messages: m, stream: {} }, 'stream'],
      ['stream: null', { model: 'mock-chat', messages: m, stream: null }, 'stream'],
    ];
    const embedCases: Array<[string, Json, string]> = [
      ['model: number', { model: 5, input: 'x' }, 'model'],
      ['model: null', { model: null, input: 'x' }, 'model'],
      ['model: empty', { model: '', input: 'x' }, 'model'],
      ['model: missing', { input: 'x' }, 'model'],
      ['input: number', { model: 'mock-embed', input: 5 }, 'input'],
      ['input: null', { model: 'mock-embed', input: null }, 'input'],
      ['input: boolean', { model: 'mock-embed', input: true }, 'input'],
      ['input: object', { model: 'mock-embed', input: { text: 'x' } }, 'input'],
      ['input: empty array', { model: 'mock-embed', input: [] }, 'input'],
      ['input: mixed array', { model: 'mock-embed', input: ['a', 1] }, 'input'],
      ['input: float tokens', { model: 'mock-embed', input: [1.5] }, 'input'],
      ['input: negative tokens', { model: 'mock-embed', input: [-1] }, 'input'],
      ['input: missing', { model: 'mock-embed' }, 'input'],
    ];

    it('chat: model, messages, messages[i], role, content, stream', async () => {
      for (const [name, body, field] of chatCases) {
        const error = await expectError(await post(CHAT, JSON.stringify(body)), 400, 'invalid_request', `chat ${name}`);
        expect(error.message, `chat ${name}`).toContain(`"${field}`);
      }
    });

    it('embeddings: model, input', async () => {
      for (const [name, body, field] of embedCases) {
        const error = await expectError(await post(EMBED, JSON.stringify(body)), 400, 'invalid_request', `embeddings ${name}`);
        expect(error.message, `embeddings ${name}`).toContain(`"${field}`);
      }
    });

    it('a field that is present with the wrong type is not reported as missing', async () => {
      const present: Array<[string, string, Json]> = [
        [CHAT, 'model: 42', { model: 42, messages: m }],
        [CHAT, 'messages: "hi"', { model: 'mock-chat', messages: 'hi' }],
        [CHAT, 'role: 1', { model: 'mock-chat', messages: [{ role: 1, content: 'x' }] }],
        [CHAT, 'stream: "true"', { model: 'mock-chat', messages: m, stream: 'true' }],
        [EMBED, 'model: 5', { model: 5, input: 'x' }],
      ];
      const messages: string[] = [];
      for (const [path, name, body] of present) {
        const error = await expectError(await post(path, JSON.stringify(body)), 400, 'invalid_request', name);
        messages.push(`${name} → ${error.message}`);
      }
      for (const line of messages) expect(line, messages.join('\n')).not.toMatch(/is required/);
    });
  });

  it('100,000 small messages (3 MB, within the limit) and 100,000 embedding inputs are served', async () => {
    const messages = Array.from({ length: 100_000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' }));
    const body = JSON.stringify({ model: 'mock-chat', messages });
    expect(Buffer.byteLength(body)).toBeLessThan(8 * MiB);
    const t0 = performance.now();
    const res = await post(CHAT, body);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
    const streamed = await post(CHAT, JSON.stringify({ model: 'mock-chat', stream: true, messages }));
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('data: [DONE]');
    const inputs = Array.from({ length: 100_000 }, (_, i) => `w${i}`);
    const emb = await post(EMBED, JSON.stringify({ model: 'mock-embed', input: inputs }));
    expect(emb.status).toBe(200);
    const json = (await emb.json()) as { data: unknown[] };
    expect(json.data).toHaveLength(100_000);
    expect(performance.now() - t0).toBeLessThan(10_000);
  });
});

// ───────────────────────── 1b. size and framing ─────────────────────────

/** `total` bytes of body to the gateway under test (support/uploads.ts). */
const upload = (path: string, total: number, framing: 'content-length' | 'chunked') => uploadTo(gw.port, gw.key, path, total, framing);

describe('request size and framing', () => {
  const HUNDRED_MB = 100 * 1024 * 1024;

  it('a 100 MB body declared by Content-Length gets its 413 before the body is sent, and the connection closes', async () => {
    upstream.reset();
    for (const path of [CHAT, EMBED]) {
      const r = await upload(path, HUNDRED_MB, 'content-length');
      console.info(`[figures] 100 MB Content-Length body to ${path}: 413 after ${r.msToResponse.toFixed(1)} ms, ${r.bytesWrittenAtResponse} bytes written by then, ${r.bytesWrittenTotal} in all; closed ${r.msResponseToClose?.toFixed(1)} ms after the answer`);
      expect(r.status).toBe(413);
      expect(checkErrorBody(r.body, path).code).toBe('body_too_large');
      expect(r.bytesWrittenTotal).toBeLessThan(HUNDRED_MB / 10);
      expect(r.msResponseToClose).not.toBeNull();
      // At once: the answer to the headers, whatever the body does.
      expect(r.msToResponse).toBeLessThan(MARGIN_MS);
    }
    expect(upstream.requests).toHaveLength(0);
  });

  // CONTRACT.md, HTTP: a refused body is read and dropped up to a bound (64 MiB) before the answer,
  // so a client that finishes within it reads the 413 (test/early-errors.test.ts); this one cannot.
  // Past the bound the connection closes once the client is quiet (early-errors › past the discard bound).
  it('a 100 MB chunked body (no Content-Length) gets its 413 once 64 MiB of it are read and dropped, long before the end, and the connection closes', async () => {
    upstream.reset();
    const r = await upload(CHAT, HUNDRED_MB, 'chunked');
    console.info(`[figures] 100 MB chunked body: 413 after ${r.msToResponse.toFixed(1)} ms, ${(r.bytesWrittenAtResponse / MiB).toFixed(1)} MiB written by then, ${(r.bytesWrittenTotal / MiB).toFixed(1)} MiB in all; closed ${r.msResponseToClose?.toFixed(1)} ms after the answer`);
    expect(r.status).toBe(413);
    expect(checkErrorBody(r.body, 'chunked').code).toBe('body_too_large');
    expect(r.bytesWrittenAtResponse).toBeGreaterThanOrEqual(64 * MiB);
    expect(r.bytesWrittenTotal).toBeLessThan(80 * MiB);
    expect(r.msResponseToClose).not.toBeNull();
    expect(upstream.requests).toHaveLength(0);
  });

  it('Content-Length declaring more than is sent: the gateway waits without holding a slot; the client gives up after 1 s and nothing stays in flight', async () => {
    upstream.reset();
    const before = gw.rawLogs.length;
    for (const model of ['mock-chat', 'up-chat']) {
      const partial = `{"model":"${model}","messages":[{"role":"user","content":"hel`;
      const r = await raw(gw.port, `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n${partial}`, 1000);
      expect(r.closedByServer, model).toBe(false);
      expect(r.out, model).toBe('');
    }
    await until(() => gw.gateway.context.counters.inFlight === 0 && gw.gateway.context.pool.stats().inFlight === 0, 'in-flight 0', 2000);
    expect(upstream.requests).toHaveLength(0);
    expect(upstream.openRequests()).toBe(0);
    // Each abandoned request is logged once as 499 (the client left first).
    const abandoned = gw.rawLogs.slice(before).filter((l) => l.includes('"event":"access"') && l.includes('"status":499'));
    expect(abandoned).toHaveLength(2);
  });

  it('Content-Length declaring less than sent, the rest a second request: never a wrong answer, the connection closes, nothing leaks', async () => {
    // uWS refuses a request pipelined behind one whose answer is still pending (provider routes answer
    // asynchronously): it closes the connection. Documented in docs/RESILIENCE.md; clients retry on a new one.
    const r = await raw(gw.port, `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Length: 2\r\n\r\n{}GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 3000);
    const statuses = statusCodes(r.out);
    expect(statuses.every((s) => s === 400), r.out.slice(0, 300)).toBe(true);
    for (const body of rawBodies(r.out)) expect(checkErrorBody(body, 'declared').code).toBe('invalid_request');
    expect(r.closedByServer).toBe(true);
    await expect.poll(() => gw.gateway.context.pool.stats().inFlight, { timeout: 2000 }).toBe(0);
    expect(gw.gateway.context.counters.inFlight).toBe(0);
  });

  it('Content-Length declaring less than sent, extra bytes that are not HTTP: the declared request is answered with its JSON 400, the rest never reaches a handler', async () => {
    const r = await raw(gw.port, `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Length: 2\r\n\r\n{}{"model":"mock-chat","messages":[{"role":"user","content":"smuggled"}]}\r\n\r\n`, 1500);
    expect(statusCodes(r.out)).toEqual([400]);
    expect(checkErrorBody(rawBodies(r.out)[0] ?? '', 'declared').code).toBe('invalid_request');
  });

  it('a malformed Content-Length (abc, -1, 1e3, 0x10, +5, 2^66) is refused: the connection is closed, nothing is served', async () => {
    for (const value of ['abc', '-1', '1e3', '0x10', '+5', '99999999999999999999']) {
      const r = await raw(gw.port, `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Length: ${value}\r\n\r\n{}`, 2000);
      const statuses = statusCodes(r.out);
      // uWS refuses these before the gateway sees them (it closes); the gateway's own check answers 400 if one gets through.
      expect(statuses.every((s) => s === 400), `${value}: ${r.out.slice(0, 200)}`).toBe(true);
      expect(r.closedByServer, value).toBe(true);
    }
  });
});

// ───────────────────────── 2. headers ─────────────────────────

describe('hostile headers', () => {
  it('one 64 KiB header is refused (431 or a closed connection) and the gateway keeps serving', async () => {
    const results: string[] = [];
    for (const size of [64 * 1024, 200 * 1024]) {
      const r = await raw(gw.port, `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(size)}\r\nConnection: close\r\n\r\n`, 3000);
      results.push(`${size} bytes: statuses ${JSON.stringify(statusCodes(r.out))}, closed by server ${r.closedByServer} after ${r.ms.toFixed(0)} ms (${r.error ?? 'FIN'})`);
    }
    console.info(`[figures] oversized header: ${results.join('; ')}`);
    for (const line of results) expect(line, results.join('\n')).toMatch(/statuses (\[431\]|\[\]), closed by server true/);
  });

  it('200 headers are refused (431 or a closed connection) and other clients are served meanwhile', async () => {
    let headers = '';
    for (let i = 0; i < 200; i++) headers += `X-Header-${i}: v\r\n`;
    const pending = raw(gw.port, `GET /health/live HTTP/1.1\r\nHost: x\r\n${headers}\r\n`, UWS_IDLE_CLOSE_MS.max + MARGIN_MS);
    // While that connection is pending, the gateway answers others.
    for (let i = 0; i < 5; i++) {
      await expectLive(gw, 'meanwhile', 1000);
      // Pacing the other traffic while the refused connection is pending.
      await sleep(100);
    }
    const r = await pending;
    console.info(`[figures] 200 headers: statuses ${JSON.stringify(statusCodes(r.out))}, closed by server ${r.closedByServer} after ${r.ms.toFixed(0)} ms`);
    expect(statusCodes(r.out).filter((s) => s !== 431)).toEqual([]);
    expect(r.closedByServer).toBe(true);
    // A 431 closes at once; no answer leaves the connection to uWS's idle timeout.
    if (statusCodes(r.out).length > 0) expect(r.ms).toBeLessThan(MARGIN_MS);
    else expect([r.ms > UWS_IDLE_CLOSE_MS.min, r.ms < UWS_IDLE_CLOSE_MS.max]).toEqual([true, true]);
  }, 20_000);

  it('X-Request-ID with a bare CR, a bare LF or an obs-fold (raw TCP) is refused or left unanswered, never reflected; no header is injected', async () => {
    const variants = [
      ['bare CR', 'X-Request-ID: abc\rInjected: yes\r\n'],
      ['bare LF', 'X-Request-ID: abc\nInjected: yes\r\n'],
      ['obs-fold', 'X-Request-ID: abc\r\n Injected: yes\r\n'],
      ['CR LF then a header', 'X-Request-ID: abc\r\nInjected: yes\r\n'],
    ] as const;
    const seen: string[] = [];
    for (const [name, header] of variants) {
      for (const [method, path, extra] of [
        ['GET', '/health/live', ''],
        ['POST', CHAT, `Authorization: Bearer ${gw.key}\r\nContent-Length: ${chatBody('mock-chat', {}, 'hello').length}\r\n`],
      ] as const) {
        const body = method === 'POST' ? chatBody('mock-chat', {}, 'hello') : '';
        const r = await raw(gw.port, `${method} ${path} HTTP/1.1\r\nHost: x\r\n${extra}${header}Connection: close\r\n\r\n${body}`, 600);
        const heads = r.out.split('\r\n\r\n')[0] ?? '';
        seen.push(`${name} ${method}: ${JSON.stringify(statusCodes(r.out))} closed=${r.closedByServer} ${r.ms.toFixed(0)}ms`);
        expect(heads.toLowerCase(), name).not.toMatch(/^injected:/m);
        const id = /^x-request-id: (.*)$/im.exec(heads)?.[1];
        if (id !== undefined) {
          expect(id, name).toMatch(/^[\x21-\x7e]{1,128}$/);
          expect(id, name).not.toContain('Injected');
        }
        // Never answered as a normal request with the raw value: uWS either refuses it (closes) or leaves it unanswered.
        expect(statusCodes(r.out).filter((s) => s !== 400), name).toEqual(name === 'CR LF then a header' ? [200] : []);
      }
    }
    console.info(`[figures] X-Request-ID with CR/LF: ${seen.join('; ')}`);
  });

  it('X-Request-ID of 8 KiB is replaced by a fresh id, never reflected', async () => {
    const long = 'r'.repeat(8 * 1024);
    const res = await post(CHAT, chatBody('mock-chat', {}, 'hello'), { 'x-request-id': long });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const id = res.headers.get('x-request-id') ?? '';
    expect(id).toMatch(/^[\x21-\x7e]{1,128}$/);
    expect(id).not.toContain('rrrr');
  });

  it('any Content-Type (text/plain, multipart, form, image/png, none) is accepted: the body is parsed as JSON regardless', async () => {
    const body = chatBody('mock-chat', {}, 'hello');
    for (const type of ['text/plain', 'multipart/form-data; boundary=xyz', 'application/x-www-form-urlencoded', 'image/png', 'application/json; charset=iso-8859-1']) {
      const res = await fetch(`${gw.url}${CHAT}`, { method: 'POST', body, headers: { authorization: `Bearer ${gw.key}`, 'content-type': type } });
      expect(res.status, type).toBe(200);
      expect(((await res.json()) as { object: string }).object, type).toBe('chat.completion');
    }
    // No Content-Type at all (node:http sends none unless told).
    const none = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, path: CHAT, method: 'POST', agent: false, headers: { authorization: `Bearer ${gw.key}`, 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
    expect(none.status).toBe(200);
    expect((JSON.parse(none.body) as { object: string }).object).toBe('chat.completion');
    // A real multipart payload is not JSON: 400 invalid_json.
    const multipart = '--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\nmock-chat\r\n--xyz--\r\n';
    await expectError(await post(CHAT, multipart, { 'content-type': 'multipart/form-data; boundary=xyz' }), 400, 'invalid_json', 'multipart');
    // A form-encoded payload neither.
    await expectError(await post(EMBED, 'model=mock-embed&input=x', { 'content-type': 'application/x-www-form-urlencoded' }), 400, 'invalid_json', 'form');
  });
});

// ───────────────────────── 3. property-based ─────────────────────────

const OTHER_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
const ALIASES = ['mock-chat', 'mock-embed', 'up-chat', 'up-embed'];

/** Documented statuses per route from openapi.yaml; a 500 is never acceptable for client input, so it is left out. */
function documentedStatuses(): Map<string, Set<number>> {
  const doc = parseYaml(readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8')) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
  const table = new Map<string, Set<number>>();
  for (const route of ROUTES) {
    const op = doc.paths[route.path]?.[route.method.toLowerCase()];
    if (!op) throw new Error(`openapi.yaml has no ${route.method} ${route.path}`);
    table.set(`${route.method} ${route.path}`, new Set(Object.keys(op.responses).map(Number).filter((s) => s !== 500)));
  }
  return table;
}

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

function send(method: string, path: string, body: Buffer, authorization: string | null): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': body.length };
    if (authorization !== null) headers.authorization = authorization;
    const req = http.request({ host: '127.0.0.1', port: gw.port, path, method, headers, agent, timeout: 10_000 }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** `{"type":"error","error":{"type","message"},"request_id"}`, the type the status's (protocol/anthropic-errors.ts). */
function checkAnthropicErrorBody(status: number, text: string, context: string): void {
  const body = JSON.parse(text) as { type?: unknown; error?: { type?: unknown; message?: unknown }; request_id?: unknown };
  expect(Object.keys(body), context).toEqual(['type', 'error', 'request_id']);
  expect(body.type, context).toBe('error');
  expect(body.error?.type, context).toBe(anthropicErrorTypeOf(status));
  expect(typeof body.error?.message, context).toBe('string');
  expect(typeof body.request_id, context).toBe('string');
}

describe('property-based: random JSON and random bytes on every route', () => {
  const table = documentedStatuses();
  /** Statuses seen per route, for the figures. */
  const tally = new Map<string, Map<number, number>>();
  afterAll(() => agent.destroy());

  const w = <T>(arbitrary: fc.Arbitrary<T>, weight: number) => ({ arbitrary, weight });
  const model = fc.oneof(w(fc.constantFrom(...ALIASES, 'openai/gpt-4o-mini', 'openai/o3-mini', 'openai/unmatched', 'nope'), 4), w(fc.string({ maxLength: 24 }), 1), w(fc.jsonValue({ maxDepth: 1 }), 1));
  const validMessage = fc.record({ role: fc.constantFrom('user', 'system', 'assistant'), content: fc.oneof(fc.string({ maxLength: 40 }), fc.constant(null)) });
  const randomMessage = fc.record({ role: fc.jsonValue({ maxDepth: 2 }), content: fc.jsonValue({ maxDepth: 3 }) }, { requiredKeys: [] });
  const messages = fc.oneof(w(fc.array(fc.oneof(w(validMessage, 4), w(randomMessage, 1)), { minLength: 1, maxLength: 4 }), 4), w(fc.jsonValue({ maxDepth: 2 }), 1));
  const extras = { stream: fc.oneof(w(fc.boolean(), 4), w(fc.jsonValue({ maxDepth: 1 }), 1)), temperature: fc.jsonValue({ maxDepth: 1 }), user: fc.string({ maxLength: 10 }) };
  const input = fc.oneof(
    w(fc.string({ maxLength: 20 }), 2),
    w(fc.array(fc.string({ maxLength: 10 }), { minLength: 1, maxLength: 3 }), 2),
    w(fc.array(fc.nat(1000), { minLength: 1, maxLength: 3 }), 1),
    w(fc.jsonValue({ maxDepth: 2 }), 1),
  );
  const chatLike = fc.record({ model, messages, ...extras }, { requiredKeys: ['model', 'messages'] });
  const embedLike = fc.record({ model, input, dimensions: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: ['model', 'input'] });
  /** Mostly request-shaped (so validation, routing, the mock and the fake upstream are reached), sometimes any JSON at all. */
  const jsonFor = (route: RouteSpec) =>
    fc
      .oneof(w<unknown>(fc.jsonValue({ maxDepth: 4 }), 1), w<unknown>(route.kind === 'embeddings' ? embedLike : chatLike, 3))
      .map((v) => Buffer.from(JSON.stringify(v) ?? 'null'));
  const bytesBody = fc.uint8Array({ maxLength: 1024 }).map((b) => Buffer.from(b));
  const param = fc.oneof(fc.constantFrom(...ALIASES), fc.string({ minLength: 1, maxLength: 24 }));

  const statusText = (r: RouteSpec, method: string, path: string, auth: boolean, body: Buffer, a: Answer): string =>
    `${method} ${path} auth=${auth} body=${JSON.stringify(body.toString('latin1').slice(0, 120))} → ${a.status} ${a.body.slice(0, 200)} (route ${r.method} ${r.path})`;

  async function check(route: RouteSpec, input: { body: Buffer; auth: boolean; wrongMethod: boolean; other: number; param: string }): Promise<void> {
    const allowed = methodsByPath().get(route.path) ?? [];
    const wrong = OTHER_METHODS.filter((m) => !allowed.includes(m as never));
    const method = input.wrongMethod ? (wrong[input.other % wrong.length] as string) : route.method;
    const path = route.path.replace(/\{[^}]+\}/g, encodeURIComponent(input.param));
    const answer = await send(method, path, input.body, input.auth ? `Bearer ${gw.key}` : null);
    const tallyKey = `${route.method} ${route.path}`;
    const counts = tally.get(tallyKey) ?? new Map<number, number>();
    counts.set(answer.status, (counts.get(answer.status) ?? 0) + 1);
    tally.set(tallyKey, counts);
    const context = statusText(route, method, path, input.auth, input.body, answer);
    const expected = input.wrongMethod ? new Set([405]) : (table.get(`${route.method} ${route.path}`) as Set<number>);
    expect(expected.has(answer.status), `${context}; documented: ${[...expected].join(', ')}`).toBe(true);
    if (answer.status >= 300) {
      if ((route.kind === 'ready' || route.kind === 'health') && answer.status === 503) {
        expect((JSON.parse(answer.body) as { status?: string }).status, context).toBe('unhealthy');
      } else {
        expect(answer.contentType, context).toMatch(/^application\/json/);
        // CONTRACT.md, Anthropic Messages API (inbound): every error on the Messages routes in Anthropic's shape, typed by status.
        if (route.auth === 'anthropic') checkAnthropicErrorBody(answer.status, answer.body, context);
        // Provider 4xx pass through as the provider sent them (the fake's have code null); the gateway's own are gateway_error.
        else checkErrorBody(answer.body, context, !(route.kind === 'chat' || route.kind === 'embeddings'));
      }
    }
  }

  const routeCases = ROUTES.flatMap((route, r) => [
    { route, name: 'random JSON', body: jsonFor(route), seed: 0x5eed + r * 10 },
    { route, name: 'random bytes', body: bytesBody, seed: 0x5eed + r * 10 + 1 },
  ]);

  it.each(routeCases.map((c) => [`${c.route.method} ${c.route.path}`, c.name, c] as const))('%s, %s: documented status, valid error body, liveness after', async (_label, _name, c) => {
    const t0 = performance.now();
    await fc.assert(
      fc.asyncProperty(fc.record({ body: c.body, auth: fc.boolean(), wrongMethod: fc.boolean(), other: fc.nat(10), param }), (input) => check(c.route, input)),
      { numRuns: 200, seed: c.seed, endOnFailure: true },
    );
    const elapsed = performance.now() - t0;
    await expectHealthy(`after ${c.route.method} ${c.route.path} ${c.name}`);
    expect(elapsed).toBeLessThan(15_000);
  });

  it('the fuzzed provider requests reached only the fake upstream, at its own paths', () => {
    const lines = [...tally].map(([route, counts]) => `${route}: ${[...counts].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ')}`);
    console.info(`[figures] fuzz statuses (${ROUTES.length} routes × 2 generators × 200 runs): ${lines.join('; ')}; upstream requests: ${upstream.requests.length}`);
    for (const r of upstream.requests) expect(['/v1/chat/completions', '/v1/embeddings', '/v1/models']).toContain(new URL(r.path, 'http://x').pathname);
  });
});

// ───────────────────────── after the run ─────────────────────────

describe('after this file\'s run', () => {
  it('neither key appears (raw, URL-encoded, base64, hex) in any log line, /metrics, /status, /status/models or the probes', async () => {
    await expectNoKeyLeak(gw);
  });
});
