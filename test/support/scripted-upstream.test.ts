/**
 * The scripted deployments the routing tests stand on: each step does what it says, the record is true, and
 * each deployment refuses what api.openai.com refuses (another deployment's key, a path it does not serve),
 * as the official openai SDK reads it.
 */
import OpenAI, { AuthenticationError, InternalServerError, NotFoundError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deploymentYaml, keyOf, startScriptedUpstream, type ScriptedUpstream } from './scripted-upstream.js';

describe('scripted upstream', () => {
  let up: ScriptedUpstream;
  beforeAll(async () => {
    up = await startScriptedUpstream(['east', 'west']);
  });
  afterAll(() => up.close());
  beforeEach(() => up.reset());

  const post = (name: string, body: object, signal?: AbortSignal) =>
    fetch(`${up.at(name).url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${up.at(name).key}` }, body: JSON.stringify(body), signal });

  it('follows its script one step a request, then its default; each deployment on its own', async () => {
    up.at('east').script({ kind: 'status', status: 503, retryAfter: '7' }, { kind: 'status', status: 429 });
    const first = await post('east', { model: 'm' });
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('7');
    expect(((await first.json()) as { error: { message: string } }).error.message).toBe('east says 503');
    expect((await post('east', { model: 'm' })).status).toBe(429);
    const third = await post('east', { model: 'm' });
    expect(((await third.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe('from east');
    up.at('west').always({ kind: 'status', status: 500 });
    expect((await post('west', { model: 'm' })).status).toBe(500);
    expect((await post('west', { model: 'm' })).status).toBe(500);
    expect(up.at('east').received.map((r) => r.step)).toEqual(['status', 'status', 'ok']);
    expect(up.total()).toBe(5);
  });

  it('streams a role chunk, then content naming the deployment; the stream steps break it where they say', async () => {
    const text = async (res: Response) => (res.ok ? await res.text() : '');
    const whole = await text(await post('east', { model: 'm', stream: true }));
    expect(whole).toContain('"role":"assistant"');
    expect(whole).toContain('"content":"east"');
    expect(whole.endsWith('data: [DONE]\n\n')).toBe(true);

    up.at('east').script({ kind: 'in-band-error' });
    const inBand = await text(await post('east', { model: 'm', stream: true }));
    expect(inBand).toContain('data: {"error":');
    expect(inBand).not.toContain('"content":"east"');

    up.at('east').script({ kind: 'reset-before-content' }, { kind: 'reset-after-content' });
    for (let i = 0; i < 2; i++) {
      const res = await post('east', { model: 'm', stream: true });
      await expect(res.text()).rejects.toThrow();
    }
    // The deployment broke those off itself: done, not aborted by the client.
    expect(up.at('east').received.map((r) => r.aborted)).toEqual([false, false, false, false]);

    up.at('east').script({ kind: 'slow-first-content', ms: 300 });
    const t0 = performance.now();
    const slow = await post('east', { model: 'm', stream: true });
    const reader = (slow.body as ReadableStream<Uint8Array>).getReader();
    const first = Buffer.from((await reader.read()).value as Uint8Array).toString();
    expect(first).toContain('"role":"assistant"');
    expect(performance.now() - t0).toBeLessThan(250);
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(rest).toContain('"content":"east"');
  });

  it('records a request the client abandoned as aborted, and what was in flight at once', async () => {
    up.at('west').always({ kind: 'hang' });
    const controllers = [new AbortController(), new AbortController()];
    const pending = controllers.map((c) => post('west', { model: 'm' }, c.signal).catch(() => null));
    await up.waitFor(() => up.at('west').inFlight() === 2);
    expect(up.at('west').maxInFlight()).toBe(2);
    for (const c of controllers) c.abort();
    await Promise.all(pending);
    await up.waitFor(() => up.at('west').aborted() === 2);
    expect(up.at('west').inFlight()).toBe(0);
    expect(up.at('west').received.every((r) => r.aborted && !r.done)).toBe(true);
  });

  it('latency delays the headers; reset-before-headers answers nothing', async () => {
    up.at('east').script({ kind: 'ok', latencyMs: 200 }, { kind: 'reset-before-headers' });
    const t0 = performance.now();
    expect((await post('east', { model: 'm' })).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
    await expect(post('east', { model: 'm' })).rejects.toThrow();
  });

  describe('counts what a provider bills: calls and the tokens of the usage it answered, read by the openai SDK', () => {
    const east = () => new OpenAI({ apiKey: keyOf('east'), baseURL: up.at('east').url, maxRetries: 0 });
    const hi = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

    it('by default: chat 3 + 2 tokens, embeddings 1; a stream that asks for usage gets it in a last chunk with no choices, one that does not, none', async () => {
      expect((await east().chat.completions.create(hi)).usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
      expect((await east().embeddings.create({ model: 'm', input: 'x', encoding_format: 'float' })).usage).toEqual({ prompt_tokens: 1, total_tokens: 1 });
      const withUsage = [];
      for await (const chunk of await east().chat.completions.create({ ...hi, stream: true, stream_options: { include_usage: true } })) withUsage.push(chunk);
      expect(withUsage.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });
      expect(withUsage.slice(0, -1).every((c) => c.usage === null && c.choices.length === 1)).toBe(true);
      expect(withUsage.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('from east');
      const without = [];
      for await (const chunk of await east().chat.completions.create({ ...hi, stream: true })) without.push(chunk);
      expect(without.every((c) => c.usage === undefined && c.choices.length === 1)).toBe(true);
      // The stream that did not ask is billed all the same, as a provider bills it.
      expect(up.at('east').calls().map((c) => c.tokens)).toEqual([5, 1, 5, 5]);
    });

    it("usage(...) sets each answer's usage, the same for every call or from the request; reset() forgets it", async () => {
      up.at('east').usage({ prompt_tokens: 40, completion_tokens: 10 });
      expect((await east().chat.completions.create(hi)).usage).toEqual({ prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 });
      expect((await east().embeddings.create({ model: 'm', input: 'x', encoding_format: 'float' })).usage).toEqual({ prompt_tokens: 40, total_tokens: 40 });
      up.at('east').usage((body) => ({ prompt_tokens: 7, completion_tokens: Number(body.max_tokens) }));
      expect((await east().chat.completions.create({ ...hi, max_tokens: 33 })).usage?.total_tokens).toBe(40);
      const chunks = [];
      for await (const chunk of await east().chat.completions.create({ ...hi, max_tokens: 3, stream: true, stream_options: { include_usage: true } })) chunks.push(chunk);
      expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
      expect(up.at('east').calls().map((c) => c.tokens)).toEqual([50, 40, 40, 10]);
      up.reset();
      expect((await east().chat.completions.create(hi)).usage?.total_tokens).toBe(5);
    });

    it('calls() are the model calls served: not the refusals, not the model list; an answer that is not ok bills nothing', async () => {
      up.at('east').script({ kind: 'status', status: 500 }, { kind: 'hang' });
      await expect(east().chat.completions.create(hi)).rejects.toBeInstanceOf(InternalServerError);
      const hung = new AbortController();
      const hanging = east().chat.completions.create(hi, { signal: hung.signal }).catch(() => null);
      await up.waitFor(() => up.at('east').inFlight() === 1);
      hung.abort();
      await hanging;
      await east().chat.completions.create(hi);
      await east().models.list();
      await new OpenAI({ apiKey: 'sk-wrong', baseURL: up.at('east').url, maxRetries: 0 }).chat.completions.create(hi).catch(() => null);
      expect(up.at('east').takeRefusals()).toHaveLength(1);
      expect(up.at('east').received).toHaveLength(5);
      expect(up.at('east').calls().map((c) => [c.step, c.tokens])).toEqual([
        ['status', 0],
        ['hang', 0],
        ['ok', 5],
      ]);
    });
  });

  describe('refuses what the real service refuses, read by the openai SDK', () => {
    const sdk = (name: string, apiKey: string) => new OpenAI({ apiKey, baseURL: up.at(name).url, maxRetries: 0 });
    const hi = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

    it('each deployment has its own key, which deploymentYaml configures', () => {
      expect(up.deployments.map((d) => d.key)).toEqual([keyOf('east'), keyOf('west')]);
      expect(keyOf('east')).not.toBe(keyOf('west'));
      expect(deploymentYaml('chat', up.at('west'))).toContain(`api_key: ${keyOf('west')}`);
    });

    it('its own key: the SDK reads its answers (chat, a stream, embeddings, the model list); method, path and key recorded', async () => {
      const east = sdk('east', keyOf('east'));
      expect((await east.chat.completions.create(hi)).choices[0]?.message.content).toBe('from east');
      let text = '';
      for await (const chunk of await east.chat.completions.create({ ...hi, stream: true })) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('from east');
      expect((await east.embeddings.create({ model: 'm', input: 'x', encoding_format: 'float' })).data[0]?.embedding).toEqual([0.1, 0.2]);
      expect((await east.models.list()).data.map((m) => m.id)).toEqual(['model-east']);
      expect(up.at('east').received.map((r) => [r.method, r.path, r.key, r.refused, r.step])).toEqual([
        ['POST', '/v1/chat/completions', keyOf('east'), null, 'ok'],
        ['POST', '/v1/chat/completions', keyOf('east'), null, 'ok'],
        ['POST', '/v1/embeddings', keyOf('east'), null, 'ok'],
        ['GET', '/v1/models', keyOf('east'), null, 'models'],
      ]);
    });

    it("another deployment's key, or none: AuthenticationError (401 invalid_api_key), recorded as refused, no step used up", async () => {
      up.at('west').script({ kind: 'status', status: 500 });
      const err = await sdk('west', keyOf('east')).chat.completions.create(hi).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuthenticationError);
      expect(err).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error' });
      const none = new OpenAI({ apiKey: 'unused', baseURL: up.at('west').url, maxRetries: 0, defaultHeaders: { authorization: null } });
      const missing = await none.chat.completions.create(hi).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(AuthenticationError);
      expect(missing).toMatchObject({ status: 401, code: null });
      expect(up.at('west').refusals().map((r) => [r.key, r.refused, r.step])).toEqual([
        [keyOf('east'), 'key', 'refused'],
        [null, 'key', 'refused'],
      ]);
      // The scripted 500 is still the next served request's.
      await expect(sdk('west', keyOf('west')).chat.completions.create(hi)).rejects.toBeInstanceOf(InternalServerError);
      expect(up.refusals()).toHaveLength(2);
      expect(up.at('west').takeRefusals()).toHaveLength(2);
      expect(up.refusals()).toEqual([]);
    });

    it('a path it does not serve, or another method: NotFoundError, 404 Invalid URL, before the key is read', async () => {
      const east = sdk('east', keyOf('east'));
      for (const [call, url] of [
        [() => east.post('/chat/completion', { body: hi }), 'POST /v1/chat/completion'],
        [() => east.post('/responses', { body: { model: 'm', input: 'x' } }), 'POST /v1/responses'],
        [() => east.get('/chat/completions'), 'GET /v1/chat/completions'],
        [() => sdk('east', 'sk-wrong').post('/embedding', { body: { input: 'x' } }), 'POST /v1/embedding'],
      ] as const) {
        const err = await call().catch((e: unknown) => e);
        expect(err, url).toBeInstanceOf(NotFoundError);
        expect(err, url).toMatchObject({ status: 404, code: null, message: `404 Invalid URL (${url})` });
      }
      expect(up.at('east').received.map((r) => r.refused)).toEqual(['path', 'path', 'path', 'path']);
      expect(up.at('east').takeRefusals()).toHaveLength(4);
    });
  });
});
