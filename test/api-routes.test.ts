/**
 * Integration tests of the HTTP surface (spec 000, CONTRACT.md): auth on
 * every route of the route table, 404/405, the `Server` and `X-Request-ID`
 * headers, the provider-header allowlist, the probes, /status,
 * /status/models, /v1/models, /metrics and the access log. Every test runs
 * against a real gateway (real uWS, real worker threads) and a fake
 * OpenAI-compatible upstream.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ROUTES, methodsByPath, type RouteSpec } from '../src/front/routes.js';
import { VERSION } from '../protocol/version.js';
import { availableCpus } from '../src/config/cpu-limit.js';
import { defaultYaml, startTestGateway, TEST_KEY, UPSTREAM_KEY, useGateway, type TestGateway } from './support/gateway.js';
import { chatBody } from './support/requests.js';
import { sleep, until } from './support/waits.js';

// ───────────────────────── helpers ─────────────────────────

/** spec 000, Authentication: the shown 401 body, verbatim. */
const INVALID_KEY_BODY = '{"error":{"message":"invalid or missing bearer token","type":"gateway_error","code":"invalid_api_key"}}';
const SERVER = `switchyard/${VERSION}`;
const VISIBLE_ASCII_ID = /^[\x21-\x7e]{1,128}$/;
/** The aliases of the harness's defaultYaml(upstream), written out independently of the config loader. */
const DEFAULT_ALIASES = ['mock-chat', 'mock-embed', 'up-chat', 'up-embed'];
const CHAT_ROUTE = '/v1/chat/completions';

type Json = Record<string, unknown>;

/** The route's path with every `{param}` filled with a configured alias. */
function concretePath(route: RouteSpec): string {
  return route.path.replace(/\{[^}]+\}/g, 'mock-chat');
}

/** A valid body for the route (mock-backed, so it needs no upstream). */
function bodyFor(route: RouteSpec): string | undefined {
  if (route.method !== 'POST') return undefined;
  if (route.kind === 'chat') return chatBody('mock-chat');
  if (route.kind === 'embeddings') return JSON.stringify({ model: 'mock-embed', input: 'hello' });
  if (route.kind === 'responses') return JSON.stringify({ model: 'mock-chat', input: 'hello there' });
  return '{}';
}

/** Calls the route with exactly this Authorization header (none when null). */
function callRoute(gw: TestGateway, route: RouteSpec, authorization: string | null): Promise<Response> {
  const headers: Record<string, string> = {};
  if (authorization !== null) headers.authorization = authorization;
  return gw.fetch(concretePath(route), { method: route.method, body: bodyFor(route), headers, auth: false });
}

async function json(res: Response): Promise<Json> {
  return (await res.json()) as Json;
}

async function chat(gw: TestGateway, model: string, headers: Record<string, string> = {}, extra: Json = {}): Promise<Response> {
  return gw.fetch(CHAT_ROUTE, { method: 'POST', body: chatBody(model, extra), headers });
}

async function status(gw: TestGateway): Promise<Json & { requests: Record<string, number> }> {
  const res = await gw.fetch('/status', { auth: false });
  expect(res.status).toBe(200);
  return (await res.json()) as Json & { requests: Record<string, number> };
}

/** Prometheus text → samples. */
function parseMetrics(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const out: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

function sampleValue(text: string, name: string, want: Record<string, string>): number | undefined {
  const found = parseMetrics(text).filter((s) => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(want)}`);
  return found[0]?.value;
}

async function metricsText(gw: TestGateway): Promise<Response & { text_: string }> {
  const res = await gw.fetch('/metrics', { auth: false });
  const text_ = await res.text();
  return Object.assign(res, { text_ });
}

/**
 * One HTTP/1.1 exchange over a raw socket, for requests fetch refuses to
 * send (header values with bytes outside Latin-1). The response must carry
 * a Content-Length.
 */
function rawExchange(port: number, request: Buffer): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`raw exchange timed out; got ${JSON.stringify(buf.toString('latin1'))}`));
    }, 10_000);
    const tryParse = (final: boolean): void => {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (final) reject(new Error(`incomplete response: ${JSON.stringify(buf.toString('latin1'))}`));
        return;
      }
      const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const length = Number(headers['content-length'] ?? NaN);
      const body = buf.subarray(end + 4);
      if (Number.isFinite(length) ? body.length >= length : final) {
        clearTimeout(timer);
        socket.destroy();
        resolve({ status: Number((statusLine ?? '').split(' ')[1]), headers, body: body.toString('utf8') });
      }
    };
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      tryParse(false);
    });
    socket.on('end', () => tryParse(true));
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.write(request);
  });
}

// ───────────────────────── the shared gateway ─────────────────────────

const { gw, upstream, start } = useGateway();

// ───────────────────────── 1. auth ─────────────────────────

describe('authentication', () => {
  const bearer = ROUTES.filter((r) => r.auth === 'bearer');
  const open = ROUTES.filter((r) => r.auth === 'none');
  const anthropic = ROUTES.filter((r) => r.auth === 'anthropic');

  it('the route table protects the routes spec 000 and CONTRACT.md protect, and leaves the probes open', () => {
    const key = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
    expect(bearer.map(key)).toEqual(
      expect.arrayContaining(['GET /v1/models', 'POST /v1/chat/completions', 'POST /v1/embeddings', 'GET /status/models', 'GET /status/models/{model}']),
    );
    expect(open.map(key)).toEqual(expect.arrayContaining(['GET /health/live', 'GET /health/liveliness', 'GET /ready', 'GET /status', 'GET /metrics']));
    expect(anthropic.map(key)).toEqual(['POST /v1/messages', 'POST /v1/messages/count_tokens']);
    expect(bearer.length + open.length + anthropic.length).toBe(ROUTES.length);
  });

  it('every bearer route answers 401 with the exact error body to a missing, wrong or non-Bearer credential, and 200 to the right token', async () => {
    const wrong: Array<string | null> = [
      null,
      'Bearer wrong-key',
      `Bearer ${TEST_KEY}x`,
      `Bearer ${TEST_KEY.slice(0, -1)}`,
      'Bearer ',
      TEST_KEY,
      `Basic ${Buffer.from(`user:${TEST_KEY}`).toString('base64')}`,
      `Token ${TEST_KEY}`,
      `Bearer${TEST_KEY}`,
    ];
    for (const route of bearer) {
      for (const authorization of wrong) {
        const res = await callRoute(gw, route, authorization);
        const where = `${route.method} ${route.path} with Authorization ${JSON.stringify(authorization)}`;
        expect(res.status, where).toBe(401);
        expect(res.headers.get('content-type'), where).toMatch(/^application\/json/);
        expect(await res.text(), where).toBe(INVALID_KEY_BODY);
      }
      const ok = await callRoute(gw, route, `Bearer ${TEST_KEY}`);
      expect(ok.status, `${route.method} ${route.path} with the right token`).toBe(200);
      await ok.arrayBuffer();
    }
  });

  it('every route with auth none answers without a token (not 401)', async () => {
    for (const route of open) {
      const res = await callRoute(gw, route, null);
      const text = await res.text();
      expect(res.status, `${route.method} ${route.path}`).not.toBe(401);
      expect(text, `${route.method} ${route.path}`).not.toContain('invalid_api_key');
    }
  });

  it('GATEWAY_API_KEYS accepts each of several keys and nothing else', async () => {
    const multi = await startTestGateway({ upstream, env: { GATEWAY_API_KEY: '', GATEWAY_API_KEYS: 'k1,k2' } });
    try {
      for (const route of bearer) {
        for (const k of ['k1', 'k2']) {
          const res = await callRoute(multi, route, `Bearer ${k}`);
          expect(res.status, `${route.method} ${route.path} with ${k}`).toBe(200);
          await res.arrayBuffer();
        }
        for (const bad of ['Bearer k3', `Bearer ${TEST_KEY}`, 'Bearer k1,k2', 'Bearer k1k2', 'Bearer ']) {
          const res = await callRoute(multi, route, bad);
          expect(res.status, `${route.method} ${route.path} with ${bad}`).toBe(401);
          expect(await res.text()).toBe(INVALID_KEY_BODY);
        }
      }
    } finally {
      await multi.close();
    }
  });
});

// ───────────────────────── 2. 404 / 405 ─────────────────────────

describe('unknown routes and wrong methods', () => {
  it('an unknown path answers 404 route_not_found as a JSON error', async () => {
    const cases: Array<[string, string, string | undefined]> = [
      ['GET', '/nope', undefined],
      ['GET', '/v1/completions', undefined],
      ['GET', '/health/deep', undefined],
      ['POST', '/v1/unknown', chatBody('up-chat')],
    ];
    for (const [method, path, body] of cases) {
      const res = await gw.fetch(path, { method, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const b = (await json(res)) as { error: Json };
      expect(Object.keys(b)).toEqual(['error']);
      expect(b.error.code).toBe('route_not_found');
      expect(b.error.type).toBe('gateway_error');
      expect(typeof b.error.message).toBe('string');
    }
  });

  it('a wrong method answers 405 method_not_allowed with an Allow header listing the route methods', async () => {
    const examples: Array<[string, string, string]> = [
      ['DELETE', '/v1/models', 'GET'],
      ['GET', CHAT_ROUTE, 'POST'],
      ['POST', '/health/live', 'GET'],
    ];
    for (const [method, path, allow] of examples) {
      const res = await gw.fetch(path, { method });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow);
      const b = (await json(res)) as { error: Json };
      expect(b.error.code).toBe('method_not_allowed');
      expect(b.error.type).toBe('gateway_error');
    }
    // Every path of the route table, with every method it does not serve.
    for (const [path, methods] of methodsByPath()) {
      const concrete = path.replace(/\{[^}]+\}/g, 'mock-chat');
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'].filter((m) => !methods.includes(m as never))) {
        const res = await gw.fetch(concrete, { method, body: method === 'GET' ? undefined : '{}' });
        expect(res.status, `${method} ${path}`).toBe(405);
        const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).filter(Boolean).sort();
        expect(allow, `${method} ${path}`).toEqual([...methods].sort());
        const body = (await json(res)) as { error: Json };
        // CONTRACT.md, Anthropic Messages API (inbound): every error on the Messages paths is in Anthropic's shape.
        if (ROUTES.some((r) => r.path === path && r.auth === 'anthropic')) expect(body, `${method} ${path}`).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'method not allowed on this route' }, request_id: res.headers.get('x-request-id') });
        else expect(body.error.code).toBe('method_not_allowed');
      }
    }
  });
});

// ───────────────────────── 3. Server header ─────────────────────────

describe('Server header', () => {
  it('protocol/version.ts carries the package.json version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
  });

  it('every response carries Server: switchyard/<version>: success, 401, 404, 405, 400, 502 and a stream', async () => {
    const cases: Array<[string, number, () => Promise<Response>]> = [
      ['success', 200, () => gw.fetch('/v1/models')],
      ['probe', 200, () => gw.fetch('/health/live', { auth: false })],
      ['401', 401, () => gw.fetch('/v1/models', { auth: false })],
      ['404 route', 404, () => gw.fetch('/nope')],
      ['404 model', 404, () => chat(gw, 'no-such-model')],
      ['405', 405, () => gw.fetch('/v1/models', { method: 'DELETE' })],
      ['400', 400, () => gw.fetch(CHAT_ROUTE, { method: 'POST', body: '{not json' })],
      [
        '502',
        502,
        () => {
          // Every attempt fails: a 500 is tried again (num_retries) before the 502.
          upstream.behave({ kind: 'status', status: 500 });
          return chat(gw, 'up-chat');
        },
      ],
    ];
    for (const [name, want, run] of cases) {
      const res = await run();
      expect(res.status, name).toBe(want);
      expect(res.headers.get('server'), name).toBe(SERVER);
      await res.arrayBuffer();
    }
    upstream.behave({ kind: 'ok' });
    const stream = await chat(gw, 'up-chat', {}, { stream: true });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('server')).toBe(SERVER);
    expect(await stream.text()).toContain('data: [DONE]');
  });
});

// ───────────────────────── 4. X-Request-ID ─────────────────────────

describe('X-Request-ID', () => {
  it('a valid caller id (1–128 visible ASCII) is echoed and sent upstream', async () => {
    const valid = ['a', 'req-abc_123.XYZ:~!"#$%&\'()*+,/;<=>?@[\\]^`{|}', 'x'.repeat(128), randomUUID()];
    for (const id of valid) {
      const res = await chat(gw, 'up-chat', { 'x-request-id': id });
      expect(res.status, id).toBe(200);
      await res.arrayBuffer();
      expect(res.headers.get('x-request-id'), id).toBe(id);
      expect(upstream.requests.at(-1)?.headers['x-request-id'], id).toBe(id);
    }
    // Operational routes echo it too.
    const live = await gw.fetch('/health/live', { auth: false, headers: { 'x-request-id': 'probe-1' } });
    expect(live.headers.get('x-request-id')).toBe('probe-1');
  });

  it('an invalid caller id (empty, 129 chars, a space, a tab, non-ASCII) is replaced, never reflected, and the new one goes upstream', async () => {
    const invalid = ['', 'y'.repeat(129), 'has space', 'tab\there', 'caf\u00e9-latin1'];
    for (const id of invalid) {
      const before = upstream.requests.length;
      const res = await chat(gw, 'up-chat', { 'x-request-id': id });
      expect(res.status, JSON.stringify(id)).toBe(200);
      await res.arrayBuffer();
      const got = res.headers.get('x-request-id');
      expect(got, JSON.stringify(id)).toMatch(VISIBLE_ASCII_ID);
      expect(got, JSON.stringify(id)).not.toBe(id);
      if (id !== '') expect(got).not.toContain(id);
      expect(upstream.requests.length).toBe(before + 1);
      expect(upstream.requests.at(-1)?.headers['x-request-id'], JSON.stringify(id)).toBe(got);
    }
    // UTF-8 bytes in the header, which fetch cannot send.
    const body = chatBody('up-chat');
    const idBytes = Buffer.from('ñandú-request', 'utf8');
    const request = Buffer.concat([
      Buffer.from(`POST ${CHAT_ROUTE} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-ID: `, 'latin1'),
      idBytes,
      Buffer.from(`\r\nConnection: close\r\n\r\n${body}`, 'latin1'),
    ]);
    const before = upstream.requests.length;
    const raw = await rawExchange(gw.gateway.port, request);
    expect(raw.status).toBe(200);
    const got = raw.headers['x-request-id'];
    expect(got).toMatch(VISIBLE_ASCII_ID);
    expect(got).not.toContain('and');
    expect(upstream.requests.length).toBe(before + 1);
    expect(upstream.requests.at(-1)?.headers['x-request-id']).toBe(got);
  });

  it('each response without a caller id gets its own id', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await chat(gw, 'up-chat');
      await res.arrayBuffer();
      const id = res.headers.get('x-request-id') ?? '';
      expect(id).toMatch(VISIBLE_ASCII_ID);
      expect(upstream.requests.at(-1)?.headers['x-request-id']).toBe(id);
      ids.push(id);
    }
    for (const path of ['/health/live', '/nope', '/v1/models']) {
      const res = await gw.fetch(path);
      await res.arrayBuffer();
      ids.push(res.headers.get('x-request-id') ?? '');
    }
    const unauth = await gw.fetch('/v1/models', { auth: false });
    await unauth.arrayBuffer();
    ids.push(unauth.headers.get('x-request-id') ?? '');
    for (const id of ids) expect(id).toMatch(VISIBLE_ASCII_ID);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

// ───────────────────────── 5. provider headers ─────────────────────────

describe('provider response headers', () => {
  const FOREIGN = {
    'set-cookie': 'session=up-secret-cookie; Path=/; HttpOnly',
    'x-ratelimit-remaining-requests': '42',
    'x-ratelimit-limit-tokens': '90000',
    'retry-after': '7',
    'x-secret-internal': 'internal-value-123',
    authorization: `Bearer ${UPSTREAM_KEY}`,
    'www-authenticate': 'Bearer realm="upstream-realm"',
    'proxy-authenticate': 'Basic realm="upstream-proxy"',
    'keep-alive': 'timeout=1234, max=77',
    'x-powered-by': 'upstream-stack',
  };
  const ALLOWED = { 'x-ratelimit-remaining-requests': '42', 'x-ratelimit-limit-tokens': '90000', 'retry-after': '7' };
  const NEVER = ['set-cookie', 'x-secret-internal', 'authorization', 'proxy-authenticate', 'keep-alive', 'x-powered-by', 'x-fake-upstream'];
  const SECRET_VALUES = ['up-secret-cookie', 'internal-value-123', UPSTREAM_KEY, 'upstream-realm', 'upstream-proxy', 'timeout=1234', 'upstream-stack'];

  function checkHeaders(res: Response, where: string): void {
    for (const [name, value] of Object.entries(ALLOWED)) expect(res.headers.get(name), `${where}: ${name}`).toBe(value);
    for (const name of NEVER) expect(res.headers.get(name), `${where}: ${name}`).toBeNull();
    expect(res.headers.getSetCookie(), where).toEqual([]);
    for (const [name, value] of res.headers) for (const secret of SECRET_VALUES) expect(`${name}: ${value}`, where).not.toContain(secret);
  }

  it('only the allowlisted rate-limit headers of the provider reach the caller (JSON, SSE, embeddings, 4xx pass-through)', async () => {
    upstream.behaveOnce({ kind: 'headers', headers: FOREIGN });
    const plain = await chat(gw, 'up-chat');
    expect(plain.status).toBe(200);
    await plain.arrayBuffer();
    checkHeaders(plain, 'chat');
    // The other direction: the provider gets its own key, never the caller's gateway key.
    const forwarded = upstream.requests.at(-1)?.headers ?? {};
    expect(forwarded.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    for (const [name, value] of Object.entries(forwarded)) expect(`${name}: ${String(value)}`).not.toContain(TEST_KEY);

    upstream.behaveOnce({ kind: 'headers', headers: FOREIGN });
    const sse = await chat(gw, 'up-chat', {}, { stream: true });
    expect(sse.status).toBe(200);
    expect(await sse.text()).toContain('data: [DONE]');
    checkHeaders(sse, 'stream');

    upstream.behaveOnce({ kind: 'headers', headers: FOREIGN });
    const emb = await gw.fetch('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: 'up-embed', input: 'x' }) });
    expect(emb.status).toBe(200);
    await emb.arrayBuffer();
    checkHeaders(emb, 'embeddings');

    // A 429 asking for a pause (7 s), on a gateway of its own whose max_retry_wait is 0: passed through at once, and
    // the back-off it begins reaches no later test.
    upstream.behave({ kind: 'status', status: 429, headers: FOREIGN });
    const limitedGateway = await start({ yaml: `${defaultYaml(upstream)}\nrouter_settings: { max_retry_wait: 0 }\n` });
    const limited = await chat(limitedGateway, 'up-chat');
    expect(limited.status).toBe(429);
    await limited.arrayBuffer();
    checkHeaders(limited, '429');
    upstream.behave({ kind: 'ok' });

    // The gateway's own answers never carry the caller's Authorization back.
    const own = await gw.fetch('/v1/models');
    await own.arrayBuffer();
    expect(own.headers.get('authorization')).toBeNull();
    for (const [, value] of own.headers) expect(value).not.toContain(TEST_KEY);
  });
});

// ───────────────────────── 6. probes ─────────────────────────

function checkHealthReport(body: Json, probe: 'liveness' | 'readiness'): void {
  expect(Object.keys(body).sort()).toEqual(expect.arrayContaining(['checks', 'probe_type', 'status', 'timestamp']));
  expect(body.status).toMatch(/^[a-z]+$/);
  expect(body.probe_type).toBe(probe);
  expect(typeof body.timestamp).toBe('string');
  expect(body.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
  expect(Math.abs(Date.parse(body.timestamp as string) - Date.now())).toBeLessThan(60_000);
  expect(Array.isArray(body.checks)).toBe(true);
  const checks = body.checks as Json[];
  expect(checks.length).toBeGreaterThan(0);
  for (const c of checks) {
    expect(typeof c.name).toBe('string');
    expect(c.status).toMatch(/^(healthy|degraded|unhealthy)$/);
    expect(Number.isInteger(c.duration_ms)).toBe(true);
    expect(c.duration_ms as number).toBeGreaterThanOrEqual(0);
  }
}

describe('probes', () => {
  it('/health/live and /health/liveliness answer 200 with exactly the health object', async () => {
    for (const path of ['/health/live', '/health/liveliness']) {
      const res = await gw.fetch(path, { auth: false });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.text(), path).toBe('{"object":"health","status":"ok"}');
    }
  });

  it('/ready and /health answer 200 with a healthy report when a route has credentials', async () => {
    const ready = await gw.fetch('/ready', { auth: false });
    expect(ready.status).toBe(200);
    const r = await json(ready);
    checkHealthReport(r, 'readiness');
    expect(r.status).toBe('healthy');
    expect((r.checks as Json[]).find((c) => c.name === 'provider_credentials')?.status).toBe('healthy');

    const health = await gw.fetch('/health', { auth: false });
    expect(health.status).toBe(200);
    const h = await json(health);
    checkHealthReport(h, 'liveness');
    expect(h.status).toBe('healthy');
  });

  it('/ready answers 503 with provider_credentials unhealthy when no route has credentials; liveness stays up', async () => {
    const unready = await startTestGateway({
      yaml: 'model_list: [{model_name: a, params: {model: openai/x, api_base: "http://127.0.0.1:9/v1", api_key: os.environ/SWITCHYARD_TEST_UNSET}}]',
    });
    try {
      const ready = await unready.fetch('/ready', { auth: false });
      expect(ready.status).toBe(503);
      expect(ready.headers.get('server')).toBe(SERVER);
      expect(ready.headers.get('x-request-id')).toMatch(VISIBLE_ASCII_ID);
      const r = await json(ready);
      checkHealthReport(r, 'readiness');
      expect(r.status).toBe('unhealthy');
      const check = (r.checks as Json[]).find((c) => c.name === 'provider_credentials');
      expect(check?.status).toBe('unhealthy');

      // spec 001: /health runs every check and answers 503 when unhealthy.
      const health = await unready.fetch('/health', { auth: false });
      expect(health.status).toBe(503);
      checkHealthReport(await json(health), 'liveness');

      // CONTRACT.md: the liveness paths run no checks.
      for (const path of ['/health/live', '/health/liveliness']) {
        const live = await unready.fetch(path, { auth: false });
        expect(live.status, path).toBe(200);
        expect(await live.text()).toBe('{"object":"health","status":"ok"}');
      }
    } finally {
      await unready.close();
    }
  });
});

// ───────────────────────── 7. /status ─────────────────────────

describe('/status', () => {
  it('is unauthenticated and reports models, uws_native, workers and counters that move', async () => {
    const s0 = await status(gw);
    expect(s0.models_configured).toBe(DEFAULT_ALIASES.length);
    expect(s0.uws_native).toBe(true);
    expect(s0.workers).toBe(2);
    // The test gateway sets GATEWAY_WORKERS=2 (test/support/gateway.ts): the mode names it.
    expect(s0.worker_mode).toEqual({ workers: 2, reason: 'env', cpus: availableCpus(), description: '2 workers: GATEWAY_WORKERS' });
    for (const k of ['total', 'success', 'client_errors', 'server_errors']) expect(Number.isInteger(s0.requests[k]), k).toBe(true);

    const ok = await chat(gw, 'up-chat');
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    const s1 = await status(gw);
    expect(s1.requests.total as number).toBeGreaterThanOrEqual((s0.requests.total as number) + 1);
    expect(s1.requests.success as number).toBeGreaterThanOrEqual((s0.requests.success as number) + 1);
    expect(s1.requests.client_errors).toBe(s0.requests.client_errors);
    expect(s1.requests.server_errors).toBe(s0.requests.server_errors);

    const denied = await gw.fetch(CHAT_ROUTE, { method: 'POST', body: chatBody('up-chat'), auth: false });
    expect(denied.status).toBe(401);
    await denied.arrayBuffer();
    const s2 = await status(gw);
    expect(s2.requests.client_errors).toBe((s1.requests.client_errors as number) + 1);
    expect(s2.requests.total as number).toBeGreaterThanOrEqual((s1.requests.total as number) + 1);
    expect(s2.requests.server_errors).toBe(s1.requests.server_errors);
  });
});

// ───────────────────────── 8. /status/models ─────────────────────────

describe('/status/models', () => {
  const ENV_NAME = 'SWITCHYARD_TEST_PRESENT';
  // A second gateway, in front of the file's upstream.
  const { gw: sm } = useGateway({
    upstreams: 0,
    gateway: () => ({
      env: { [ENV_NAME]: UPSTREAM_KEY },
      yaml: `
model_list:
  - model_name: env-present
    params: { model: openai/up-model-a, api_base: "${upstream.url}", api_key: os.environ/${ENV_NAME} }
  - model_name: env-missing
    params: { model: openai/up-model-b, api_base: "http://127.0.0.1:9/v1", api_key: os.environ/SWITCHYARD_TEST_UNSET }
  - model_name: literal-key
    params: { model: openai/up-model-c, api_base: "${upstream.url}", api_key: ${UPSTREAM_KEY} }
  - model_name: mock-only
    params: { model: mock/chat-small }
  - model_name: twice
    params: { model: mock/chat-small }
  - model_name: twice
    params: { model: mock/chat-large }
  - model_name: ns/slashed
    params: { model: mock/embed-small }
route_rules:
  - provider: openai
    models: ["gpt-*"]
    params: { api_base: "${upstream.url}", api_key: ${UPSTREAM_KEY} }
`,
    }),
  });

  const EXPECTED: Record<string, Json> = {
    'env-present': { provider: 'openai', upstream_model: 'up-model-a', credentials: 'present', credentials_source: ENV_NAME },
    'env-missing': { provider: 'openai', upstream_model: 'up-model-b', api_base: 'http://127.0.0.1:9/v1', credentials: 'missing', credentials_source: 'SWITCHYARD_TEST_UNSET' },
    'literal-key': { provider: 'openai', upstream_model: 'up-model-c', credentials: 'present' },
    'mock-only': { provider: 'mock', upstream_model: 'chat-small', credentials: 'not_required' },
    twice: { provider: 'mock', upstream_model: 'chat-small', credentials: 'not_required' },
    'ns/slashed': { provider: 'mock', upstream_model: 'embed-small', credentials: 'not_required' },
  };

  it('lists every alias once with provider, upstream model, api_base and credential status', async () => {
    const res = await sm.fetch('/status/models');
    expect(res.status).toBe(200);
    const body = (await json(res)) as { data: Json[] };
    expect(Array.isArray(body.data)).toBe(true);
    const aliases = body.data.map((e) => e.alias);
    expect([...aliases].sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const entry of body.data) {
      const alias = entry.alias as string;
      expect(entry, alias).toMatchObject(EXPECTED[alias] as Json);
      expect(entry, alias).toHaveProperty('api_base');
      expect(entry, alias).toHaveProperty('credentials_source');
    }
    const byAlias = new Map(body.data.map((e) => [e.alias as string, e]));
    expect(byAlias.get('env-present')?.api_base).toBe(upstream.url);
    expect(byAlias.get('literal-key')?.api_base).toBe(upstream.url);
    expect(byAlias.get('literal-key')?.credentials_source).not.toBe(UPSTREAM_KEY);

    // /status counts distinct aliases.
    expect((await status(sm)).models_configured).toBe(Object.keys(EXPECTED).length);
  });

  it('/status/models/{model} answers each alias (percent-encoded too) and 404 model_not_found for anything else', async () => {
    const list = ((await json(await sm.fetch('/status/models'))) as { data: Json[] }).data;
    for (const entry of list) {
      const alias = entry.alias as string;
      const res = await sm.fetch(`/status/models/${encodeURIComponent(alias)}`);
      expect(res.status, alias).toBe(200);
      expect(await json(res), alias).toEqual(entry);
    }
    for (const unknown of ['no-such-alias', 'openai%2Fgpt-4o', 'TWICE']) {
      const res = await sm.fetch(`/status/models/${unknown}`);
      expect(res.status, unknown).toBe(404);
      const b = (await json(res)) as { error: Json };
      expect(b.error.code, unknown).toBe('model_not_found');
      expect(b.error.type, unknown).toBe('gateway_error');
    }
  });

  it('never shows the upstream key or the gateway key in any status, probe, list or metrics body', async () => {
    const common = ['/status', '/status/models', '/v1/models', '/health', '/ready', '/metrics'];
    const perGateway: Array<[TestGateway, string[]]> = [
      [sm, [...common, ...Object.keys(EXPECTED).map((a) => `/status/models/${encodeURIComponent(a)}`)]],
      [gw, [...common, ...DEFAULT_ALIASES.map((a) => `/status/models/${a}`)]],
    ];
    for (const [g, paths] of perGateway) {
      for (const path of paths) {
        const res = await g.fetch(path);
        const text = await res.text();
        // /health may be 503 here: env-missing points at an unreachable api_base, and /health runs the reachability checks.
        expect([200, 503], path).toContain(res.status);
        expect(text, path).not.toContain(UPSTREAM_KEY);
        expect(text, path).not.toContain(TEST_KEY);
        for (const [, value] of res.headers) {
          expect(value).not.toContain(UPSTREAM_KEY);
          expect(value).not.toContain(TEST_KEY);
        }
      }
    }
  });
});

// ───────────────────────── 9. /v1/models ─────────────────────────

describe('/v1/models', () => {
  it('lists exactly the model_list aliases through the openai SDK, not route_rules names', async () => {
    // openai/gpt-4o is routable through route_rules...
    const routed = await chat(gw, 'openai/gpt-4o');
    expect(routed.status).toBe(200);
    await routed.arrayBuffer();
    // ...but not listed.
    const models = [];
    for await (const m of gw.client().models.list()) models.push(m as unknown as Json);
    expect(models.map((m) => m.id).sort()).toEqual([...DEFAULT_ALIASES].sort());
    for (const m of models) {
      expect(Object.keys(m).sort()).toEqual(['created', 'id', 'object', 'owned_by']);
      expect(m.object).toBe('model');
      expect(Number.isInteger(m.created)).toBe(true);
      expect(m.created as number).toBeGreaterThan(1_600_000_000);
      expect(typeof m.owned_by).toBe('string');
      expect((m.owned_by as string).length).toBeGreaterThan(0);
    }
    const raw = await json(await gw.fetch('/v1/models'));
    expect(raw.object).toBe('list');
  });
});

// ───────────────────────── 10. /metrics ─────────────────────────

describe('/metrics', () => {
  it('exposes switchyard_requests_total per route and model, moving by exactly one per chat, and duration buckets', async () => {
    const labels = { route: CHAT_ROUTE, model: 'up-chat', status: '200' };
    const m0 = await metricsText(gw);
    expect(m0.status).toBe(200);
    expect(m0.headers.get('content-type')).toMatch(/^text\/plain/);
    const before = sampleValue(m0.text_, 'switchyard_requests_total', labels) ?? 0;

    const res = await chat(gw, 'up-chat');
    expect(res.status).toBe(200);
    await res.arrayBuffer();

    const m1 = await metricsText(gw);
    expect(m1.text_).toMatch(/^# TYPE switchyard_requests_total counter$/m);
    expect(sampleValue(m1.text_, 'switchyard_requests_total', labels)).toBe(before + 1);
    const buckets = parseMetrics(m1.text_).filter((s) => s.name === 'switchyard_request_duration_seconds_bucket' && s.labels.route === CHAT_ROUTE && s.labels.model === 'up-chat');
    expect(buckets.length).toBeGreaterThan(0);
    expect(buckets.find((b) => b.labels.le === '+Inf')?.value).toBeGreaterThanOrEqual(1);
  });

  it('never uses a raw caller-sent model name or path as a label value', async () => {
    const attacker = 'attacker-controlled-xyz';
    const r1 = await chat(gw, attacker);
    expect(r1.status).toBe(404);
    expect(((await json(r1)) as { error: Json }).error.code).toBe('model_not_found');
    const r2 = await gw.fetch('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: attacker, input: 'x' }) });
    expect(r2.status).toBe(404);
    await r2.arrayBuffer();
    // Routed by route_rules, so it reaches the provider, still under a bounded label.
    const r3 = await chat(gw, `openai/gpt-${attacker}`);
    expect(r3.status).toBe(200);
    await r3.arrayBuffer();
    const r4 = await gw.fetch(`/${attacker}-path`);
    expect(r4.status).toBe(404);
    await r4.arrayBuffer();
    const r5 = await chat(gw, 'up-chat', { 'x-request-id': `${attacker}-rid` });
    expect(r5.status).toBe(200);
    await r5.arrayBuffer();

    const m = await metricsText(gw);
    expect(m.status).toBe(200);
    expect(m.text_).not.toContain(attacker);
  });
});

// ───────────────────────── 11. access log ─────────────────────────

describe('access log', () => {
  it('one access line per chat request with id, route, model, status, duration and byte counts; no key in any log line', async () => {
    const id = `access-${randomUUID()}`;
    const body = chatBody('up-chat');
    const res = await gw.fetch(CHAT_ROUTE, { method: 'POST', body, headers: { 'x-request-id': id } });
    expect(res.status).toBe(200);
    const out = await res.text();

    const mine = () => gw.logs().filter((l) => l.event === 'access' && l.request_id === id);
    await until(() => mine().length > 0, 'the access line', 2000);
    // Nothing to wait on for "only one": a second line for the request, written late, would come within a turn or two.
    await sleep(50);
    const lines = mine();
    expect(lines).toHaveLength(1);
    const line = lines[0] as Json;
    expect(line.route).toBe(CHAT_ROUTE);
    expect(line.model).toBe('up-chat');
    expect(line.status).toBe(200);
    expect(typeof line.duration_ms).toBe('number');
    expect(Number.isFinite(line.duration_ms)).toBe(true);
    expect(line.duration_ms as number).toBeGreaterThanOrEqual(0);
    expect(line.bytes_in).toBe(Buffer.byteLength(body));
    expect(line.bytes_out).toBe(Buffer.byteLength(out));

    // A rejected token is a secret too.
    const rejected = 'sk-rejected-token-should-not-be-logged';
    const denied = await chat(gw, 'up-chat', { authorization: `Bearer ${rejected}` });
    expect(denied.status).toBe(401);
    await denied.arrayBuffer();

    expect(gw.rawLogs.length).toBeGreaterThan(0);
    for (const raw of gw.rawLogs) {
      expect(raw).not.toContain(TEST_KEY);
      expect(raw).not.toContain(UPSTREAM_KEY);
      expect(raw).not.toContain(rejected);
    }
  });
});
