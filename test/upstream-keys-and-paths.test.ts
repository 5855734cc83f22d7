/**
 * Issue 34, point 2: every request the gateway sends upstream goes to a path
 * its provider serves, by the method it serves it with, and carries the key
 * of the deployment it goes to: on a retry and on a fallback too, never the
 * key of the attempt before. The fakes refuse anything else as
 * api.openai.com does (test/support/fake-upstream.ts, scripted-upstream.ts:
 * 404 `Invalid URL`, 401 `invalid_api_key`), so a fault here fails a test;
 * the tests below assert on what each deployment recorded, request by
 * request. A key the provider refuses is answered 502 `upstream_auth_failed`
 * as any provider 401 is (ROUTING.md, Failures).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';
import { UPSTREAM_KEY } from './support/fake-upstream.js';
import { chat, expectNoRefusals, startRouted, withRouted, type Routed } from './support/routing.js';
import { deploymentYaml, keyOf, type ScriptedUpstream } from './support/scripted-upstream.js';

const AUTH_FAILED = { error: { message: 'the provider rejected the gateway credentials for this model', type: 'gateway_error', code: 'upstream_auth_failed' } };

/** Every request the deployments received, in the order they arrived: [deployment, method, path, key, refused]. */
function sent(up: ScriptedUpstream): Array<[string, string, string, string | null, string | null]> {
  return up.deployments
    .flatMap((d) => d.received.map((r) => ({ name: d.name, r })))
    .sort((a, b) => a.r.at - b.r.at)
    .map(({ name, r }) => [name, r.method, r.path, r.key, r.refused]);
}

const CHAT = '/v1/chat/completions';
const EMBEDDINGS = '/v1/embeddings';
/** A request `deployment` served, with its own key. */
const own = (deployment: string, path = CHAT): [string, string, string, string, null] => [deployment, 'POST', path, keyOf(deployment), null];

describe('retries and fallbacks: each attempt reaches its deployment with its own key', () => {
  let r: Routed;
  beforeAll(async () => {
    // chat: east, then west; then the fallback group backup (south). solo: a group of one, retried on itself.
    // allowed_fails: the tests fail east and west on purpose, and none may cool them for the next.
    r = await startRouted(['east', 'west', 'south', 'solo'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', order: 1')}${deploymentYaml('chat', up.at('west'), ', order: 2')}${deploymentYaml('backup', up.at('south'))}${deploymentYaml('solo', up.at('solo'))}
router_settings: { fallbacks: [{ chat: [backup] }], num_retries: 2, allowed_fails: 1000 }
`);
  });
  afterAll(() => r.close());
  beforeEach(() => r.up.reset());
  afterEach(() => expectNoRefusals(r.up));
  const at = (name: string) => r.up.at(name);

  it.each([false, true])('a retry in the group (east 500, west answers), stream %s: east got east\'s key, west got west\'s', async (stream) => {
    at('east').script({ kind: 'status', status: 500 });
    const answer = await chat(r.gw, 'chat', { stream });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
    expect(answer.text).toContain(stream ? '"content":"west"' : '"content":"from west"');
    expect(sent(r.up)).toEqual([own('east'), own('west')]);
  });

  it.each([false, true])('a fallback (east and west fail, backup\'s south answers), stream %s: each of the three its own key', async (stream) => {
    at('east').script({ kind: 'status', status: 503 });
    at('west').script({ kind: 'reset-before-headers' });
    const answer = await chat(r.gw, 'chat', { stream });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.routing).toEqual({ deployment: 'south', attempts: '3', fallback: 'backup' });
    expect(sent(r.up)).toEqual([own('east'), own('west'), own('south')]);
  });

  it('embeddings: a retry and a fallback post to /v1/embeddings with each deployment\'s key', async () => {
    at('east').script({ kind: 'status', status: 500 });
    at('west').script({ kind: 'status', status: 502 });
    const res = await r.gw.fetch(EMBEDDINGS, { method: 'POST', body: JSON.stringify({ model: 'chat', input: 'hello' }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchyard-deployment')).toBe('south');
    expect(((await res.json()) as { data: Array<{ embedding: number[] }> }).data[0]?.embedding).toEqual([0.1, 0.2]);
    expect(sent(r.up)).toEqual([own('east', EMBEDDINGS), own('west', EMBEDDINGS), own('south', EMBEDDINGS)]);
  });

  it('a group of one retried on itself: every attempt with its key', async () => {
    at('solo').script({ kind: 'status', status: 500 }, { kind: 'status', status: 500 });
    const answer = await chat(r.gw, 'solo');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.routing).toEqual({ deployment: 'solo', attempts: '3', fallback: null });
    expect(sent(r.up)).toEqual([own('solo'), own('solo'), own('solo')]);
  });
});

describe('cooling failures', () => {
  it('a retry after a 429 and a fallback after a 401: the key the provider refused is not carried on', () =>
    withRouted(
      startRouted(['east', 'west', 'south'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', order: 1')}${deploymentYaml('chat', up.at('west'), ', order: 2')}${deploymentYaml('backup', up.at('south'))}
router_settings: { fallbacks: [{ chat: [backup] }], num_retries: 2 }
`),
      async ({ gw, up }) => {
        up.at('east').script({ kind: 'status', status: 429 });
        up.at('west').script({ kind: 'status', status: 401, body: { error: { message: 'Incorrect API key provided: sk-key-o****.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } });
        const answer = await chat(gw, 'chat');
        expect(answer.status, answer.text).toBe(200);
        expect(answer.routing).toEqual({ deployment: 'south', attempts: '3', fallback: 'backup' });
        expect(sent(up)).toEqual([own('east'), own('west'), own('south')]);
      },
    ));
});

describe("a deployment configured with another deployment's key", () => {
  it('is refused by its provider (401 invalid_api_key), which the gateway answers 502 upstream_auth_failed; the key stays out of the answer', () =>
    withRouted(
      startRouted(['east', 'west'], (up) => `
model_list:
  - model_name: crossed
    params: { model: openai/model-east, api_base: ${up.at('east').url}, api_key: ${up.at('west').key} }
    model_info: { id: crossed }
`),
      async ({ gw, up }) => {
        const answer = await chat(gw, 'crossed');
        expect(answer.status).toBe(502);
        expect(JSON.parse(answer.text)).toEqual(AUTH_FAILED);
        expect(answer.text).not.toContain(keyOf('west'));
        // Every attempt was refused by the provider itself (no step scripted a 401), for west's key.
        const refused = up.at('east').takeRefusals();
        expect(refused.length).toBe(Number(answer.routing.attempts));
        for (const q of refused) expect([q.method, q.path, q.key, q.refused]).toEqual(['POST', CHAT, keyOf('west'), 'key']);
        expect(up.at('west').received).toEqual([]);
        const logged = gw.logs().filter((l) => l.event === 'upstream_auth_failed');
        expect(logged.length).toBe(refused.length);
        expect(String(logged[0]?.provider_message)).toContain('Incorrect API key provided');
      },
    ));
});

describe('an OpenAI-compatible upstream: what the gateway sends it', () => {
  const WRONG = 'sk-not-the-upstream-key-0123456789';
  const { gw, upstream } = useGateway({
    gateway: (up) => ({
      yaml: `
model_list:
  - model_name: up-chat
    params: { model: openai/fake-model, api_base: ${up.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: up-embed
    params: { model: openai/fake-embed, api_base: ${up.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: wrong-key
    params: { model: openai/fake-model, api_base: ${up.url}, api_key: ${WRONG} }
  - model_name: no-key
    params: { model: openai/fake-model, api_base: ${up.url} }
route_rules:
  - provider: openai
    models: ["gpt-*"]
    params: { api_base: ${up.url}, api_key: ${UPSTREAM_KEY} }
health: { cache_ttl: 0 }
`,
    }),
  });

  it('every request is one the provider serves, by its method, with the key: chat, a stream, embeddings, a translated Responses call, a route rule, the health probe', async () => {
    const client = gw.client();
    await client.chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'hi' }] });
    for await (const chunk of await client.chat.completions.create({ model: 'up-chat', stream: true, messages: [{ role: 'user', content: 'hi' }] })) void chunk;
    await client.embeddings.create({ model: 'up-embed', input: 'hi', encoding_format: 'float' });
    await client.embeddings.create({ model: 'up-embed', input: ['a', 'b'] });
    await client.responses.create({ model: 'up-chat', input: 'hi' });
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const health = (await (await gw.fetch('/health')).json()) as { checks: Array<{ name: string; status: string }> };
    expect(health.checks.find((c) => c.name === `upstream:${upstream.origin}`)?.status).toBe('healthy');
    const seen = upstream.requests.map((q) => [q.method, q.path, q.key, q.refused]);
    expect(seen).toEqual([
      ['POST', CHAT, UPSTREAM_KEY, null],
      ['POST', CHAT, UPSTREAM_KEY, null],
      ['POST', EMBEDDINGS, UPSTREAM_KEY, null],
      ['POST', EMBEDDINGS, UPSTREAM_KEY, null],
      ['POST', CHAT, UPSTREAM_KEY, null],
      ['POST', CHAT, UPSTREAM_KEY, null],
      ['GET', '/v1/models', UPSTREAM_KEY, null],
    ]);
  });

  it.each([
    { alias: 'wrong-key', stream: false, key: WRONG },
    { alias: 'no-key', stream: true, key: null },
  ])('$alias (stream $stream): the provider refuses it (401), the gateway answers 502 upstream_auth_failed as before', async ({ alias, stream, key }) => {
    const res = await gw.fetch(CHAT, { method: 'POST', body: JSON.stringify({ model: alias, stream, messages: [{ role: 'user', content: 'hi' }] }) });
    const text = await res.text();
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(text)).toEqual(AUTH_FAILED);
    expect(text).not.toContain(WRONG);
    const refused = upstream.takeRefusals();
    expect(refused.length).toBe(Number(res.headers.get('x-switchyard-attempts')));
    for (const q of refused) expect([q.method, q.path, q.key, q.refused]).toEqual(['POST', CHAT, key, 'key']);
  });
});
