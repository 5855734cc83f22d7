/**
 * POST /v1/responses end to end (issue 24, point 1; CONTRACT.md, HTTP):
 * the `openai` SDK's responses.create / responses.stream / responses.parse
 * through the real gateway, against the mock provider, a chat-completions
 * upstream (translated) and a /responses upstream (passed through, params
 * responses_api). Both upstreams are the scripted fake of
 * test/support/responses-upstream.ts, so each case runs the same way on both.
 */
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { responsesAliases, startResponsesUpstream, type ResponsesUpstream } from './support/responses-upstream.js';
import { UPSTREAM_KEY, expectNoKeyLeak, startTestGateway, type TestGateway } from './support/gateway.js';
import { sseEvents } from './support/sse.js';
import { until } from './support/waits.js';

let up: ResponsesUpstream;
let gw: TestGateway;
let client: OpenAI;
beforeAll(async () => {
  up = await startResponsesUpstream();
  gw = await startTestGateway({
    yaml: `
model_list:${responsesAliases(up)}
  - model_name: mock-slow
    params: { model: mock/chat-small, mock_stream_chunks: 1000, mock_chunk_interval_ms: 10 }
`,
  });
  client = gw.client();
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});
beforeEach(() => up.reset());

const weather = { type: 'function' as const, name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true };

describe('against the mock provider (the demo config)', () => {
  it('responses.create: a completed response with a message and usage', async () => {
    const response = await client.responses.create({ model: 'mock-chat', input: 'hello gateway' });
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: 'chat-small', store: false, usage: { input_tokens: 2, output_tokens: 5, total_tokens: 7 } });
    expect(response.id).toMatch(/^resp_[0-9a-f]{26}$/);
    expect(response.output_text).toBe('This is a mock reply');
  });

  it('responses.stream: text deltas, the event sequence, and the final response; the request is counted on its route', async () => {
    const types: string[] = [];
    let text = '';
    const stream = client.responses.stream({ model: 'mock-chat', input: 'hello gateway' });
    stream.on('event', (e) => types.push(e.type));
    stream.on('response.output_text.delta', (e) => (text += e.delta));
    const final = await stream.finalResponse();
    expect(text).toBe('This is a mock reply');
    expect(final).toMatchObject({ status: 'completed', output_text: 'This is a mock reply', usage: { output_tokens: 5 } });
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    const metrics = await (await gw.fetch('/metrics')).text();
    expect(metrics).toMatch(/switchyard_requests_total\{[^}]*route="\/v1\/responses"[^}]*model="mock-chat"[^}]*status="200"[^}]*\} 2/);
    expect(gw.logs().filter((l) => l.event === 'access' && l.route === '/v1/responses')).toHaveLength(2);
  });
});

describe('a client that leaves a Responses stream', () => {
  it('stops the call: nothing stays in flight, and the access line says 499', async () => {
    const controller = new AbortController();
    const stream = client.responses.stream({ model: 'mock-slow', input: 'a long one' }, { signal: controller.signal });
    let deltas = 0;
    stream.on('response.output_text.delta', () => {
      if (++deltas === 3) controller.abort();
    });
    await expect(stream.finalResponse()).rejects.toThrow();
    const context = gw.gateway.context;
    await until(() => context.pool.stats().inFlight === 0 && context.counters.streamsOpen === 0, 'the call stopped', 2000);
    expect({ pool: context.pool.stats().inFlight, streams: context.counters.streamsOpen, inFlight: context.counters.inFlight }).toEqual({ pool: 0, streams: 0, inFlight: 0 });
    expect(gw.logs().filter((l) => l.event === 'access' && l.model === 'mock-slow').at(-1)).toMatchObject({ route: '/v1/responses', status: 499 });
  });
});

describe.each([
  { alias: 'translated', upstreamPath: '/v1/chat/completions' },
  { alias: 'passed', upstreamPath: '/v1/responses' },
])('$alias: the upstream is called at $upstreamPath', ({ alias, upstreamPath }) => {
  it('responses.create: the answer, its usage, and what the upstream was sent', async () => {
    const response = await client.responses.create({ model: alias, instructions: 'Be brief.', input: 'Say hello', max_output_tokens: 50, temperature: 0.5, store: true });
    expect(response.output_text).toBe('echo: Say hello');
    expect(response.usage).toMatchObject({ output_tokens: 3 });
    expect(response.model).toBe('gpt-fake-2025-01-01');
    const sent = up.requests[0];
    expect(sent?.path).toBe(upstreamPath);
    expect(sent?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    if (alias === 'translated') {
      expect(sent?.json).toEqual({ model: 'gpt-fake', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }], max_completion_tokens: 50, temperature: 0.5 });
    } else {
      // Passed through: model rewritten and, stateless, store false.
      expect(sent?.json).toEqual({ model: 'gpt-fake', instructions: 'Be brief.', input: 'Say hello', max_output_tokens: 50, temperature: 0.5, store: false });
    }
  });

  it('responses.stream: deltas arrive as events, the final response is whole, with usage', async () => {
    const deltas: string[] = [];
    const stream = client.responses.stream({ model: alias, input: 'Stream this reply please' });
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('echo: Stream this reply please');
    expect(final).toMatchObject({ status: 'completed', output_text: 'echo: Stream this reply please', usage: { input_tokens: 4, output_tokens: 5 } });
    if (alias === 'translated') expect(up.requests[0]?.json).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('a tool round trip: function_call (streamed and whole), function_call_output back, the final answer', async () => {
    const streamed = await client.responses.stream({ model: alias, input: 'What is the weather in Paris', tools: [weather] }).finalResponse();
    const call = streamed.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' });
    if (call?.type !== 'function_call') throw new Error('no function call');
    const whole = await client.responses.create({ model: alias, input: 'What is the weather in Paris', tools: [weather] });
    expect(whole.output).toEqual([expect.objectContaining({ type: 'function_call', call_id: expect.any(String), name: 'get_weather', arguments: '{"city":"Paris"}' })]);

    const answer = await client.responses.create({
      model: alias,
      tools: [weather],
      input: [{ role: 'user', content: 'What is the weather in Paris' }, call, { type: 'function_call_output', call_id: call.call_id, output: '{"temp_c":18}' }],
    });
    expect(answer.output_text).toBe('The tool said: {"temp_c":18}');
    if (alias === 'translated') {
      // The call and its output reach chat as an assistant tool call and a tool message with the same id.
      expect((up.requests.at(-1)?.json.messages as unknown[]).slice(1)).toEqual([
        { role: 'assistant', content: null, tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: call.call_id, content: '{"temp_c":18}' },
      ]);
    }
  });

  it('structured output: responses.parse with a zod text format', async () => {
    const Report = z.object({ summary: z.string(), score: z.number(), ok: z.boolean() });
    const response = await client.responses.parse({ model: alias, input: 'Report please', text: { format: zodTextFormat(Report, 'report') } });
    expect(response.output_parsed).toEqual({ summary: 'fake', score: 1, ok: true });
  });

  it('a provider 4xx reaches the SDK as that error, its message kept', async () => {
    up.failNext({ kind: 'status', status: 400, message: "Invalid value for 'input'.", code: 'invalid_value' });
    await expect(client.responses.create({ model: alias, input: 'x' })).rejects.toMatchObject({ constructor: OpenAI.BadRequestError, status: 400, code: 'invalid_value', message: expect.stringContaining("Invalid value for 'input'.") });
  });

  it('a stream the upstream breaks after its first text: the SDK sees the error event, and the request is counted as a failure', async () => {
    // After created, in_progress and the first text (chat: role chunk and first piece; Responses: through the first delta).
    up.failNext({ kind: 'break', after: alias === 'translated' ? 2 : 5 });
    const deltas: string[] = [];
    const types: string[] = [];
    const stream = client.responses.stream({ model: alias, input: 'a fairly long request text' });
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    stream.on('event', (e) => types.push(e.type));
    await expect(stream.finalResponse()).rejects.toMatchObject({ message: 'the provider closed the connection mid-response' });
    expect(deltas).toEqual(['echo: a fai']);
    expect(types.at(-1)).toBe('error');
    const access = gw.logs().filter((l) => l.event === 'access' && l.model === alias).at(-1);
    expect(access).toMatchObject({ route: '/v1/responses', status: 502, stream: true });
  });

  it('on the wire, the broken stream ends with error (and, translated, response.failed), named and numbered in sequence', async () => {
    up.failNext({ kind: 'break', after: alias === 'translated' ? 2 : 5 });
    const res = await gw.fetch('/v1/responses', { method: 'POST', body: JSON.stringify({ model: alias, input: 'a fairly long request text', stream: true }) });
    expect(res.status).toBe(200);
    const events = sseEvents(await res.text()).map((e) => ({ event: e.event, data: JSON.parse(e.data) as { type: string; sequence_number: number; code?: string; response?: unknown } }));
    for (const [i, e] of events.entries()) expect([e.event, e.data.sequence_number]).toEqual([e.data.type, i]);
    const tail = events.slice(alias === 'translated' ? -2 : -1);
    expect(tail[0]?.data).toMatchObject({ type: 'error', code: 'upstream_reset', message: 'the provider closed the connection mid-response', param: null });
    if (alias === 'translated') {
      expect(tail[1]?.data).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { code: 'upstream_reset' }, output: [{ type: 'message', content: [{ text: 'echo: a fai' }] }] } });
    }
  });

  it("a provider's in-band error event fails the stream", async () => {
    up.failNext({ kind: 'error-event', after: alias === 'translated' ? 2 : 5 });
    await expect(client.responses.stream({ model: alias, input: 'a fairly long request text' }).finalResponse()).rejects.toMatchObject({ message: 'The server had an error while processing your request.' });
  });
});

describe('refused: what a stateless gateway cannot do', () => {
  it('previous_response_id is a 400 unsupported_parameter naming it, and nothing goes upstream', async () => {
    const err = await client.responses.create({ model: 'translated', input: 'again', previous_response_id: 'resp_abc' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, code: 'unsupported_parameter', message: expect.stringContaining("'previous_response_id'") });
    expect(up.requests).toHaveLength(0);
  });

  it('a conversation, and an item_reference, likewise', async () => {
    await expect(client.responses.create({ model: 'passed', input: 'x', conversation: 'conv_1' })).rejects.toMatchObject({ status: 400, code: 'unsupported_parameter', message: expect.stringContaining("'conversation'") });
    await expect(client.responses.create({ model: 'passed', input: [{ type: 'item_reference', id: 'msg_1' }] })).rejects.toMatchObject({ status: 400, code: 'unsupported_parameter', message: expect.stringContaining("'input[0]'") });
    expect(up.requests).toHaveLength(0);
  });

  it('a built-in tool is refused on a translated deployment and passed to one that serves the Responses API', async () => {
    await expect(client.responses.create({ model: 'translated', input: 'news?', tools: [{ type: 'web_search_preview' }] })).rejects.toMatchObject({
      status: 400,
      code: 'unsupported_parameter',
      message: expect.stringContaining("'tools[0].type'"),
    });
    expect(up.requests).toHaveLength(0);
    await client.responses.create({ model: 'passed', input: 'news?', tools: [{ type: 'web_search_preview' }] });
    expect(up.requests[0]?.json.tools).toEqual([{ type: 'web_search_preview' }]);
  });

  it('a body that is not a Responses request is a 400 naming the field; an unknown model a 404', async () => {
    const res = await gw.fetch('/v1/responses', { method: 'POST', body: JSON.stringify({ model: 'translated', input: 42 }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('"input"') } });
    await expect(client.responses.create({ model: 'nope', input: 'x' })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
  });

  it('no key reaches a log or a status route', async () => {
    await expectNoKeyLeak(gw);
  });
});

describe('counted as provider requests', () => {
  it("/status's request counters equal /metrics' sums over the provider routes, Responses calls included", async () => {
    const metrics = await (await gw.fetch('/metrics')).text();
    const sum = (cls: string | null) =>
      [...metrics.matchAll(/^switchyard_requests_total\{([^}]*)\} (\d+)$/gm)]
        .filter(([, labels]) => /route="\/v1\/(chat\/completions|embeddings|responses)"/.test(labels as string) && (cls === null || (labels as string).includes(`status_class="${cls}"`)))
        .reduce((n, m) => n + Number(m[2]), 0);
    const { requests } = (await (await gw.fetch('/status')).json()) as { requests: { total: number; success: number; client_errors: number; server_errors: number } };
    expect(requests.total).toBeGreaterThan(20);
    expect([requests.total, requests.success, requests.client_errors, requests.server_errors]).toEqual([sum(null), sum('2xx'), sum('4xx'), sum('5xx')]);
  });
});
