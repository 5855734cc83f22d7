/**
 * The `azure` provider end to end (CONTRACT.md, Native providers; issue
 * 23): the real gateway (two worker threads) in front of the fake Azure
 * OpenAI resource (test/support/azure-upstream.ts, proved by the openai
 * SDK's AzureOpenAI), the `openai` SDK as the client: the deployments path,
 * api-version and api-key; answers and streams normalised (no filter
 * annotations, no empty-choices chunk, the role first); embeddings; Azure's
 * error bodies normalised and its rate-limit headers kept; the model id as
 * one path segment; the health probe (in test/provider-health-probes.test.ts); no key in any log or answer.
 */
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AZURE_ERRORS, AZURE_KEY, startAzureUpstream, type AzureUpstream } from './support/azure-upstream.js';
import { expectNoKeyLeak, TEST_KEY, useGateway } from './support/gateway.js';
import { sseData } from './support/sse.js';

let azure: AzureUpstream;
beforeAll(async () => {
  azure = await startAzureUpstream();
});
afterAll(() => azure.close());
beforeEach(() => azure.reset());

const { gw } = useGateway({
  gateway: () => ({
    env: { AZURE_API_KEY: AZURE_KEY },
    yaml: `
model_list:
  - model_name: gpt4o
    params: { model: azure/gpt-4o-deploy, api_base: ${azure.url} }
  - model_name: gpt4o-preview
    params: { model: azure/gpt-4o-deploy, api_base: ${azure.url}/, api_version: 2025-04-01-preview, api_key: ${AZURE_KEY} }
  - model_name: embed
    params: { model: azure/embed-deploy, api_base: ${azure.url} }
  - model_name: wrong-key
    params: { model: azure/gpt-4o-deploy, api_base: ${azure.url}, api_key: azure-wrong-key-0123456789 }
route_rules:
  - provider: azure
    params: { api_base: ${azure.url} }
router_settings: { num_retries: 0 }
`,
  }),
});

const WEATHER: OpenAI.Chat.Completions.ChatCompletionTool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

describe('azure: requests and answers', () => {
  it('a chat completion: the deployment path, api-version 2024-10-21 by default, api-key (no Authorization); the answer without filter annotations, Azure\'s rate-limit headers kept, its own dropped', async () => {
    const { data, response } = await gw.client().chat.completions.create({ model: 'gpt4o', messages: [{ role: 'user', content: 'Hi' }], foo_extension: 1 } as never).withResponse();
    expect(data.choices[0]!.message.content).toBe('Hello from Azure: Hi');
    expect(JSON.stringify(data)).not.toMatch(/filter_results/);
    expect(data.usage?.total_tokens).toBe(18);
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    expect(response.headers.get('apim-request-id')).toBeNull();
    expect(response.headers.get('x-ms-region')).toBeNull();
    const [call] = azure.calls();
    expect(call!.path).toBe('/openai/deployments/gpt-4o-deploy/chat/completions');
    expect(call!.query.get('api-version')).toBe('2024-10-21');
    expect(call!.headers['api-key']).toBe(AZURE_KEY);
    expect(call!.headers.authorization).toBeUndefined();
    // The compatible format already: fields that are no OpenAI parameter reach azure unchanged.
    expect(call!.body).toMatchObject({ model: 'gpt-4o-deploy', foo_extension: 1 });
  });

  it('api_version from the deployment, and a trailing slash on api_base', async () => {
    await gw.client().chat.completions.create({ model: 'gpt4o-preview', messages: [{ role: 'user', content: 'Hi' }] });
    const [call] = azure.calls();
    expect(call!.path).toBe('/openai/deployments/gpt-4o-deploy/chat/completions');
    expect(call!.query.get('api-version')).toBe('2025-04-01-preview');
  });

  it('a stream: no empty-choices chunk, no annotation-only chunk, no filter results; the role first and once; two tool calls; the usage chunk; the SDK accumulates it', async () => {
    azure.script({ kind: 'chat', content: 'Checking.', toolCalls: [{ id: 'call_p', name: 'get_weather', arguments: '{"city":"Paris"}' }, { id: 'call_r', name: 'get_weather', arguments: '{"city":"Rome"}' }], asyncFilter: true, intervalMs: 2 });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'gpt4o', stream: true, stream_options: { include_usage: true }, tools: [WEATHER], messages: [{ role: 'user', content: 'Weather?' }] }) });
    const text = await res.text();
    expect(text).not.toMatch(/filter_results|content_filter_offsets/);
    const events = sseData(text);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as OpenAI.Chat.Completions.ChatCompletionChunk);
    expect(chunks.every((c) => c.id !== '')).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.filter((c) => c.choices[0]?.delta.role !== undefined)).toHaveLength(1);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage?.total_tokens).toBe(18);
    azure.script({ kind: 'chat', toolCalls: [{ id: 'call_a', name: 'get_weather', arguments: '{"city":"Oslo"}' }, { id: 'call_b', name: 'get_weather', arguments: '{"city":"Lima"}' }], asyncFilter: true });
    const final = await gw.client().chat.completions.stream({ model: 'gpt4o', tools: [WEATHER], messages: [{ role: 'user', content: 'x' }] }).finalChatCompletion();
    expect(final.choices[0]!.message.tool_calls!.map((t) => [t.id, (t as { function: { arguments: string } }).function.arguments])).toEqual([
      ['call_a', '{"city":"Oslo"}'],
      ['call_b', '{"city":"Lima"}'],
    ]);
  });

  it('embeddings through the embeddings path, base64 as the openai SDK asks for it', async () => {
    const result = await gw.client().embeddings.create({ model: 'embed', input: ['a', 'b'] });
    expect(result.data.map((d) => d.embedding)).toEqual([
      [0.25, -0.5, 0.75],
      [0.25, -0.5, 0.75],
    ]);
    expect(azure.calls()[0]!.path).toBe('/openai/deployments/embed-deploy/embeddings');
  });

  it('the model id is one encoded path segment: a route-rule name with slashes stays inside the deployments path; `.` and `..` are 400', async () => {
    const error = await gw.client().chat.completions.create({ model: 'azure/x/../../models', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 404, code: 'DeploymentNotFound' });
    expect(azure.calls()[0]!.path).toBe('/openai/deployments/x%2F..%2F..%2Fmodels/chat/completions');
    for (const id of ['.', '..']) {
      const refused = await gw.client().chat.completions.create({ model: `azure/${id}`, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ status: 400, code: 'invalid_request' });
    }
    expect(azure.calls()).toHaveLength(1);
  });
});

describe('azure: errors', () => {
  it('429: passed through as the compatible error object (type from the status), retry-after and retry-after-ms kept', async () => {
    azure.script({ kind: 'error', status: 429, body: AZURE_ERRORS.rateLimited, headers: { 'retry-after': '6', 'retry-after-ms': '6000' } });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'gpt4o', messages: [{ role: 'user', content: 'x' }] }) });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('6');
    expect(res.headers.get('retry-after-ms')).toBe('6000');
    expect(await res.json()).toEqual({ error: { message: AZURE_ERRORS.rateLimited.error.message, type: 'rate_limit_error', param: null, code: '429' } });
  });

  it('the content filter\'s 400: type null becomes invalid_request_error, code and param kept', async () => {
    azure.script({ kind: 'error', status: 400, body: AZURE_ERRORS.contentFilter });
    const error = (await gw.client().chat.completions.create({ model: 'gpt4o', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(400);
    expect(error.error).toEqual({ message: AZURE_ERRORS.contentFilter.error.message, type: 'invalid_request_error', param: 'prompt', code: 'content_filter' });
  });

  it('401: 502 upstream_auth_failed; no key in any log or answer', async () => {
    const error = (await gw.client().chat.completions.create({ model: 'wrong-key', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_auth_failed');
    expect(error.message).not.toContain('subscription key');
    await expectNoKeyLeak(gw, [TEST_KEY, AZURE_KEY, 'azure-wrong-key-0123456789']);
  });

});
