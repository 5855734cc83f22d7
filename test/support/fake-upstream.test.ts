import http from 'node:http';
import OpenAI, { AuthenticationError, NotFoundError } from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeUpstream, UPSTREAM_KEY, type FakeUpstream } from './fake-upstream.js';
import { parseSse, sseData } from './sse.js';
import { sleep } from './waits.js';

let up: FakeUpstream;

beforeAll(async () => {
  up = await startFakeUpstream();
});
afterAll(async () => {
  await up.close();
});
beforeEach(() => {
  up.reset();
});
afterEach(async () => {
  // Every test must leave nothing running behind: no open responses, no timers.
  await up.waitFor(() => up.openRequests() === 0 && up.activeTimers() === 0, 3000);
});

/** The key the fake takes, as the gateway sends it. */
const AUTH = { authorization: `Bearer ${UPSTREAM_KEY}` };

function postJson(path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${up.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH },
    body: JSON.stringify(body),
    ...init,
  });
}

/** GET with the fake's key. */
function get(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${up.url}${path}`, { ...init, headers: AUTH });
}

/** Read a fetch body until it ends or errors; returns the text and the error, if any. */
async function readAll(res: Response): Promise<{ text: string; error: unknown }> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, error: undefined };
      text += dec.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

describe('ok behaviour', () => {
  it('exposes url/origin/port', () => {
    expect(up.origin).toBe(`http://127.0.0.1:${up.port}`);
    expect(up.url).toBe(`${up.origin}/v1`);
  });

  it('GET /v1/models', async () => {
    const res = await get('/models');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-fake-upstream')).toBe('1');
    expect(await res.json()).toEqual({
      object: 'list',
      data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }],
    });
  });

  it('POST /v1/chat/completions echoes the last message and records the request', async () => {
    const body = {
      model: 'm1',
      messages: [
        { role: 'system', content: 'be nice' },
        { role: 'user', content: 'hello there' },
      ],
    };
    const res = await postJson('/chat/completions', body);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-fake-upstream')).toBe('1');
    const json = (await res.json()) as Record<string, unknown>;
    expect(json).toEqual({
      id: 'chatcmpl-fake-1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'm1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'echo: hello there' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
    });
    expect(up.requests).toHaveLength(1);
    const rec = up.requests[0]!;
    expect(rec.method).toBe('POST');
    expect(rec.path).toBe('/v1/chat/completions');
    expect(rec.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(rec.key).toBe(UPSTREAM_KEY);
    expect(rec.refused).toBeNull();
    expect(rec.body).toBe(JSON.stringify(body));
    expect(rec.json).toEqual(body);

    const again = (await (await postJson('/chat/completions', body)).json()) as { id: string };
    expect(again.id).toBe('chatcmpl-fake-2');
  });

  it('handles array (multi-part) message content', async () => {
    const res = await postJson('/chat/completions', {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'a ' }, { type: 'text', text: 'b' }] }],
    });
    const json = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(json.choices[0]!.message.content).toBe('echo: a b');
  });

  it('chat with a bad body is a 400 OpenAI-style error', async () => {
    const res = await fetch(`${up.url}/chat/completions`, { method: 'POST', body: 'nope', headers: AUTH });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { type: string } };
    expect(json.error.type).toBe('invalid_request_error');
    expect(up.requests[0]!.json).toBeUndefined();
    expect(up.requests[0]!.body).toBe('nope');
  });

  it('streams SSE when stream is true, without usage by default', async () => {
    const res = await postJson('/chat/completions', { model: 'm', stream: true, messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-fake-upstream')).toBe('1');
    const data = sseData(await res.text());
    expect(data).toHaveLength(5); // 3 content + stop + [DONE]
    expect(data[4]).toBe('[DONE]');
    const chunks = data.slice(0, 4).map((d) => JSON.parse(d) as Record<string, any>);
    expect(chunks.map((c) => c.choices[0].delta.content ?? null)).toEqual(['tok0 ', 'tok1 ', 'tok2 ', null]);
    for (const c of chunks) {
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.model).toBe('m');
      expect(c.id).toBe(chunks[0]!.id);
    }
    expect(chunks[3]!.choices[0].finish_reason).toBe('stop');
    expect(chunks[0]!.choices[0].finish_reason).toBeNull();
  });

  it('adds a usage chunk when stream_options.include_usage is true', async () => {
    const res = await postJson('/chat/completions', {
      model: 'm',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'x' }],
    });
    const data = sseData(await res.text());
    expect(data).toHaveLength(6);
    const usage = JSON.parse(data[4]!) as Record<string, any>;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({ prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 });
    expect(data[5]).toBe('[DONE]');
  });

  it('POST /v1/embeddings with a string, an array, dimensions and base64', async () => {
    const one = (await (await postJson('/embeddings', { model: 'e', input: 'hi' })).json()) as Record<string, any>;
    expect(one.object).toBe('list');
    expect(one.model).toBe('e');
    expect(one.data).toHaveLength(1);
    expect(one.data[0].object).toBe('embedding');
    expect(one.data[0].index).toBe(0);
    expect(one.data[0].embedding).toHaveLength(8);
    expect(one.usage).toEqual({ prompt_tokens: 1, total_tokens: 1 });

    const many = (await (await postJson('/embeddings', { model: 'e', input: ['hi', 'there you'] })).json()) as Record<
      string,
      any
    >;
    expect(many.data.map((d: { index: number }) => d.index)).toEqual([0, 1]);
    expect(many.data[0].embedding).toEqual(one.data[0].embedding); // deterministic
    expect(many.data[1].embedding).not.toEqual(one.data[0].embedding);
    expect(many.usage.prompt_tokens).toBe(3);

    const dims = (await (await postJson('/embeddings', { model: 'e', input: 'hi', dimensions: 3 })).json()) as Record<
      string,
      any
    >;
    expect(dims.data[0].embedding).toHaveLength(3);
    expect(dims.data[0].embedding).toEqual(one.data[0].embedding.slice(0, 3));

    const b64 = (await (
      await postJson('/embeddings', { model: 'e', input: 'hi', encoding_format: 'base64' })
    ).json()) as Record<string, any>;
    const buf = Buffer.from(b64.data[0].embedding as string, 'base64');
    const floats = Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4));
    expect(floats).toHaveLength(8);
    floats.forEach((f, i) => expect(f).toBeCloseTo(one.data[0].embedding[i] as number, 5));

    const bad = await postJson('/embeddings', { model: 'e', input: 42 });
    expect(bad.status).toBe(400);
    await bad.body?.cancel();
  });

  it('unknown routes are 404 with an OpenAI-style error body', async () => {
    const res = await fetch(`${up.url}/nope`);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-fake-upstream')).toBe('1');
    const json = (await res.json()) as { error: Record<string, unknown> };
    expect(json.error.type).toBe('invalid_request_error');
    expect(json.error.code).toBeNull();
    expect(typeof json.error.message).toBe('string');
    expect(json.error).toEqual({ message: 'Invalid URL (GET /v1/nope)', type: 'invalid_request_error', param: null, code: null });
  });

  it('keeps connections alive', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const before = up.connectionsAccepted();
    const get = (): Promise<{ reused: boolean; status: number | undefined }> =>
      new Promise((resolve, reject) => {
        const req = http.get(`${up.url}/models`, { agent, headers: AUTH }, (res) => {
          res.resume();
          res.on('end', () => resolve({ reused: req.reusedSocket, status: res.statusCode }));
        });
        req.on('error', reject);
      });
    try {
      const a = await get();
      const b = await get();
      const c = await get();
      expect([a.status, b.status, c.status]).toEqual([200, 200, 200]);
      expect([a.reused, b.reused, c.reused]).toEqual([false, true, true]);
      expect(up.connectionsAccepted() - before).toBe(1);
    } finally {
      agent.destroy();
    }
  });
});

describe('refuses what api.openai.com refuses, read by the official openai SDK', () => {
  const sdk = (apiKey: string, url = up.url) => new OpenAI({ apiKey, baseURL: url, maxRetries: 0 });
  const hi = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'hi' }] };
  /** [method, path, refused, key] of every request recorded. */
  const record = () => up.requests.map((r) => [r.method, r.path, r.refused, r.key]);

  it('the right key: chat, a stream, embeddings, models.list and models.retrieve are read by the SDK, each recorded with its method, path and key', async () => {
    const client = sdk(UPSTREAM_KEY);
    const completion = await client.chat.completions.create(hi);
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    const stream = await client.chat.completions.create({ ...hi, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('tok0 tok1 tok2 ');
    // The SDK asks for base64 and decodes it: the fake's 8 floats, as float32.
    const embedded = await client.embeddings.create({ model: 'e', input: ['a', 'b'] });
    expect(embedded.data.map((d) => d.embedding.length)).toEqual([8, 8]);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['fake-model']);
    expect(await client.models.retrieve('fake-model')).toEqual({ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' });
    // A model it does not have is the served route's own 404, not a refusal.
    const missing = await client.models.retrieve('no-such-model').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    expect(record()).toEqual([
      ['POST', '/v1/chat/completions', null, UPSTREAM_KEY],
      ['POST', '/v1/chat/completions', null, UPSTREAM_KEY],
      ['POST', '/v1/embeddings', null, UPSTREAM_KEY],
      ['GET', '/v1/models', null, UPSTREAM_KEY],
      ['GET', '/v1/models/fake-model', null, UPSTREAM_KEY],
      ['GET', '/v1/models/no-such-model', null, UPSTREAM_KEY],
    ]);
    expect(up.refusals()).toEqual([]);
  });

  it('a wrong key: AuthenticationError, 401 invalid_api_key with the key masked as OpenAI masks it; no behaviour used up', async () => {
    up.behaveOnce({ kind: 'status', status: 503 });
    const wrong = 'sk-previous-deployment-key-0123';
    for (const call of [() => sdk(wrong).chat.completions.create(hi), () => sdk(wrong).embeddings.create({ model: 'e', input: 'x' }), () => sdk(wrong).models.list()]) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuthenticationError);
      expect(err).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error', param: null });
      expect((err as AuthenticationError).message).toBe('401 Incorrect API key provided: sk-previ*******************0123. You can find your API key at https://platform.openai.com/account/api-keys.');
    }
    expect(up.refusals().map((r) => [r.method, r.path, r.refused, r.key])).toEqual([
      ['POST', '/v1/chat/completions', 'key', wrong],
      ['POST', '/v1/embeddings', 'key', wrong],
      ['GET', '/v1/models', 'key', wrong],
    ]);
    // The refused requests never reached a behaviour: the queued 503 is the next served request's.
    expect((await postJson('/chat/completions', hi)).status).toBe(503);
  });

  it('no key: 401 with OpenAI\'s "You didn\'t provide an API key", code null', async () => {
    const keyless = new OpenAI({ apiKey: 'unused', baseURL: up.url, maxRetries: 0, defaultHeaders: { authorization: null } });
    const err = await keyless.chat.completions.create(hi).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err).toMatchObject({ status: 401, code: null, type: 'invalid_request_error' });
    expect((err as AuthenticationError).message).toMatch(/^401 You didn't provide an API key\. You need to provide your API key in an Authorization header using Bearer auth/);
    expect(record()).toEqual([['POST', '/v1/chat/completions', 'key', null]]);
  });

  it('a path it does not serve, or a served path with another method: NotFoundError, 404 Invalid URL (<method> <path>), before the key is read', async () => {
    const client = sdk(UPSTREAM_KEY);
    const cases: Array<[() => Promise<unknown>, string]> = [
      [() => client.post('/chat/completion', { body: hi }), 'POST /v1/chat/completion'],
      [() => client.post('/completions/chat', { body: hi }), 'POST /v1/completions/chat'],
      [() => client.post('/chat/completions/', { body: hi }), 'POST /v1/chat/completions/'],
      [() => client.post('/embedding', { body: { model: 'e', input: 'x' } }), 'POST /v1/embedding'],
      [() => client.post('/responses', { body: { model: 'm', input: 'x' } }), 'POST /v1/responses'],
      [() => client.get('/chat/completions'), 'GET /v1/chat/completions'],
      [() => client.post('/models', { body: {} }), 'POST /v1/models'],
      [() => client.get('/model'), 'GET /v1/model'],
      [() => sdk('sk-wrong', up.origin).get('/models'), 'GET /models'],
    ];
    for (const [call, url] of cases) {
      const err = await call().catch((e: unknown) => e);
      expect(err, url).toBeInstanceOf(NotFoundError);
      expect(err, url).toMatchObject({ status: 404, code: null, param: null, type: 'invalid_request_error', message: `404 Invalid URL (${url})` });
    }
    expect(up.requests.map((r) => r.refused)).toEqual(cases.map(() => 'path'));
  });

  it('refusals() lists the refusals no test took; takeRefusals() takes them; reset() forgets them', async () => {
    await get('/nope');
    await fetch(`${up.url}/models`);
    expect(up.refusals().map((r) => r.refused)).toEqual(['path', 'key']);
    expect(up.takeRefusals().map((r) => r.path)).toEqual(['/v1/nope', '/v1/models']);
    expect(up.refusals()).toEqual([]);
    await get('/nope');
    expect(up.refusals()).toHaveLength(1);
    expect(up.requests).toHaveLength(3);
    up.reset();
    expect(up.refusals()).toEqual([]);
  });

  it('another key, or keyless (a self-hosted server started without one)', async () => {
    const own = await startFakeUpstream({ key: 'sk-own' });
    const keyless = await startFakeUpstream({ key: null });
    try {
      expect([own.key, keyless.key]).toEqual(['sk-own', null]);
      expect((await sdk('sk-own', own.url).chat.completions.create(hi)).object).toBe('chat.completion');
      await expect(sdk(UPSTREAM_KEY, own.url).chat.completions.create(hi)).rejects.toBeInstanceOf(AuthenticationError);
      expect((await sdk('anything', keyless.url).chat.completions.create(hi)).object).toBe('chat.completion');
      expect((await fetch(`${keyless.url}/models`)).status).toBe(200);
      // Keyless still serves only its paths.
      await expect(sdk('anything', keyless.url).post('/chat/completion', { body: hi })).rejects.toBeInstanceOf(NotFoundError);
      expect(keyless.requests.map((r) => [r.path, r.key, r.refused])).toEqual([
        ['/v1/chat/completions', 'anything', null],
        ['/v1/models', null, null],
        ['/v1/chat/completion', 'anything', 'path'],
      ]);
    } finally {
      await own.close();
      await keyless.close();
    }
  });
});

describe('behaviour switching', () => {
  it('behaveOnce applies to one request (FIFO), behave sticks, reset restores ok', async () => {
    up.behave({ kind: 'status', status: 503 });
    up.behaveOnce({ kind: 'not-compatible' });
    up.behaveOnce({ kind: 'status', status: 418 });
    const s1 = await get('/models');
    const s2 = await get('/models');
    const s3 = await get('/models');
    const s4 = await get('/models');
    expect([s1.status, s2.status, s3.status, s4.status]).toEqual([200, 418, 503, 503]);
    expect(await s1.json()).toEqual({ hello: 'world' });
    await Promise.all([s2, s3, s4].map((r) => r.text()));
    expect(up.requests).toHaveLength(4);
    up.reset();
    expect(up.requests).toHaveLength(0);
    expect(up.abortedRequests()).toBe(0);
    const ok = await get('/models');
    expect(ok.status).toBe(200);
    await ok.text();
  });
});

describe('failure behaviours', () => {
  it('status: default OpenAI-style error body', async () => {
    up.behave({ kind: 'status', status: 500 });
    const res = await postJson('/chat/completions', { model: 'm', messages: [] });
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-fake-upstream')).toBe('1');
    expect(await res.json()).toEqual({
      error: { message: 'fake upstream error 500', type: 'upstream_test', code: 'fake_500' },
    });
  });

  it('status: custom body and headers', async () => {
    up.behave({ kind: 'status', status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': '7' } });
    const res = await get('/models');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toEqual({ error: { message: 'slow down' } });

    up.behave({ kind: 'status', status: 502, body: '<html>bad gateway</html>', headers: { 'content-type': 'text/html' } });
    const html = await get('/models');
    expect(html.status).toBe(502);
    expect(html.headers.get('content-type')).toBe('text/html');
    expect(await html.text()).toBe('<html>bad gateway</html>');
  });

  it('headers: normal answer plus extra headers', async () => {
    up.behave({
      kind: 'headers',
      headers: { 'x-ratelimit-remaining-requests': '9', 'set-cookie': 'a=b; Path=/', 'x-request-id': 'req-1' },
    });
    const res = await get('/models');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('9');
    expect(res.headers.get('set-cookie')).toBe('a=b; Path=/');
    expect(res.headers.get('x-request-id')).toBe('req-1');
    expect(res.headers.get('x-fake-upstream')).toBe('1');
    expect(((await res.json()) as { object: string }).object).toBe('list');
  });

  it('headers: connection: close closes the socket after the answer', async () => {
    up.behave({ kind: 'headers', headers: { connection: 'close' } });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const closed = await new Promise<boolean>((resolve, reject) => {
        const req = http.get(`${up.url}/models`, { agent, headers: AUTH }, (res) => {
          expect(res.headers.connection).toBe('close');
          res.resume();
          res.on('end', () => req.socket!.once('close', () => resolve(true)));
        });
        req.on('error', reject);
      });
      expect(closed).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('reset-before-headers: the client gets a connection error; the request is still recorded', async () => {
    up.behave({ kind: 'reset-before-headers' });
    await expect(postJson('/chat/completions', { model: 'm', messages: [] })).rejects.toThrow();
    expect(up.requests).toHaveLength(1);
    expect(up.requests[0]!.json).toEqual({ model: 'm', messages: [] });
    await up.waitFor(() => up.openRequests() === 0);
    expect(up.abortedRequests()).toBe(0); // server-side reset is not a client abort
  });

  it('hang: no headers until the client aborts; the abort is counted', async () => {
    up.behave({ kind: 'hang' });
    const ac = new AbortController();
    const p = get('/models', { signal: ac.signal });
    await up.waitFor(() => up.requests.length === 1);
    // Nothing to wait on (the point is that no headers come): a fake that answered would within a loopback round trip.
    await sleep(50);
    expect(up.openRequests()).toBe(1);
    expect(up.abortedRequests()).toBe(0);
    ac.abort();
    await expect(p).rejects.toThrow();
    await up.waitFor(() => up.abortedRequests() === 1);
    expect(up.openRequests()).toBe(0);
  });

  it('trickle: one byte per interval, stops (no timers) when the client goes away', async () => {
    up.behave({ kind: 'trickle', intervalMs: 30 });
    const ac = new AbortController();
    const t0 = Date.now();
    const res = await get('/models', { signal: ac.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-fake-upstream')).toBe('1');
    expect(Date.now() - t0).toBeLessThan(500); // headers come right away
    const reader = res.body!.getReader();
    let got = 0;
    while (got < 3) {
      const { value } = await reader.read();
      got += value?.byteLength ?? 0;
    }
    expect(Date.now() - t0).toBeGreaterThanOrEqual(55);
    expect(up.openRequests()).toBe(1);
    expect(up.activeTimers()).toBe(1);
    ac.abort();
    await up.waitFor(() => up.abortedRequests() === 1);
    expect(up.activeTimers()).toBe(0);
    const sent = up.bytesSent();
    // Nothing to wait on (the point is that nothing more is sent): two of its 30 ms intervals.
    await sleep(60);
    expect(up.bytesSent()).toBe(sent);
  });

  it('malformed-json: 200 application/json that does not parse', async () => {
    up.behave({ kind: 'malformed-json' });
    const res = await postJson('/chat/completions', { model: 'm', messages: [] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const text = await res.text();
    expect(() => JSON.parse(text)).toThrow();
  });

  it('not-compatible: valid JSON of the wrong shape', async () => {
    up.behave({ kind: 'not-compatible' });
    const res = await postJson('/chat/completions', { model: 'm', messages: [] });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ hello: 'world' });
  });

  it('huge: valid JSON body of the requested size with content-length', async () => {
    const bytes = 3 * 1024 * 1024 + 17;
    up.behave({ kind: 'huge', bytes });
    const res = await postJson('/chat/completions', { model: 'm', messages: [] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(bytes));
    const text = await res.text();
    expect(Buffer.byteLength(text)).toBe(bytes);
    const json = JSON.parse(text) as { object: string; choices: { message: { content: string } }[] };
    expect(json.object).toBe('chat.completion');
    expect(json.choices[0]!.message.content.length).toBeGreaterThan(bytes - 400);
    expect(up.bytesSent()).toBe(bytes);
  });

  it('redirect: 302 with Location', async () => {
    up.behave({ kind: 'redirect', location: 'http://127.0.0.1:1/elsewhere' });
    const res = await get('/models', { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('http://127.0.0.1:1/elsewhere');
    expect(res.headers.get('x-fake-upstream')).toBe('1');
    await res.text();
  });

  it('delay: normal answer after the delay; the timer is cleared on client abort', async () => {
    up.behave({ kind: 'delay', ms: 120 });
    const t0 = Date.now();
    const res = await get('/models');
    expect(res.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    await res.json();

    up.behave({ kind: 'delay', ms: 10_000 });
    const ac = new AbortController();
    const p = get('/models', { signal: ac.signal });
    await up.waitFor(() => up.activeTimers() === 1);
    ac.abort();
    await expect(p).rejects.toThrow();
    await up.waitFor(() => up.abortedRequests() === 1);
    expect(up.activeTimers()).toBe(0);
  });
});

describe('stream behaviours', () => {
  it('stream: chunks, interval and forced usage, regardless of the request', async () => {
    up.behave({ kind: 'stream', chunks: 5, intervalMs: 20, usage: true });
    const t0 = Date.now();
    const res = await postJson('/chat/completions', { model: 'sm', messages: [{ role: 'user', content: 'q' }] });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const data = sseData(await res.text());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(5 * 20);
    expect(data).toHaveLength(5 + 1 + 1 + 1);
    const parsed = data.slice(0, -1).map((d) => JSON.parse(d) as Record<string, any>);
    expect(parsed.slice(0, 5).map((c) => c.choices[0].delta.content)).toEqual(['tok0 ', 'tok1 ', 'tok2 ', 'tok3 ', 'tok4 ']);
    expect(parsed[5]!.choices[0].finish_reason).toBe('stop');
    expect(parsed[6]!.usage).toEqual({ prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 });
    expect(parsed[6]!.model).toBe('sm');
    expect(data.at(-1)).toBe('[DONE]');
  });

  it('stream: usage:false suppresses the usage chunk even if requested', async () => {
    up.behave({ kind: 'stream', usage: false });
    const res = await postJson('/chat/completions', {
      model: 'm',
      stream: true,
      stream_options: { include_usage: true },
      messages: [],
    });
    const data = sseData(await res.text());
    expect(data).toHaveLength(5);
  });

  it('stream: client abort mid-stream is counted and stops the timers', async () => {
    up.behave({ kind: 'stream', chunks: 1000, intervalMs: 20 });
    const ac = new AbortController();
    const res = await postJson('/chat/completions', { model: 'm', messages: [] }, { signal: ac.signal });
    const reader = res.body!.getReader();
    await reader.read();
    expect(up.openRequests()).toBe(1);
    ac.abort();
    await up.waitFor(() => up.abortedRequests() === 1);
    expect(up.activeTimers()).toBe(0);
  });

  it('stream-then-reset: sends `after` chunks, then the body breaks', async () => {
    up.behave({ kind: 'stream-then-reset', after: 2 });
    const res = await postJson('/chat/completions', { model: 'm', stream: true, messages: [] });
    expect(res.status).toBe(200);
    const { text, error } = await readAll(res);
    expect(error).toBeDefined();
    const data = sseData(text);
    expect(data).toHaveLength(2);
    expect(data.map((d) => (JSON.parse(d) as Record<string, any>).choices[0].delta.content)).toEqual(['tok0 ', 'tok1 ']);
    expect(text).not.toContain('[DONE]');
    await up.waitFor(() => up.openRequests() === 0);
    expect(up.abortedRequests()).toBe(0);
  });

  it('stream-then-reset with after 0: headers then a broken body', async () => {
    up.behave({ kind: 'stream-then-reset', after: 0 });
    const res = await postJson('/chat/completions', { model: 'm', stream: true, messages: [] });
    expect(res.status).toBe(200);
    const { text, error } = await readAll(res);
    expect(error).toBeDefined();
    expect(text).toBe('');
  });

  it('stream-malformed no-data-prefix', async () => {
    up.behave({ kind: 'stream-malformed', variant: 'no-data-prefix' });
    const res = await postJson('/chat/completions', { model: 'm', stream: true, messages: [] });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    // The chunks are lines that are no SSE field: a reader drops them, and sees only [DONE].
    const { events, invalid } = parseSse(await res.text());
    expect(invalid).toHaveLength(2);
    expect((JSON.parse(invalid[0]!) as { object: string }).object).toBe('chat.completion.chunk');
    expect(events.map((e) => e.data)).toEqual(['[DONE]']);
  });

  it('stream-malformed non-json-data', async () => {
    up.behave({ kind: 'stream-malformed', variant: 'non-json-data' });
    const res = await postJson('/chat/completions', { model: 'm', stream: true, messages: [] });
    const data = sseData(await res.text());
    expect(data.at(-1)).toBe('[DONE]');
    for (const d of data.slice(0, -1)) expect(() => JSON.parse(d)).toThrow();
  });

  it('stream-malformed huge-no-newline (default 8 MiB, and custom size)', async () => {
    up.behave({ kind: 'stream-malformed', variant: 'huge-no-newline' });
    const res = await postJson('/chat/completions', { model: 'm', stream: true, messages: [] });
    const text = await res.text();
    expect(text.startsWith('data: x')).toBe(true);
    expect(text).not.toContain('\n');
    expect(text.length).toBe('data: '.length + 8 * 1024 * 1024);

    up.behave({ kind: 'stream-malformed', variant: 'huge-no-newline', bytes: 1000 });
    const small = await (await postJson('/chat/completions', { model: 'm', stream: true, messages: [] })).text();
    expect(small.length).toBe(1006);
  });

  it('stream-endless: ~1 KiB chunks at an interval, until the client goes away', async () => {
    up.behave({ kind: 'stream-endless', intervalMs: 10 });
    const ac = new AbortController();
    const res = await postJson('/chat/completions', { model: 'm', stream: true, messages: [] }, { signal: ac.signal });
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let text = '';
    while (parseSse(text).events.length < 5) {
      const { value } = await reader.read();
      text += dec.decode(value, { stream: true });
    }
    const first = JSON.parse(parseSse(text).events[0]!.data) as Record<string, any>;
    expect(first.object).toBe('chat.completion.chunk');
    expect((first.choices[0].delta.content as string).length).toBe(1024);
    ac.abort();
    await up.waitFor(() => up.abortedRequests() === 1);
    expect(up.activeTimers()).toBe(0);
  });

  it('stream-endless intervalMs 0: honours backpressure (bytesSent plateaus while the client does not read)', async () => {
    up.behave({ kind: 'stream-endless', intervalMs: 0 });
    let res!: http.IncomingMessage;
    const req = http.request(`${up.url}/chat/completions`, { method: 'POST', agent: false, headers: AUTH }, (r) => {
      res = r; // deliberately not reading: the client socket stops reading once its buffer is full
    });
    req.on('error', () => {});
    req.end(JSON.stringify({ model: 'm', stream: true, messages: [] }));
    await up.waitFor(() => up.bytesSent() > 0);

    let last = -1;
    let plateau = -1;
    for (let i = 0; i < 100 && plateau < 0; i++) {
      // A sampling interval: two equal samples 100 ms apart are the plateau.
      await sleep(100);
      const now = up.bytesSent();
      if (now === last) plateau = now;
      last = now;
    }
    expect(plateau).toBeGreaterThan(0);
    expect(plateau).toBeLessThan(256 * 1024 * 1024);
    expect(up.openRequests()).toBe(1);

    res.resume(); // start reading: the fake must continue
    await up.waitFor(() => up.bytesSent() > plateau + 1024 * 1024, 5000);

    req.destroy();
    await up.waitFor(() => up.abortedRequests() === 1);
    await up.waitFor(() => up.activeTimers() === 0);
    const sent = up.bytesSent();
    // Nothing to wait on (the point is that nothing more is sent once the client is gone).
    await sleep(50);
    expect(up.bytesSent()).toBe(sent);
  });
});

describe('helpers', () => {
  it('waitFor rejects on timeout and resolves when the predicate holds', async () => {
    await expect(up.waitFor(() => false, 30)).rejects.toThrow(/timed out/);
    let flag = false;
    setTimeout(() => (flag = true), 20);
    await expect(up.waitFor(() => flag, 1000)).resolves.toBeUndefined();
  });

  it('close() does not hang with hung and trickling requests, and is idempotent', async () => {
    const other = await startFakeUpstream();
    other.behaveOnce({ kind: 'hang' });
    other.behaveOnce({ kind: 'trickle', intervalMs: 10 });
    const errors: Promise<unknown>[] = [];
    for (let i = 0; i < 2; i++) {
      errors.push(
        new Promise((resolve) => {
          const req = http.get(`${other.url}/models`, { agent: false, headers: AUTH }, (res) => {
            res.on('data', () => {});
            res.on('error', resolve);
            res.on('aborted', () => resolve('aborted'));
          });
          req.on('error', resolve);
        }),
      );
    }
    await other.waitFor(() => other.requests.length === 2 && other.activeTimers() === 1);
    const t0 = Date.now();
    await Promise.all([other.close(), other.close()]);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(other.activeTimers()).toBe(0);
    await Promise.all(errors); // both clients saw their connection die
    await expect(fetch(`${other.url}/models`, { headers: AUTH })).rejects.toThrow();
  });
});
