/**
 * Integration tests of the proxy routes (/v1/chat/completions,
 * /v1/embeddings) against the real gateway (uWS front + worker threads) and
 * the fake upstream: forwarding, routing, input validation, body limits,
 * provider 4xx pass-through, the 502 family, missing credentials.
 */
import http from 'node:http';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { FakeUpstream } from './support/fake-upstream.js';
import { TEST_KEY, UPSTREAM_KEY, useGateway, type TestGateway } from './support/gateway.js';
import { chatBody } from './support/requests.js';
import { REFUSED_PORT } from './support/start-command.js';
import { EARLY_MS, MARGIN_MS, sleep } from './support/waits.js';

// ---- helpers ---------------------------------------------------------------

type Json = Record<string, unknown>;

/** Asserts a gateway-made error: status, JSON content type, exact body shape, Server header. */
async function expectGatewayError(res: Response, status: number, code: string): Promise<Json> {
  const text = await res.text();
  expect({ status: res.status, body: text }).toMatchObject({ status });
  expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  expect(res.headers.get('server') ?? '').toMatch(/^switchyard\//);
  const body = JSON.parse(text) as Json;
  expect(body).toEqual({ error: { message: expect.any(String), type: 'gateway_error', code } });
  expect(((body.error as Json).message as string).length).toBeGreaterThan(0);
  return body;
}

/** The gateway still serves a normal upstream-backed chat. */
async function expectStillServing(gw: TestGateway, upstream: FakeUpstream): Promise<void> {
  upstream.behave({ kind: 'ok' });
  const out = await gw.client().chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'still there?' }] });
  expect(out.choices[0]?.message.content).toBe('echo: still there?');
}

function words(s: string): number {
  const t = s.trim();
  return t === '' ? 0 : t.split(/\s+/).length;
}

/** A chat body of exactly `bytes` bytes (ASCII), for limit boundaries. */
function chatBodyOfSize(bytes: number, model = 'up-chat'): string {
  const empty = chatBody(model, {}, '');
  const pad = bytes - empty.length;
  if (pad < 0) throw new Error('size too small');
  const body = chatBody(model, {}, 'x'.repeat(pad));
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}

/**
 * POST with `Transfer-Encoding: chunked` (no Content-Length), writing each
 * chunk after a pause; stops writing once a response arrives.
 */
function chunkedPost(url: string, path: string, chunks: string[], gapMs = 30): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    let responded = false;
    const req = http.request(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      responded = true;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', (err) => reject(err));
    });
    req.on('error', (err) => {
      if (!responded) reject(err);
    });
    let i = 0;
    const next = (): void => {
      if (responded || req.destroyed) return;
      if (i >= chunks.length) {
        req.end();
        return;
      }
      req.write(chunks[i++] as string);
      setTimeout(next, gapMs);
    };
    next();
  });
}

function upstreamYamlEntry(name: string, upstreamUrl: string, extra = ''): string {
  return `
  - model_name: ${name}
    params: { model: openai/fake-model, api_base: ${upstreamUrl}, api_key: ${UPSTREAM_KEY}${extra} }`;
}

// ---- the default config: forwarding, routing, validation, 4xx -------------

describe('proxy: forwarding, routing and validation (default config)', () => {
  const { gw, upstream } = useGateway();

  it('1. chat (non-streamed, SDK) to up-chat returns the provider answer and forwards the body with only model rewritten', async () => {
    const unicode = 'Grüße, 世界! 👋🏽 e\u0301 \u2028 "quoted" \\ back';
    const sent = {
      model: 'up-chat',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: `say ${unicode}` },
      ],
      temperature: 0.7,
      top_p: 0.9,
      max_tokens: 64,
      user: 'user-ü-42',
      metadata: { trace: 'abc-123', note: '日本語' },
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather for a city',
            parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } }, required: ['city'] },
          },
        },
      ],
      tool_choice: 'auto',
      response_format: { type: 'json_object' },
      custom_nested: { a: { b: [1, 2.5, { c: null, d: true, e: 'ü' }], empty: {} }, list: [[], [[]]] },
    };
    const out = await gw.client().chat.completions.create(sent as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);

    const reply = `echo: say ${unicode}`;
    const promptTokens = words('You are terse.') + words(`say ${unicode}`);
    const completionTokens = words(reply);
    expect(out).toEqual({
      id: expect.stringMatching(/^chatcmpl-fake-\d+$/),
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'fake-model',
      choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    });

    expect(upstream.requests).toHaveLength(1);
    const seen = upstream.requests[0]!;
    expect(seen.method).toBe('POST');
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    // The gateway key never leaves the gateway, in any header.
    expect(JSON.stringify(seen.headers)).not.toContain(TEST_KEY);
    const forwarded = seen.json as Json;
    expect(forwarded.model).toBe('fake-model');
    const { model: _m1, ...forwardedRest } = forwarded;
    const { model: _m2, ...sentRest } = sent;
    expect(forwardedRest).toEqual(sentRest);
  });

  it('2. embeddings (SDK, float) for string and array input are the provider response, preserved; mock-embed is deterministic', async () => {
    const client = gw.client();
    for (const input of ['the quick brown fox', ['first text', 'second one here', 'ü 世界 👋']] as const) {
      upstream.reset();
      const viaGateway = await client.embeddings.create({ model: 'up-embed', input: input as string | string[], encoding_format: 'float' });
      expect(upstream.requests).toHaveLength(1);
      const seen = upstream.requests[0]!;
      expect(seen.path).toBe('/v1/embeddings');
      expect(seen.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
      expect(seen.json).toEqual({ model: 'fake-embed', input, encoding_format: 'float' });

      // The same request straight to the fake upstream.
      const directRes = await fetch(`${upstream.url}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` },
        body: seen.body,
      });
      expect(directRes.status).toBe(200);
      const directText = await directRes.text();
      const direct = JSON.parse(directText) as { data: Array<{ index: number; embedding: number[] }>; usage: unknown };
      const n = Array.isArray(input) ? input.length : 1;
      expect(direct.data.map((d) => d.index)).toEqual([...Array(n).keys()]);
      expect(direct.usage).toEqual({ prompt_tokens: expect.any(Number), total_tokens: expect.any(Number) });

      expect(JSON.parse(JSON.stringify(viaGateway))).toEqual(direct);

      // Byte for byte through the gateway too.
      const raw = await gw.fetch('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: 'up-embed', input, encoding_format: 'float' }) });
      expect(raw.status).toBe(200);
      expect(raw.headers.get('content-type') ?? '').toMatch(/^application\/json/);
      expect(await raw.text()).toBe(directText);
    }

    // The built-in mock: deterministic, 8 dimensions (mock_embedding_dimensions: 8), with usage.
    upstream.reset();
    const a = await client.embeddings.create({ model: 'mock-embed', input: ['alpha beta', 'gamma'], encoding_format: 'float' });
    const b = await client.embeddings.create({ model: 'mock-embed', input: ['alpha beta', 'gamma'], encoding_format: 'float' });
    expect(JSON.parse(JSON.stringify(a))).toEqual(JSON.parse(JSON.stringify(b)));
    expect(a.object).toBe('list');
    expect(a.data.map((d) => d.index)).toEqual([0, 1]);
    for (const d of a.data) {
      expect(d.object).toBe('embedding');
      expect(d.embedding).toHaveLength(8);
      for (const x of d.embedding) expect(Number.isFinite(x)).toBe(true);
    }
    expect(a.data[0]!.embedding).not.toEqual(a.data[1]!.embedding);
    // The mock counts words: two in 'alpha beta', one in 'gamma'.
    expect(a.usage.prompt_tokens).toBe(3);
    expect(a.usage.total_tokens).toBe(3);
    const single = await client.embeddings.create({ model: 'mock-embed', input: 'alpha beta', encoding_format: 'float' });
    expect(single.data).toHaveLength(1);
    expect(single.data[0]!.embedding).toEqual(a.data[0]!.embedding);
    expect(upstream.requests).toHaveLength(0);
  });

  it('3. route_rules: openai/gpt-4o is routed with model rewritten; unmatched glob, unknown provider and unknown alias are 404 model_not_found', async () => {
    const client = gw.client();
    const out = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'via rule' }] });
    expect(out.choices[0]?.message.content).toBe('echo: via rule');
    expect(upstream.requests).toHaveLength(1);
    expect((upstream.requests[0]!.json as Json).model).toBe('gpt-4o');
    expect(upstream.requests[0]!.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);

    upstream.reset();
    for (const model of ['openai/claude-x', 'unknownprovider/x', 'nonexistent-alias']) {
      const err = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, model).toBeInstanceOf(OpenAI.NotFoundError);
      expect((err as InstanceType<typeof OpenAI.NotFoundError>).status).toBe(404);
      expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
      expect((err as InstanceType<typeof OpenAI.NotFoundError>).type).toBe('gateway_error');

      const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody(model) });
      await expectGatewayError(res, 404, 'model_not_found');
    }
    // Embeddings route the same way.
    const embErr = await client.embeddings.create({ model: 'nonexistent-alias', input: 'x', encoding_format: 'float' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(embErr).toBeInstanceOf(OpenAI.NotFoundError);
    expect(upstream.requests).toHaveLength(0);
  });

  const invalid = Buffer.concat([Buffer.from('{"model":"up-chat","messages":[{"role":"user","content":"'), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from('"}]}')]);
  const cases: Array<{ name: string; path: string; body: string | Uint8Array; code: string }> = [
    { name: 'chat without model', path: '/v1/chat/completions', body: '{"messages":[{"role":"user","content":"hi"}]}', code: 'invalid_request' },
    { name: 'embeddings without model', path: '/v1/embeddings', body: '{"input":"hi"}', code: 'invalid_request' },
    { name: 'embeddings without input', path: '/v1/embeddings', body: '{"model":"up-embed"}', code: 'invalid_request' },
    { name: 'malformed JSON', path: '/v1/chat/completions', body: '{"model": "up-chat", messages: [}', code: 'invalid_json' },
    { name: 'truncated JSON', path: '/v1/chat/completions', body: '{"model":"up-chat","messages":[{"role":"user","content":"hi"}', code: 'invalid_json' },
    { name: 'empty body', path: '/v1/chat/completions', body: '', code: 'invalid_json' },
    { name: 'a JSON array body', path: '/v1/chat/completions', body: '[{"model":"up-chat","messages":[{"role":"user","content":"hi"}]}]', code: 'invalid_body' },
    { name: 'a JSON string body', path: '/v1/chat/completions', body: '"up-chat"', code: 'invalid_body' },
    { name: 'stream: "yes"', path: '/v1/chat/completions', body: '{"model":"up-chat","stream":"yes","messages":[{"role":"user","content":"hi"}]}', code: 'invalid_request' },
    { name: 'messages not an array', path: '/v1/chat/completions', body: '{"model":"up-chat","messages":"hi"}', code: 'invalid_request' },
    { name: 'model a number', path: '/v1/chat/completions', body: '{"model":42,"messages":[{"role":"user","content":"hi"}]}', code: 'invalid_request' },
    { name: 'invalid UTF-8 bytes', path: '/v1/chat/completions', body: new Uint8Array(invalid), code: 'invalid_json' },
  ];

  it.each(cases)('4. 400 $code: $name, and nothing reaches the upstream', async ({ path, body, code }) => {
    const before = upstream.requests.length;
    const res = await gw.fetch(path, { method: 'POST', body });
    await expectGatewayError(res, 400, code);
    // Nothing to wait on (the point is that nothing is sent): a request forwarded by mistake would land within a loopback round trip.
    await sleep(50);
    expect(upstream.requests.length).toBe(before);
  });

  it.each([400, 404, 422, 429])('6. provider %i passes through with status, body bytes and allowlisted headers only', async (status) => {
    const body = `{"error": {"message": "provider says no (${status}) — ü", "type": "invalid_request_error", "param": null, "code": "p_${status}"}}`;
    // CONTRACT.md, failure table: a 429 is tried again (here on the lone deployment, num_retries 2 by default) and the
    // last one passed through; any other 4xx is passed through at once.
    const attempts = status === 429 ? 3 : 1;
    upstream.behave({
      kind: 'status',
      status,
      body,
      headers: { 'x-ratelimit-remaining-requests': '0', 'retry-after': '3', 'set-cookie': 'a=b', 'x-internal-secret': 'nope' },
    });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody('up-chat') });
    expect(res.status).toBe(status);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(Buffer.from(body, 'utf8'))).toBe(true);
    expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(res.headers.get('retry-after')).toBe('3');
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(res.headers.get('x-internal-secret')).toBeNull();
    expect(res.headers.get('x-fake-upstream')).toBeNull();
    expect(res.headers.get('server') ?? '').toMatch(/^switchyard\//);
    expect(res.headers.get('x-switchyard-deployment')).toBe('up-chat-0');
    expect(res.headers.get('x-switchyard-attempts')).toBe(String(attempts));
    expect(upstream.requests).toHaveLength(attempts);
  });
});

// ---- request body limit -----------------------------------------------------

describe('proxy: request body limit (GATEWAY_MAX_BODY_BYTES=1024)', () => {
  const { gw, upstream } = useGateway({ gateway: { env: { GATEWAY_MAX_BODY_BYTES: '1024' } } });

  it('5. 413 body_too_large over the limit (Content-Length and chunked); bodies up to the limit pass', async () => {
    // Just under and exactly at the limit: forwarded.
    for (const size of [1023, 1024]) {
      const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBodyOfSize(size) });
      expect(res.status, `size ${size}`).toBe(200);
      const json = (await res.json()) as { choices: Array<{ message: { content: string } }> };
      expect(json.choices[0]?.message.content.startsWith('echo: xxx')).toBe(true);
    }
    expect(upstream.requests).toHaveLength(2);

    // One byte over, with Content-Length.
    upstream.reset();
    const over = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBodyOfSize(1025) });
    await expectGatewayError(over, 413, 'body_too_large');

    // Chunked, no Content-Length: 3 × 400 bytes crosses 1024 on the third chunk.
    const big = chatBodyOfSize(1200);
    const chunked = await chunkedPost(gw.url, '/v1/chat/completions', [big.slice(0, 400), big.slice(400, 800), big.slice(800)]);
    expect(chunked.status).toBe(413);
    expect(chunked.headers['content-length']).toBeDefined();
    expect(JSON.parse(chunked.body)).toEqual({ error: { message: expect.any(String), type: 'gateway_error', code: 'body_too_large' } });

    // Nothing to wait on (the point is that nothing is sent): a request forwarded by mistake would land within a loopback round trip.
    await sleep(50);
    expect(upstream.requests).toHaveLength(0);

    // A chunked body under the limit is accepted.
    const small = chatBodyOfSize(900);
    const ok = await chunkedPost(gw.url, '/v1/chat/completions', [small.slice(0, 450), small.slice(450)]);
    expect(ok.status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
  });
});

// ---- the 502 family, credentials --------------------------------------------

describe('proxy: upstream failures (502) and missing credentials (503)', () => {
  const { gw, upstream } = useGateway({
    gateway: async (upstream) => {
      const deadPort = REFUSED_PORT;
      const yaml = `
model_list:${upstreamYamlEntry('up-chat', upstream.url)}${upstreamYamlEntry('hdr-chat', upstream.url, ', headers_timeout: 0.3')}${upstreamYamlEntry('idle-chat', upstream.url, ', idle_timeout: 0.2')}${upstreamYamlEntry('total-chat', upstream.url, ', timeout: 0.5')}
  - model_name: refused-chat
    params: { model: openai/fake-model, api_base: http://127.0.0.1:${deadPort}/v1, api_key: ${UPSTREAM_KEY} }
  - model_name: nokey-chat
    params: { model: openai/fake-model, api_base: ${upstream.url}, api_key: os.environ/SWITCHYARD_UNSET_KEY }
limits:
  max_response_body_bytes: 10000
# One attempt each: this block is how one failure is answered; retries and fallbacks are test/routing-*.test.ts's.
router_settings: { num_retries: 0 }
`;
      return { yaml };
    },
  });

  const chat = (model = 'up-chat'): Promise<Response> =>
    gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody(model) });

  /**
   * For the timeout cases: the gateway must answer well within 5 s. The client
   * gives up after that (which also makes the gateway cancel the upstream call,
   * so a failure here does not leave a trickling request behind for the next test).
   */
  const chatWithDeadline = async (model: string): Promise<{ res: Response; elapsed: number }> => {
    const t0 = performance.now();
    try {
      const res = await gw.fetch('/v1/chat/completions', {
        method: 'POST',
        body: chatBody(model),
        signal: AbortSignal.timeout(5000),
      });
      return { res, elapsed: performance.now() - t0 };
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') throw new Error(`the gateway did not answer within 5 s for ${model}`, { cause: err });
      throw err;
    }
  };

  it.each([500, 503])('7. upstream %i → 502 upstream_error', async (status) => {
    upstream.behaveOnce({ kind: 'status', status, headers: { 'x-ratelimit-remaining-requests': '7' } });
    await expectGatewayError(await chat(), 502, 'upstream_error');
    expect(upstream.requests).toHaveLength(1);
    await expectStillServing(gw, upstream);
  });

  it('7. connection refused → 502 upstream_unreachable', async () => {
    await expectGatewayError(await chat('refused-chat'), 502, 'upstream_unreachable');
    await expectStillServing(gw, upstream);
  });

  it('7. reset before headers → 502 upstream_unreachable', async () => {
    upstream.behaveOnce({ kind: 'reset-before-headers' });
    await expectGatewayError(await chat(), 502, 'upstream_unreachable');
    expect(upstream.requests).toHaveLength(1);
    await expectStillServing(gw, upstream);
  });

  it('7. headers never come (headers_timeout 0.3 s) → 502 upstream_headers_timeout, upstream request cancelled', async () => {
    upstream.behaveOnce({ kind: 'hang' });
    const { res, elapsed } = await chatWithDeadline('hdr-chat');
    await expectGatewayError(res, 502, 'upstream_headers_timeout');
    expect(elapsed).toBeGreaterThanOrEqual(300 - EARLY_MS);
    expect(elapsed).toBeLessThan(300 + MARGIN_MS);
    await upstream.waitFor(() => upstream.openRequests() === 0, MARGIN_MS);
    await expectStillServing(gw, upstream);
  });

  it('7. body stalls (idle_timeout 0.2 s, trickle every 500 ms) → 502 upstream_idle_timeout', async () => {
    upstream.behaveOnce({ kind: 'trickle', intervalMs: 500 });
    const { res, elapsed } = await chatWithDeadline('idle-chat');
    await expectGatewayError(res, 502, 'upstream_idle_timeout');
    expect(elapsed).toBeGreaterThanOrEqual(200 - EARLY_MS);
    expect(elapsed).toBeLessThan(200 + MARGIN_MS);
    await upstream.waitFor(() => upstream.openRequests() === 0, MARGIN_MS);
    await expectStillServing(gw, upstream);
  });

  it('7. body keeps trickling past the total timeout (timeout 0.5 s, trickle every 50 ms) → 502 upstream_timeout', async () => {
    upstream.behaveOnce({ kind: 'trickle', intervalMs: 50 });
    const { res, elapsed } = await chatWithDeadline('total-chat');
    await expectGatewayError(res, 502, 'upstream_timeout');
    expect(elapsed).toBeGreaterThanOrEqual(500 - EARLY_MS);
    expect(elapsed).toBeLessThan(500 + MARGIN_MS);
    await upstream.waitFor(() => upstream.openRequests() === 0, MARGIN_MS);
    await expectStillServing(gw, upstream);
  });

  it('7. malformed JSON with 200 → 502 upstream_invalid_response', async () => {
    upstream.behaveOnce({ kind: 'malformed-json' });
    await expectGatewayError(await chat(), 502, 'upstream_invalid_response');
    await expectStillServing(gw, upstream);
  });

  it('7. valid JSON that is not the compatible format → 502 upstream_invalid_response', async () => {
    upstream.behaveOnce({ kind: 'not-compatible' });
    await expectGatewayError(await chat(), 502, 'upstream_invalid_response');
    await expectStillServing(gw, upstream);
  });

  it('7. response over limits.max_response_body_bytes (10000) → 502 upstream_response_too_large', async () => {
    upstream.behaveOnce({ kind: 'huge', bytes: 200_000 });
    await expectGatewayError(await chat(), 502, 'upstream_response_too_large');
    await expectStillServing(gw, upstream);
    // A response just under the limit is still fine.
    upstream.behaveOnce({ kind: 'huge', bytes: 9_000 });
    const ok = await chat();
    expect(ok.status).toBe(200);
    expect((await ok.arrayBuffer()).byteLength).toBe(9_000);
  });

  it('7. redirect → 502 upstream_redirect (not followed)', async () => {
    upstream.behaveOnce({ kind: 'redirect', location: `${upstream.url}/chat/completions` });
    await expectGatewayError(await chat(), 502, 'upstream_redirect');
    expect(upstream.requests).toHaveLength(1);
    await expectStillServing(gw, upstream);
  });

  it('8. alias whose api_key names an unset variable → 503 credentials_missing, upstream gets nothing', async () => {
    await expectGatewayError(await chat('nokey-chat'), 503, 'credentials_missing');
    const err = await gw
      .client()
      .chat.completions.create({ model: 'nokey-chat', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('credentials_missing');
    // Nothing to wait on (the point is that nothing is sent): a request forwarded by mistake would land within a loopback round trip.
    await sleep(50);
    expect(upstream.requests).toHaveLength(0);
    await expectStillServing(gw, upstream);
  });
});
