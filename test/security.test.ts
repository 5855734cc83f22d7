/**
 * Resilience, "security": model names cannot steer where a request goes,
 * wrong keys of any length are refused the same way, and after a mixed run
 * (successes, streams, every error class, disconnects) neither the gateway
 * key nor the provider key appears — raw, URL-encoded, base64 or hex — in
 * any response, log line, /metrics, /status or probe output, and the
 * caller's key never reaches the provider. Key rotation is covered in
 * api-routes.test.ts, request smuggling in framing.test.ts.
 * Results: docs/RESILIENCE.md.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';
import { chatBody } from './support/requests.js';
import { sleep } from './support/waits.js';

const CHAT = '/v1/chat/completions';
const EMBED = '/v1/embeddings';
const INVALID_KEY_BODY = '{"error":{"message":"invalid or missing bearer token","type":"gateway_error","code":"invalid_api_key"}}';

// Keys with characters that URL-encoding and base64 change, so every form is a distinct string.
const GATEWAY_KEY = 'sk-gw+Te/st=Key~0123456789abcdefXYZ';
const PROVIDER_KEY = 'sk-up+Se/cret=Key~fedcba9876543210QRS';

/** Every form a key could leak in. */
function leakForms(key: string): Array<[string, string]> {
  return [
    ['raw', key],
    ['URL-encoded', encodeURIComponent(key)],
    ['base64', Buffer.from(key).toString('base64')],
    ['base64url', Buffer.from(key).toString('base64url')],
    ['base64 of "Bearer <key>"', Buffer.from(`Bearer ${key}`).toString('base64')],
    ['hex', Buffer.from(key).toString('hex')],
    ['JSON-escaped', JSON.stringify(key).slice(1, -1)],
    ['its distinctive tail', key.slice(-14)],
  ];
}

/** Everything the gateway sent back during the run: status line, headers and body of every response. */
const transcript: string[] = [];

async function record(res: Response, label: string): Promise<{ status: number; text: string; headers: Headers }> {
  const text = await res.text();
  transcript.push(`${label} ${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${text}`);
  return { status: res.status, text, headers: res.headers };
}

/** A server the model names point at: it must never see a connection. */
let sentinel: net.Server;
let sentinelPort: number;
let sentinelConnections = 0;

beforeAll(async () => {
  sentinel = net.createServer((s) => {
    sentinelConnections++;
    s.destroy();
  });
  await new Promise<void>((resolve) => sentinel.listen(0, '127.0.0.1', resolve));
  sentinelPort = (sentinel.address() as net.AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => sentinel?.close(() => resolve())));

const { gw, upstream } = useGateway({
  resetUpstreams: false,
  // The provider takes PROVIDER_KEY, the key the aliases are configured with: a request without it is refused.
  upstreamKey: PROVIDER_KEY,
  gateway: (upstream) => ({
    yaml: `
model_list:
  - model_name: up-chat
    params: { model: openai/fake-model, api_base: ${upstream.url}, api_key: "${PROVIDER_KEY}" }
  - model_name: up-embed
    params: { model: openai/fake-embed, api_base: ${upstream.url}, api_key: "${PROVIDER_KEY}" }
  - model_name: mock-chat
    params: { model: mock/chat-small, mock_stream_chunks: 5 }
  - model_name: mock-embed
    params: { model: mock/embed-small, mock_embedding_dimensions: 8 }
route_rules:
  - provider: openai
    models: ["*"]
    params: { api_base: ${upstream.url}, api_key: "${PROVIDER_KEY}" }
`,
    env: { GATEWAY_API_KEY: GATEWAY_KEY, GATEWAY_MAX_BODY_BYTES: String(64 * 1024) },
  }),
});

beforeAll(() => {
  expect(gw.key).toBe(GATEWAY_KEY);
});

afterEach(async () => {
  const live = await gw.fetch('/health/live', { auth: false, signal: AbortSignal.timeout(2000) });
  await record(live, 'GET /health/live');
  expect(live.status).toBe(200);
  expect(gw.gateway.context.pool.stats().restarts).toBe(0);
});

// ───────────────────────── model names cannot steer requests ─────────────────────────

describe('model names cannot steer requests', () => {
  const S = () => `127.0.0.1:${sentinelPort}`;
  /** Names routed by the `openai` rule (models: ["*"]): they may only ever become the forwarded `model` field. */
  const routed = (): string[] => [
    'openai/../../x',
    'openai/%2e%2e/x',
    'openai/..%2f..%2fx',
    'openai/http://evil.example/x',
    `openai/http://${S()}/x`,
    'openai/@evil.example',
    `openai/@${S()}`,
    `openai/user:pass@${S()}/v1/chat/completions`,
    `openai//${S()}/x`,
    `openai/\\\\${S()}\\x`,
    'openai/x?api-version=1&redirect=http://evil.example#frag',
    `openai/x\r\nHost: ${S()}\r\nX-Injected: 1`,
    'openai/x\nX-Injected: 1',
    'openai/x\u0000y',
    'openai/ spaced name ',
  ];
  /** Names no rule or alias routes: 404 model_not_found, nothing sent anywhere. */
  const unrouted = (): string[] => [
    `http://${S()}/v1/chat/completions`,
    'http://evil.example/v1/chat/completions',
    `//${S()}/x`,
    `/${S()}`,
    'openai/',
    '../openai/x',
    'mock/../openai/x',
    `${S()}`,
    'file:///etc/passwd',
    'up-chat\r\nX-Injected: 1',
  ];

  function expectForwardedOnly(name: string, before: number, path: string): void {
    const got = upstream.requests.slice(before);
    expect(got, name).toHaveLength(1);
    const r = got[0] as (typeof got)[number];
    expect(r.method, name).toBe('POST');
    expect(r.path, name).toBe(path);
    expect(r.headers.host, name).toBe(`127.0.0.1:${upstream.port}`);
    expect(r.headers['x-injected'], name).toBeUndefined();
    expect(r.headers.authorization, name).toBe(`Bearer ${PROVIDER_KEY}`);
    expect((r.json as { model: unknown }).model, name).toBe(name.slice('openai/'.length));
  }

  it('provider-qualified names with paths, URLs, userinfo, CR/LF: routed to the configured api_base only, the name only in the body', async () => {
    upstream.reset();
    for (const name of routed()) {
      const before = upstream.requests.length;
      const res = await record(await gw.fetch(CHAT, { method: 'POST', body: chatBody(name) }), `chat ${JSON.stringify(name)}`);
      expect(res.status, `${JSON.stringify(name)}: ${res.text.slice(0, 200)}`).toBe(200);
      expect(res.headers.get('x-injected'), name).toBeNull();
      expectForwardedOnly(name, before, '/v1/chat/completions');
    }
    // Streams and embeddings take the same path.
    for (const name of [`openai/http://${S()}/x`, 'openai/../../x']) {
      let before = upstream.requests.length;
      const stream = await record(await gw.fetch(CHAT, { method: 'POST', body: chatBody(name, { stream: true }) }), `stream ${name}`);
      expect(stream.status).toBe(200);
      expect(stream.text).toContain('data: [DONE]');
      expectForwardedOnly(name, before, '/v1/chat/completions');
      before = upstream.requests.length;
      const emb = await record(await gw.fetch(EMBED, { method: 'POST', body: JSON.stringify({ model: name, input: 'x' }) }), `embeddings ${name}`);
      expect(emb.status).toBe(200);
      expectForwardedOnly(name, before, '/v1/embeddings');
    }
    expect(sentinelConnections).toBe(0);
  });

  it('absolute URLs and other unrouted names: 404 model_not_found, nothing sent anywhere, no control characters echoed', async () => {
    upstream.reset();
    for (const name of unrouted()) {
      const res = await record(await gw.fetch(CHAT, { method: 'POST', body: chatBody(name) }), `chat ${JSON.stringify(name)}`);
      expect(res.status, `${JSON.stringify(name)}: ${res.text}`).toBe(404);
      const body = JSON.parse(res.text) as { error: { code: string; message: string; type: string } };
      expect(body.error.code, name).toBe('model_not_found');
      expect(body.error.type).toBe('gateway_error');
      expect(body.error.message, name).not.toMatch(/[\r\n\0]/);
      expect(res.headers.get('x-injected'), name).toBeNull();
    }
    // Nothing to wait on (the point is that nothing is sent): a request sent by mistake would land within a loopback round trip.
    await sleep(50);
    expect(upstream.requests).toHaveLength(0);
    expect(sentinelConnections).toBe(0);
  });

  it('/status/models/{model} with traversal-looking names (sent verbatim) answers a 404 JSON error, never another route', async () => {
    const paths = ['/status/models/..%2F..%2Fmetrics', '/status/models/%2e%2e', '/status/models/%2e%2e/%2e%2e/metrics', '/status/models/..%2fstatus', '/status/models/../../metrics', `/status/models/${encodeURIComponent(`http://${S()}/`)}`];
    const seen: string[] = [];
    for (const path of paths) {
      // node:http sends the path as written (fetch would normalise the dot segments first).
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: gw.port, path, method: 'GET', agent: false, headers: { authorization: `Bearer ${GATEWAY_KEY}` } }, (r) => {
          let body = '';
          r.setEncoding('utf8');
          r.on('data', (c: string) => (body += c));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
      transcript.push(`GET ${path} ${res.status}\n${res.body}`);
      seen.push(`${path} → ${res.status} ${res.body.slice(0, 80)}`);
      expect(res.status, path).toBe(404);
      expect(['model_not_found', 'route_not_found'], path).toContain((JSON.parse(res.body) as { error: { code: string } }).error.code);
    }
    console.info(`[figures] traversal-looking status paths: ${seen.join('; ')}`);
    expect(sentinelConnections).toBe(0);
  });
});

// ───────────────────────── wrong keys ─────────────────────────

describe('wrong keys', () => {
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'a' ? 'b' : 'a') + s.slice(i + 1);
  const sameLength = (): Array<[string, string]> => [
    ['last character changed', flip(GATEWAY_KEY, GATEWAY_KEY.length - 1)],
    ['first character changed', flip(GATEWAY_KEY, 0)],
    ['middle character changed', flip(GATEWAY_KEY, 17)],
    ['reversed', [...GATEWAY_KEY].reverse().join('')],
    ['upper-cased', GATEWAY_KEY.toUpperCase()],
    ['the provider key cut to length', PROVIDER_KEY.slice(0, GATEWAY_KEY.length)],
    ['all x', 'x'.repeat(GATEWAY_KEY.length)],
  ];
  const otherLengths = (): Array<[string, string]> => [
    ['a prefix (one character short)', GATEWAY_KEY.slice(0, -1)],
    ['the key plus one character', `${GATEWAY_KEY}x`],
    ['the key twice', GATEWAY_KEY + GATEWAY_KEY],
    ['one character', 's'],
    ['the provider key', PROVIDER_KEY],
    ['URL-encoded key', encodeURIComponent(GATEWAY_KEY)],
    ['base64 of the key', Buffer.from(GATEWAY_KEY).toString('base64')],
    ['4,000 characters', 'k'.repeat(4000)],
  ];

  it('a key longer than the header limit (20,000 characters) is refused with 431 headers_too_large, never served', async () => {
    for (const path of ['/v1/models', '/status/models']) {
      const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${'k'.repeat(20_000)}` } });
      expect(res.status, path).toBe(431);
      expect(await res.json()).toMatchObject({ error: { type: 'gateway_error', code: 'headers_too_large' } });
    }
  });

  it('wrong keys of the same length and of other lengths are refused with the same 401, on every protected route', async () => {
    const variants = [...sameLength(), ...otherLengths()];
    for (const key of [...sameLength().map(([, k]) => k)]) expect(key.length).toBe(GATEWAY_KEY.length);
    for (const [name, key] of variants) {
      for (const [method, path, body] of [
        ['GET', '/v1/models', undefined],
        ['GET', '/status/models', undefined],
        ['POST', CHAT, chatBody('mock-chat')],
        ['POST', EMBED, JSON.stringify({ model: 'mock-embed', input: 'x' })],
      ] as const) {
        const res = await record(await gw.fetch(path, { method, body, headers: { authorization: `Bearer ${key}` } }), `${method} ${path} (${name})`);
        expect(res.status, `${name} ${method} ${path}`).toBe(401);
        expect(res.text, name).toBe(INVALID_KEY_BODY);
        expect(res.headers.get('www-authenticate'), name).toBe('Bearer');
      }
    }
  });

  it('credentials in the wrong place or scheme are refused: Basic, no scheme, token in the query, empty bearer', async () => {
    const cases: Array<[string, string, Record<string, string>]> = [
      ['Basic', '/v1/models', { authorization: `Basic ${Buffer.from(`user:${GATEWAY_KEY}`).toString('base64')}` }],
      ['no scheme', '/v1/models', { authorization: GATEWAY_KEY }],
      ['empty bearer', '/v1/models', { authorization: 'Bearer ' }],
      ['bearer only', '/v1/models', { authorization: 'Bearer' }],
      ['query string', `/v1/models?api_key=${encodeURIComponent(GATEWAY_KEY)}`, {}],
      ['x-api-key header', '/v1/models', { 'x-api-key': GATEWAY_KEY }],
    ];
    for (const [name, path, headers] of cases) {
      const res = await record(await gw.fetch(path, { headers, auth: false }), `GET ${name}`);
      expect(res.status, name).toBe(401);
      expect(res.text, name).toBe(INVALID_KEY_BODY);
    }
    // The right key works (the scheme is case-insensitive, as RFC 9110 says).
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const ok = await record(await gw.fetch('/v1/models', { headers: { authorization: `${scheme} ${GATEWAY_KEY}` }, auth: false }), `GET /v1/models ${scheme}`);
      expect(ok.status, scheme).toBe(200);
    }
  });
});

// ───────────────────────── no secret anywhere ─────────────────────────

describe('no key or provider credential in any output', () => {
  it('a mixed run: successes, streams, 4xx, 413, provider 4xx/5xx, a disconnect, an oversized header', async () => {
    const calls: Array<[string, () => Promise<Response>]> = [
      ['chat up', () => gw.fetch(CHAT, { method: 'POST', body: chatBody('up-chat') })],
      ['chat mock', () => gw.fetch(CHAT, { method: 'POST', body: chatBody('mock-chat') })],
      ['stream up', () => gw.fetch(CHAT, { method: 'POST', body: chatBody('up-chat', { stream: true, stream_options: { include_usage: true } }) })],
      ['stream mock', () => gw.fetch(CHAT, { method: 'POST', body: chatBody('mock-chat', { stream: true }) })],
      ['embeddings up', () => gw.fetch(EMBED, { method: 'POST', body: JSON.stringify({ model: 'up-embed', input: ['a', 'b'] }) })],
      ['embeddings mock', () => gw.fetch(EMBED, { method: 'POST', body: JSON.stringify({ model: 'mock-embed', input: 'a' }) })],
      ['invalid JSON', () => gw.fetch(CHAT, { method: 'POST', body: '{"model":' })],
      ['invalid request', () => gw.fetch(CHAT, { method: 'POST', body: '{"model":42}' })],
      ['unknown model', () => gw.fetch(CHAT, { method: 'POST', body: chatBody('nope') })],
      ['wrong method', () => gw.fetch(CHAT, { method: 'GET' })],
      ['unknown route', () => gw.fetch('/v1/secret')],
      ['413', () => gw.fetch(CHAT, { method: 'POST', body: chatBody('up-chat', { pad: 'p'.repeat(70_000) }) })],
      ['no key', () => gw.fetch(CHAT, { method: 'POST', body: chatBody('up-chat'), auth: false })],
      ['status models', () => gw.fetch('/status/models')],
      ['status model', () => gw.fetch('/status/models/up-chat')],
    ];
    for (const [label, call] of calls) await record(await call(), label);
    // Provider errors, passed through (4xx) and mapped (5xx).
    upstream.behaveOnce({ kind: 'status', status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } });
    await record(await gw.fetch(CHAT, { method: 'POST', body: chatBody('up-chat') }), 'provider 401');
    upstream.behaveOnce({ kind: 'status', status: 429, headers: { 'retry-after': '1' } });
    await record(await gw.fetch(CHAT, { method: 'POST', body: chatBody('up-chat') }), 'provider 429');
    upstream.behaveOnce({ kind: 'status', status: 500 });
    await record(await gw.fetch(CHAT, { method: 'POST', body: chatBody('up-chat') }), 'provider 500');
    upstream.behaveOnce({ kind: 'redirect', location: `http://127.0.0.1:${sentinelPort}/steal` });
    await record(await gw.fetch(CHAT, { method: 'POST', body: chatBody('up-chat') }), 'provider redirect');
    // A client that leaves mid-stream.
    upstream.behaveOnce({ kind: 'stream-endless', intervalMs: 10 });
    await new Promise<void>((resolve) => {
      const body = chatBody('up-chat', { stream: true });
      const req = http.request({ host: '127.0.0.1', port: gw.port, path: CHAT, method: 'POST', agent: false, headers: { authorization: `Bearer ${GATEWAY_KEY}`, 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end(body);
    });
    await upstream.waitFor(() => upstream.openRequests() === 0, 2000);
    // An oversized header line carrying the key.
    await new Promise<void>((resolve) => {
      const s = net.connect(gw.port, '127.0.0.1');
      let out = '';
      s.on('data', (d: Buffer) => (out += d.toString('latin1')));
      s.on('error', () => undefined);
      s.on('close', () => {
        transcript.push(`raw oversized header\n${out}`);
        resolve();
      });
      s.write(`GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GATEWAY_KEY}\r\nX-Pad: ${'p'.repeat(300_000)}\r\nConnection: close\r\n\r\n`);
      setTimeout(() => s.destroy(), 1000);
    });
    expect(sentinelConnections).toBe(0);
  });

  it('neither key appears, in any form, in responses, log lines, /metrics, /status, probes, discovery; the caller key never reaches the provider', async () => {
    for (const path of ['/metrics', '/status', '/status/models', '/status/models/up-chat', '/status/models/up-embed', '/health', '/ready', '/health/live', '/v1/models', '/agent', '/agent/manifest', '/docs']) {
      const res = await record(await gw.fetch(path), `GET ${path}`);
      expect([200, 503], path).toContain(res.status);
    }
    const outputs: Array<[string, string]> = [
      ['responses', transcript.join('\n\n')],
      ['log lines', gw.rawLogs.join('\n')],
    ];
    expect(transcript.length).toBeGreaterThan(100);
    expect(gw.rawLogs.length).toBeGreaterThan(30);
    const leaks: string[] = [];
    for (const [keyName, key] of [
      ['gateway key', GATEWAY_KEY],
      ['provider key', PROVIDER_KEY],
    ] as const) {
      for (const [form, value] of leakForms(key)) {
        for (const [where, text] of outputs) if (text.includes(value)) leaks.push(`${keyName} (${form}) in ${where}`);
      }
    }
    expect(leaks).toEqual([]);
    // The provider saw its own key on every request and never the caller's.
    expect(upstream.requests.length).toBeGreaterThan(0);
    for (const r of upstream.requests) {
      expect(r.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
      const everything = JSON.stringify(r.headers) + r.body;
      for (const [form, value] of leakForms(GATEWAY_KEY)) expect(everything, `gateway key (${form}) sent to the provider`).not.toContain(value);
    }
  });
});
