/**
 * The fake Anthropic API read by the official SDK (@anthropic-ai/sdk),
 * pointed at it directly: if the SDK reads its answers, streams, tool use
 * and errors as it reads the real service's, the fake speaks the wire
 * format the gateway's translator is tested against.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ANTHROPIC_KEY, startAnthropicUpstream, type AnthropicUpstream } from './anthropic-upstream.js';

let up: AnthropicUpstream;
let client: Anthropic;

beforeAll(async () => {
  up = await startAnthropicUpstream();
  client = new Anthropic({ apiKey: ANTHROPIC_KEY, baseURL: up.url, maxRetries: 0 });
});
afterAll(() => up.close());
beforeEach(() => up.reset());

const WEATHER = { name: 'get_weather', description: 'Weather in a city', input_schema: { type: 'object' as const, properties: { location: { type: 'string' } }, required: ['location'] } };

describe('the fake Anthropic API, read by @anthropic-ai/sdk', () => {
  it('messages.countTokens: its own count at /v1/messages/count_tokens; a wrong key 401 and a wrong path 404, as the real service', async () => {
    expect(await client.messages.countTokens({ model: 'claude-fake-1', system: 'Be brief.', messages: [{ role: 'user', content: 'Hello there, world' }] })).toEqual({ input_tokens: 5 });
    expect(up.counts()[0]!.headers['anthropic-version']).toBe('2023-06-01');
    const wrong = new Anthropic({ apiKey: 'sk-ant-wrong', baseURL: up.url, maxRetries: 0 });
    await expect(wrong.messages.countTokens({ model: 'claude-fake-1', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    await expect(client.post('/v1/messages/count_token', { body: {} })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(client.get('/v1/messages')).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('messages.create: a text answer with its usage, stop reason, request id and rate-limit headers', async () => {
    const { data, response, request_id } = await client.messages.create({ model: 'claude-fake-1', max_tokens: 100, messages: [{ role: 'user', content: 'Hi there' }] }).withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'Hello! You said: Hi there' }]);
    expect(data).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-fake-1', stop_reason: 'end_turn' });
    expect(data.usage).toMatchObject({ input_tokens: 12, output_tokens: 6 });
    expect(request_id).toMatch(/^req_fake_/);
    expect(response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('49');
    expect(up.messages()[0]!.headers['anthropic-version']).toBe('2023-06-01');
  });

  it('messages.stream with finalMessage(): text, then a tool use whose input_json_delta fragments the SDK joins', async () => {
    up.script({ kind: 'message', content: [{ type: 'text', text: "I'll check the weather in Paris." }, { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } }] });
    const stream = client.messages.stream({ model: 'claude-fake-1', max_tokens: 100, tools: [WEATHER], messages: [{ role: 'user', content: 'Weather in Paris?' }] });
    const texts: string[] = [];
    const jsons: string[] = [];
    stream.on('text', (t) => texts.push(t));
    stream.on('inputJson', (partial) => jsons.push(partial));
    const final = await stream.finalMessage();
    expect(texts.join('')).toBe("I'll check the weather in Paris.");
    expect(jsons.length).toBeGreaterThan(2);
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'text', text: "I'll check the weather in Paris." },
      { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } },
    ]);
    expect(final.usage.output_tokens).toBe(6);
  });

  it('messages.create with stream: true: the raw events in order, ping skipped by the SDK, two tool uses', async () => {
    up.script({ kind: 'message', content: [{ type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: { location: 'Paris' } }, { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: { location: 'Rome' } }] });
    const stream = await client.messages.create({ model: 'claude-fake-1', max_tokens: 100, stream: true, tools: [WEATHER], messages: [{ role: 'user', content: 'Two cities' }] });
    const types: string[] = [];
    const inputs = new Map<number, string>();
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta') inputs.set(event.index, (inputs.get(event.index) ?? '') + event.delta.partial_json);
    }
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(types.at(-2)).toBe('message_delta');
    expect(types.filter((t) => t === 'content_block_start')).toHaveLength(2);
    expect(JSON.parse(inputs.get(0)!)).toEqual({ location: 'Paris' });
    expect(JSON.parse(inputs.get(1)!)).toEqual({ location: 'Rome' });
  });

  it('an in-stream `event: error` is thrown by the SDK as an APIError of its type', async () => {
    up.script({ kind: 'stream-error', type: 'overloaded_error', message: 'Overloaded', afterContent: true });
    const stream = client.messages.stream({ model: 'claude-fake-1', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] });
    const error = await stream.finalMessage().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as { type?: string }).type).toBe('overloaded_error');
    expect(String((error as Error).message)).toContain('Overloaded');
  });

  it('errors: 401 AuthenticationError, 529 OverloadedError, 429 RateLimitError with retry-after, 400 BadRequestError for a blank text block', async () => {
    const wrong = new Anthropic({ apiKey: 'sk-ant-wrong', baseURL: up.url, maxRetries: 0 });
    const body = { model: 'claude-fake-1', max_tokens: 10, messages: [{ role: 'user' as const, content: 'x' }] };
    await expect(wrong.messages.create(body)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    up.script({ kind: 'error', status: 529, type: 'overloaded_error', message: 'Overloaded' }, { kind: 'error', status: 429, type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit', headers: { 'retry-after': '7' } });
    const overloaded = await client.messages.create(body).catch((e: unknown) => e);
    expect(overloaded).toMatchObject({ status: 529, type: 'overloaded_error' });
    const limited = await client.messages.create(body).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect((limited as InstanceType<typeof Anthropic.RateLimitError>).headers.get('retry-after')).toBe('7');
    const blank = await client.messages.create({ ...body, messages: [{ role: 'user', content: [{ type: 'text', text: '  ' }] }] }).catch((e: unknown) => e);
    expect(blank).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((blank as Error).message)).toContain('non-whitespace');
  });

  it('models.list: the free probe the gateway uses', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['claude-fake-1']);
  });
});
