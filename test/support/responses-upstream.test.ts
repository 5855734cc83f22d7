/**
 * The fake upstream of test/support/responses-upstream.ts, proved with the
 * `openai` SDK pointed at it directly, before any test trusts it behind the
 * gateway: its Responses API answers and event streams are what the SDK's
 * `responses.create` and `responses.stream` read, and its chat completions
 * what `chat.completions` reads, for text, tool calls and JSON output.
 */
import OpenAI, { AuthenticationError, NotFoundError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UPSTREAM_KEY } from './fake-upstream.js';
import { startResponsesUpstream, type ResponsesUpstream } from './responses-upstream.js';

let up: ResponsesUpstream;
let client: OpenAI;
beforeAll(async () => {
  up = await startResponsesUpstream();
  client = new OpenAI({ apiKey: UPSTREAM_KEY, baseURL: up.url, maxRetries: 0, timeout: 5000 });
});
afterAll(() => up.close());
beforeEach(() => up.reset());

const weather = { type: 'function' as const, name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true };

describe('the fake /v1/responses, read by the openai SDK', () => {
  it('responses.create: text, usage, and the request as sent', async () => {
    const response = await client.responses.create({ model: 'gpt-fake', input: 'Say hello' });
    expect(response.output_text).toBe('echo: Say hello');
    expect(response.usage).toMatchObject({ input_tokens: 2, output_tokens: 3, total_tokens: 5 });
    expect(up.requests[0]).toMatchObject({ path: '/v1/responses', json: { model: 'gpt-fake', input: 'Say hello' } });
  });

  it('responses.stream: the SDK accumulates the events into the same response', async () => {
    const deltas: string[] = [];
    const stream = client.responses.stream({ model: 'gpt-fake', input: 'Stream this please' });
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('echo: Stream this please');
    expect(final).toMatchObject({ status: 'completed', output_text: 'echo: Stream this please', usage: { output_tokens: 4 } });
  });

  it('a tool round trip: function_call, then function_call_output, then the answer', async () => {
    const first = await client.responses.create({ model: 'gpt-fake', input: 'Weather in Paris', tools: [weather] });
    const call = first.output.find((o) => o.type === 'function_call');
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    const streamed = await client.responses.stream({ model: 'gpt-fake', input: 'Weather in Paris', tools: [weather] }).finalResponse();
    expect(streamed.output[0]).toMatchObject({ type: 'function_call', arguments: '{"city":"Paris"}' });
    if (call?.type !== 'function_call') throw new Error('no call');
    const second = await client.responses.create({
      model: 'gpt-fake',
      tools: [weather],
      input: [{ role: 'user', content: 'Weather in Paris' }, call, { type: 'function_call_output', call_id: call.call_id, output: '{"temp_c":18}' }],
    });
    expect(second.output_text).toBe('The tool said: {"temp_c":18}');
  });

  it('a JSON-schema text format gives JSON of that schema', async () => {
    const response = await client.responses.create({
      model: 'gpt-fake',
      input: 'Report',
      text: { format: { type: 'json_schema', name: 'report', schema: { type: 'object', properties: { summary: { type: 'string' }, score: { type: 'number' } }, required: ['summary', 'score'], additionalProperties: false }, strict: true } },
    });
    expect(JSON.parse(response.output_text)).toEqual({ summary: 'fake', score: 1 });
  });

  it('faults: a status is the SDK error of that status; an error event fails the stream', async () => {
    up.failNext({ kind: 'status', status: 400, message: 'bad input' });
    await expect(client.responses.create({ model: 'gpt-fake', input: 'x' })).rejects.toMatchObject({ status: 400, message: expect.stringContaining('bad input') });
    up.failNext({ kind: 'error-event', after: 4 });
    await expect(client.responses.stream({ model: 'gpt-fake', input: 'x y z' }).finalResponse()).rejects.toMatchObject({ message: expect.stringContaining('server had an error') });
  });
});

describe('what it refuses, as api.openai.com does', () => {
  it('a wrong key is AuthenticationError (401 invalid_api_key); another method or path NotFoundError (404 Invalid URL)', async () => {
    const wrong = new OpenAI({ apiKey: 'sk-wrong', baseURL: up.url, maxRetries: 0 });
    await expect(wrong.responses.create({ model: 'gpt-fake', input: 'x' })).rejects.toBeInstanceOf(AuthenticationError);
    await expect(wrong.responses.create({ model: 'gpt-fake', input: 'x' })).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
    await expect(client.post('/response', { body: { model: 'gpt-fake', input: 'x' } })).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.get('/responses')).rejects.toMatchObject({ status: 404, message: '404 Invalid URL (GET /v1/responses)' });
    expect(up.requests.map((r) => [r.method, r.path, r.key])).toEqual([
      ['POST', '/v1/responses', 'sk-wrong'],
      ['POST', '/v1/responses', 'sk-wrong'],
      ['POST', '/v1/response', UPSTREAM_KEY],
      ['GET', '/v1/responses', UPSTREAM_KEY],
    ]);
  });
});

describe('the fake /v1/chat/completions, read by the openai SDK', () => {
  it('text, and a streamed tool call the SDK assembles', async () => {
    const text = await client.chat.completions.create({ model: 'gpt-fake', messages: [{ role: 'user', content: 'Hi there' }] });
    expect(text.choices[0]?.message.content).toBe('echo: Hi there');
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: weather.parameters } }];
    const stream = client.chat.completions.stream({ model: 'gpt-fake', messages: [{ role: 'user', content: 'Weather in Rome' }], tools, stream_options: { include_usage: true } });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather', arguments: '{"city":"Rome"}' } });
    expect(final.usage).toMatchObject({ prompt_tokens: 3 });
  });
});
