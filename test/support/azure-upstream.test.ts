/**
 * The fake Azure OpenAI resource read by `openai`'s AzureOpenAI client,
 * pointed at it directly: chat, streams (with their filter chunks and tool
 * calls), embeddings and errors read as the real service's are.
 */
import { APIError, AuthenticationError, AzureOpenAI, BadRequestError, NotFoundError, RateLimitError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AZURE_ERRORS, AZURE_KEY, startAzureUpstream, type AzureUpstream } from './azure-upstream.js';

let up: AzureUpstream;
let client: AzureOpenAI;

beforeAll(async () => {
  up = await startAzureUpstream();
  client = new AzureOpenAI({ endpoint: up.url, apiKey: AZURE_KEY, apiVersion: '2024-10-21', maxRetries: 0 });
});
afterAll(() => up.close());
beforeEach(() => up.reset());

describe('the fake Azure OpenAI resource, read by AzureOpenAI', () => {
  it('chat.completions.create: the deployment path, api-version and api-key; an answer with its filter annotations', async () => {
    const completion = await client.chat.completions.create({ model: 'gpt-4o-deploy', messages: [{ role: 'user', content: 'Hi' }] });
    expect(completion.choices[0]!.message.content).toBe('Hello from Azure: Hi');
    expect(completion.usage?.total_tokens).toBe(18);
    expect((completion as unknown as { prompt_filter_results: unknown[] }).prompt_filter_results).toHaveLength(1);
    const [call] = up.calls();
    expect(call!.path).toBe('/openai/deployments/gpt-4o-deploy/chat/completions');
    expect(call!.query.get('api-version')).toBe('2024-10-21');
    expect(call!.headers['api-key']).toBe(AZURE_KEY);
  });

  it('a stream: the empty-choices first chunk, the role chunk, content, tool calls, usage and the async filter chunk', async () => {
    up.script({ kind: 'chat', content: 'Checking both.', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }, { id: 'call_2', name: 'get_weather', arguments: '{"city":"Rome"}' }], asyncFilter: true });
    const stream = await client.chat.completions.create({ model: 'gpt-4o-deploy', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Weather?' }] });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices).toEqual([]);
    expect(chunks[1]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('Checking both.');
    const args = new Map<number, string>();
    for (const c of chunks) for (const t of c.choices[0]?.delta?.tool_calls ?? []) args.set(t.index, (args.get(t.index) ?? '') + (t.function?.arguments ?? ''));
    expect([...args.values()].map((a) => JSON.parse(a))).toEqual([{ city: 'Paris' }, { city: 'Rome' }]);
    expect(chunks.at(-1)!.usage?.total_tokens).toBe(18);
    expect(chunks.some((c) => c.id === '' && c.choices.length === 1 && c.choices[0]!.delta === undefined)).toBe(true);
  });

  it('embeddings.create: base64 by default, decoded by the SDK', async () => {
    const result = await client.embeddings.create({ model: 'embed-deploy', input: ['a', 'b'] });
    expect(result.data.map((d) => d.embedding)).toEqual([
      [0.25, -0.5, 0.75],
      [0.25, -0.5, 0.75],
    ]);
    expect(up.calls()[0]!.path).toBe('/openai/deployments/embed-deploy/embeddings');
  });

  it('errors as Azure writes them: 401, 404 DeploymentNotFound, 429 with retry-after(-ms), the content filter 400 with type null', async () => {
    const wrong = new AzureOpenAI({ endpoint: up.url, apiKey: 'nope', apiVersion: '2024-10-21', maxRetries: 0 });
    const body = { model: 'gpt-4o-deploy', messages: [{ role: 'user' as const, content: 'x' }] };
    await expect(wrong.chat.completions.create(body)).rejects.toBeInstanceOf(AuthenticationError);
    const missing = await client.chat.completions.create({ ...body, model: 'no-such-deploy' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as APIError).code).toBe('DeploymentNotFound');
    up.script(
      { kind: 'error', status: 429, body: AZURE_ERRORS.rateLimited, headers: { 'retry-after': '6', 'retry-after-ms': '6000' } },
      { kind: 'error', status: 400, body: AZURE_ERRORS.contentFilter },
    );
    const limited = await client.chat.completions.create(body).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as APIError).headers?.get('retry-after-ms')).toBe('6000');
    const filtered = await client.chat.completions.create(body).catch((e: unknown) => e);
    expect(filtered).toBeInstanceOf(BadRequestError);
    expect(filtered).toMatchObject({ code: 'content_filter', param: 'prompt', type: null });
  });

  it('models.list: the free probe the gateway uses', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['gpt-4o']);
    expect(up.received[0]!.path).toBe('/openai/models');
  });
});
