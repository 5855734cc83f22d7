/**
 * The `anthropic` provider end to end (CONTRACT.md, Native providers;
 * issue 23): the real gateway (two worker threads) in front of the fake
 * Anthropic API (test/support/anthropic-upstream.ts, proved by the official
 * SDK), the `openai` SDK as the client. Every mapping both ways, streams
 * with several tool calls (one role chunk, as LangChain needs), tool-call
 * round trips, usage in streams, each error status, in-stream errors
 * before the commit point (retried onto an openai deployment of the same
 * alias) and after it (one SSE error event), the health probe (in test/provider-health-probes.test.ts), cancellation,
 * and no key in any log or answer.
 */
import OpenAI, { APIError } from 'openai';
import { beforeAll, afterAll, beforeEach, describe, expect, it } from 'vitest';
import { ANTHROPIC_KEY, startAnthropicUpstream, type AnthropicUpstream } from './support/anthropic-upstream.js';
import { expectNoKeyLeak, TEST_KEY, UPSTREAM_KEY, useGateway } from './support/gateway.js';
import { WEATHER, leaveMidStream } from './support/chat-stream.js';
import { sseData } from './support/sse.js';
import { EARLY_MS, MARGIN_MS } from './support/waits.js';

const WRONG_KEY = 'sk-ant-wrong-key-abcdef0123456789';
let anthropic: AnthropicUpstream;
beforeAll(async () => {
  anthropic = await startAnthropicUpstream();
});
afterAll(() => anthropic.close());
beforeEach(() => anthropic.reset());

const { gw, upstream } = useGateway({
  gateway: (openaiUpstream) => ({
    env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY },
    yaml: `
model_list:
  - model_name: claude
    params: { model: anthropic/claude-fake-1, api_base: ${anthropic.url}, api_key: ${ANTHROPIC_KEY} }
  - model_name: claude-env
    params: { model: anthropic/claude-fake-1, api_base: ${anthropic.url} }
  - model_name: claude-drop
    params: { model: anthropic/claude-fake-1, api_base: ${anthropic.url}, drop_params: true }
  - model_name: claude-idle
    params: { model: anthropic/claude-fake-1, api_base: ${anthropic.url}, idle_timeout: 0.3 }
  - model_name: claude-badkey
    params: { model: anthropic/claude-fake-1, api_base: ${anthropic.url}, api_key: ${WRONG_KEY} }
  - model_name: mixed
    params: { model: anthropic/claude-fake-1, api_base: ${anthropic.url}, order: 1 }
    model_info: { id: mixed-claude }
  - model_name: mixed
    params: { model: openai/fake-model, api_base: ${openaiUpstream.url}, api_key: ${UPSTREAM_KEY}, order: 2 }
    model_info: { id: mixed-openai }
router_settings: { num_retries: 2, stream_commit_timeout: 30 }
`,
  }),
});

describe('anthropic: chat both ways', () => {
  it('a chat completion: Messages request out (x-api-key, anthropic-version, max_tokens 4096, system), chat.completion back with usage and mapped rate-limit headers', async () => {
    anthropic.script({ kind: 'message', content: [{ type: 'text', text: 'Bonjour.' }], usage: { input_tokens: 10, output_tokens: 3, cache_read_input_tokens: 100, cache_creation_input_tokens: 5 } });
    const { data, response } = await gw
      .client()
      .chat.completions.create({ model: 'claude', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }], temperature: 0.5, stop: ['END'] })
      .withResponse();
    expect(data).toMatchObject({ object: 'chat.completion', model: 'claude-fake-1', choices: [{ index: 0, message: { role: 'assistant', content: 'Bonjour.' }, finish_reason: 'stop' }] });
    expect(data.usage).toEqual({ prompt_tokens: 115, completion_tokens: 3, total_tokens: 118, prompt_tokens_details: { cached_tokens: 100 } });
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('49');
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('80000');
    expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+s$/);
    expect(response.headers.get('anthropic-ratelimit-requests-remaining')).toBeNull();
    expect(response.headers.get('request-id')).toBeNull();
    expect(response.headers.get('x-should-not-pass')).toBeNull();
    expect(response.headers.get('x-switchyard-deployment')).toBe('claude-0');
    const [sent] = anthropic.messages();
    expect(sent!.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(sent!.headers.authorization).toBeUndefined();
    expect(sent!.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent!.body).toEqual({
      model: 'claude-fake-1',
      max_tokens: 4096,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      stop_sequences: ['END'],
      temperature: 0.5,
    });
  });

  it('a key from ANTHROPIC_API_KEY when the deployment names none', async () => {
    const answer = await gw.client().chat.completions.create({ model: 'claude-env', messages: [{ role: 'user', content: 'env' }] });
    expect(answer.choices[0]!.message.content).toBe('Hello! You said: env');
    expect(anthropic.messages()[0]!.headers['x-api-key']).toBe(ANTHROPIC_KEY);
  });

  it('a stream with text and two tool calls: one role chunk first, tool calls by index with id and name first, arguments in fragments, the finish chunk, the usage chunk, [DONE]; the SDK accumulates it', async () => {
    anthropic.script({
      kind: 'message',
      content: [
        { type: 'text', text: 'Checking both cities.' },
        { type: 'tool_use', id: 'toolu_paris', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'toolu_rome', name: 'get_weather', input: { city: 'Rome' } },
      ],
      usage: { input_tokens: 40, output_tokens: 30 },
      intervalMs: 2,
    });
    const stream = await gw.client().chat.completions.create({ model: 'claude', stream: true, stream_options: { include_usage: true }, tools: [WEATHER], messages: [{ role: 'user', content: 'Weather in Paris and Rome?' }] });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const deltas = chunks.flatMap((c) => c.choices.map((choice) => choice.delta));
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(deltas.filter((d) => d.role !== undefined)).toHaveLength(1);
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Checking both cities.');
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    const firsts = calls.filter((t) => t.id !== undefined);
    expect(firsts.map((t) => [t.index, t.id, t.type, t.function?.name])).toEqual([
      [0, 'toolu_paris', 'function', 'get_weather'],
      [1, 'toolu_rome', 'function', 'get_weather'],
    ]);
    const args = [0, 1].map((i) => calls.filter((t) => t.index === i).map((t) => t.function?.arguments ?? '').join(''));
    expect(args.map((a) => JSON.parse(a))).toEqual([{ city: 'Paris' }, { city: 'Rome' }]);
    expect(calls.filter((t) => t.id === undefined).length).toBeGreaterThan(2);
    const finish = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finish.map((c) => c.choices[0]!.finish_reason)).toEqual(['tool_calls']);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 40, completion_tokens: 30, total_tokens: 70, prompt_tokens_details: { cached_tokens: 0 } });
    // The openai SDK's own accumulator (what chat.completions.stream() and LangChain-style clients rely on).
    anthropic.script({ kind: 'message', content: [{ type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: { city: 'Oslo' } }, { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: { city: 'Lima' } }] });
    const final = await gw.client().chat.completions.stream({ model: 'claude', tools: [WEATHER], messages: [{ role: 'user', content: 'Oslo and Lima?' }] }).finalChatCompletion();
    expect(final.choices[0]!.message.tool_calls!.map((t) => [t.id, (t as { function: { arguments: string } }).function.arguments])).toEqual([
      ['toolu_a', '{"city":"Oslo"}'],
      ['toolu_b', '{"city":"Lima"}'],
    ]);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('a tool-call round trip: the call, then the results (merged into one user turn) and the answer', async () => {
    const client = gw.client();
    anthropic.script({ kind: 'message', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }, { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Rome' } }] });
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Paris or Rome, which is warmer?' }];
    const first = await client.chat.completions.create({ model: 'claude', tools: [WEATHER], tool_choice: 'auto', messages });
    const call = first.choices[0]!.message;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call.content).toBeNull();
    expect(call.tool_calls!.map((t) => t.id)).toEqual(['toolu_1', 'toolu_2']);
    messages.push(call, { role: 'tool', tool_call_id: 'toolu_1', content: '18 C' }, { role: 'tool', tool_call_id: 'toolu_2', content: '24 C' });
    anthropic.script({ kind: 'message', content: [{ type: 'text', text: 'Rome is warmer.' }] });
    const second = await client.chat.completions.create({ model: 'claude', tools: [WEATHER], messages });
    expect(second.choices[0]!.message.content).toBe('Rome is warmer.');
    expect(anthropic.messages()[1]!.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Paris or Rome, which is warmer?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '18 C' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '24 C' },
        ],
      },
    ]);
    expect(anthropic.messages()[1]!.body.tool_choice).toBeUndefined();
  });

  it('response_format json_schema: the answer is the JSON, as content', async () => {
    anthropic.script({ kind: 'message', content: [{ type: 'tool_use', id: 'toolu_j', name: 'json_response', input: { city: 'Paris' } }] });
    const answer = await gw.client().chat.completions.create({
      model: 'claude',
      messages: [{ role: 'user', content: 'A city' }],
      response_format: { type: 'json_schema', json_schema: { name: 'c', schema: { type: 'object', properties: { city: { type: 'string' } } } } },
    });
    expect(JSON.parse(answer.choices[0]!.message.content!)).toEqual({ city: 'Paris' });
    expect(answer.choices[0]!.finish_reason).toBe('stop');
  });
});

describe('anthropic: the Responses API through the chat translation', () => {
  it('responses.create, and its stream: the answer and the events as from any chat provider', async () => {
    anthropic.script({ kind: 'message', content: [{ type: 'text', text: 'Paris is the capital.' }], usage: { input_tokens: 8, output_tokens: 5 } });
    const response = await gw.client().responses.create({ model: 'claude', instructions: 'Be brief.', input: 'Capital of France?' });
    expect(response.output_text).toBe('Paris is the capital.');
    expect(response.usage).toMatchObject({ input_tokens: 8, output_tokens: 5 });
    expect(anthropic.messages()[0]!.body).toMatchObject({ system: [{ type: 'text', text: 'Be brief.' }], messages: [{ role: 'user', content: [{ type: 'text', text: 'Capital of France?' }] }] });
    anthropic.script({ kind: 'message', content: [{ type: 'text', text: 'Rome, of Italy.' }] });
    const stream = gw.client().responses.stream({ model: 'claude', input: 'And Italy?' });
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Rome, of Italy.');
    expect(final.status).toBe('completed');
  });
});

describe('anthropic: what is refused, and errors', () => {
  it('an OpenAI parameter Anthropic cannot honour is 400 unsupported_parameter naming it, or dropped with drop_params', async () => {
    const refused = await gw.client().chat.completions.create({ model: 'claude', n: 2, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(APIError);
    expect(refused).toMatchObject({ status: 400, code: 'unsupported_parameter' });
    expect((refused as APIError).message).toContain('n:');
    expect(anthropic.messages()).toHaveLength(0);
    const dropped = await gw.client().chat.completions.create({ model: 'claude-drop', n: 2, logit_bias: { '1': 2 }, seed: 3, messages: [{ role: 'user', content: 'x' }] });
    expect(dropped.choices[0]!.message.content).toBe('Hello! You said: x');
    expect(Object.keys(anthropic.messages()[0]!.body).sort()).toEqual(['max_tokens', 'messages', 'model']);
  });

  it('embeddings: 400 unsupported_operation', async () => {
    const error = await gw.client().embeddings.create({ model: 'claude', input: 'x' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, code: 'unsupported_operation' });
  });

  it('a provider 400 is the compatible error object with its status and message', async () => {
    anthropic.script({ kind: 'error', status: 400, type: 'invalid_request_error', message: 'max_tokens: 999999 > 64000, which is the maximum' });
    const error = (await gw.client().chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(400);
    expect(error.error).toEqual({ message: 'max_tokens: 999999 > 64000, which is the maximum', type: 'invalid_request_error', param: null, code: null });
  });

  it('429 (every attempt): passed through with retry-after and the mapped rate-limit headers', async () => {
    const limited = { kind: 'error', status: 429, type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit', headers: { 'retry-after': '3' } } as const;
    anthropic.script(limited, limited, limited);
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }) });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(res.headers.get('x-ratelimit-remaining-tokens')).toBe('79000');
    expect(await res.json()).toEqual({ error: { message: 'Number of requests has exceeded your rate limit', type: 'rate_limit_error', param: null, code: null } });
  });

  it('529 overloaded and 500 (every attempt): 502 with the gateway\'s message, not the provider\'s', async () => {
    const overloaded = { kind: 'error', status: 529, type: 'overloaded_error', message: 'Overloaded internal-detail-xyz' } as const;
    anthropic.script(overloaded, overloaded, overloaded);
    const error = (await gw.client().chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_error');
    expect(error.message).not.toContain('internal-detail-xyz');
    expect(anthropic.messages()).toHaveLength(3);
  });

  it('401: 502 upstream_auth_failed with the gateway\'s message; neither key is in any log or answer', async () => {
    const error = (await gw.client().chat.completions.create({ model: 'claude-badkey', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_auth_failed');
    expect(error.message).not.toContain('x-api-key');
    await expectNoKeyLeak(gw, [TEST_KEY, ANTHROPIC_KEY, WRONG_KEY, UPSTREAM_KEY]);
  });
});

describe('anthropic: in-stream errors and the commit point', () => {
  it('an event: error before any content is retried: on a mixed alias the openai deployment serves one clean stream', async () => {
    anthropic.script({ kind: 'stream-error', type: 'overloaded_error', message: 'Overloaded', afterContent: false });
    const { data: stream, response } = await gw.client().chat.completions.create({ model: 'mixed', stream: true, messages: [{ role: 'user', content: 'fall back' }] }).withResponse();
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(response.headers.get('x-switchyard-deployment')).toBe('mixed-openai');
    expect(response.headers.get('x-switchyard-attempts')).toBe('2');
    // Nothing of the failed attempt (its role chunk was held by the commit gate): only the openai deployment's stream.
    expect(chunks.every((c) => c.id === 'chatcmpl-fake-1')).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('tok0 tok1 tok2 ');
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'stop')).toBe(true);
    expect(anthropic.messages()).toHaveLength(1);
    expect(upstream.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
  });

  it('a 529 before the answer falls back across providers too (not a stream)', async () => {
    anthropic.script({ kind: 'error', status: 529, type: 'overloaded_error', message: 'Overloaded' });
    const { data, response } = await gw.client().chat.completions.create({ model: 'mixed', messages: [{ role: 'user', content: 'x' }] }).withResponse();
    expect(response.headers.get('x-switchyard-deployment')).toBe('mixed-openai');
    expect(data.choices[0]!.message.content).toBeTruthy();
  });

  it('an event: error after content is one SSE error event: the client keeps the text, then the SDK throws', async () => {
    anthropic.script({ kind: 'stream-error', type: 'overloaded_error', message: 'Overloaded', afterContent: true });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = sseData(text);
    expect(events.slice(0, 2).map((e) => JSON.parse(e).choices[0].delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'Partly' }]);
    expect(events.slice(2)).toHaveLength(1);
    expect(JSON.parse(events[2]!).error).toMatchObject({ code: 'upstream_error', type: 'gateway_error' });
    expect(text).not.toContain('[DONE]');
    anthropic.script({ kind: 'stream-error', type: 'api_error', message: 'Internal', afterContent: true });
    const stream = await gw.client().chat.completions.create({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'x' }] });
    await expect(async () => {
      for await (const _ of stream) void _;
    }).rejects.toBeInstanceOf(APIError);
  });

  it('a stream cut short before message_stop, after content, ends with one SSE error event (upstream_reset)', async () => {
    anthropic.script({ kind: 'cut-short' });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    const events = sseData(await res.text());
    expect(JSON.parse(events.at(-1)!).error.code).toBe('upstream_reset');
  });

  it('the deadlines apply: a stream that goes silent after message_start is cut by idle_timeout, each attempt aborted, then 502 upstream_idle_timeout', async () => {
    anthropic.script({ kind: 'hang' }, { kind: 'hang' }, { kind: 'hang' });
    const started = performance.now();
    const error = (await gw.client().chat.completions.create({ model: 'claude-idle', stream: true, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_idle_timeout');
    // Three attempts (num_retries 2), each cut idle_timeout (0.3 s) after its last event.
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * 300 - EARLY_MS);
    expect(performance.now() - started).toBeLessThan(3 * 300 + MARGIN_MS);
    await anthropic.waitFor(() => anthropic.messages().length === 3 && anthropic.messages().every((r) => r.aborted), 3000);
  });

  it('a client that leaves mid-stream aborts the upstream request', async () => {
    anthropic.script({ kind: 'message', content: [{ type: 'text', text: 'word '.repeat(200) }], intervalMs: 20 });
    expect(await leaveMidStream(gw.client(), 'claude', 3)).toBe(3);
    await anthropic.waitFor(() => anthropic.messages()[0]!.aborted, 3000);
    expect(anthropic.messages()[0]!.done).toBe(false);
  });
});
