/**
 * The `gemini` provider end to end (CONTRACT.md, Native providers; issue
 * 25): the real gateway (two worker threads) in front of the fake Gemini
 * API (test/support/gemini-upstream.ts, proved by @google/genai), the
 * `openai` SDK as the client. Every mapping both ways, streamed and not;
 * tool-call round trips with Gemini 3's thought signatures carried in the
 * tool call ids; embeddings (base64 and floats); each error (a wrong key's
 * 400 API_KEY_INVALID → 502 upstream_auth_failed, 429 with the RetryInfo
 * delay as Retry-After, a 400 passed through, 5xx → 502); Gemini's error
 * body mid-stream before the commit point (retried onto an openai
 * deployment) and after it (one SSE error event); a stream cut short; the
 * deadlines; cancellation; the model as one path segment; the health probe (in test/provider-health-probes.test.ts);
 * no key in any log or answer.
 */
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GEMINI_KEY, RATE_LIMITED, startGeminiUpstream, type GeminiError, type GeminiUpstream } from './support/gemini-upstream.js';
import { expectNoKeyLeak, TEST_KEY, UPSTREAM_KEY, useGateway } from './support/gateway.js';
import { collect, WEATHER, leaveMidStream } from './support/chat-stream.js';
import { sseData } from './support/sse.js';
import { EARLY_MS, MARGIN_MS } from './support/waits.js';

const WRONG_KEY = 'AIzaSy-wrong-gemini-key-0123456789abcdef';

/** Gemini's 429 with its RetryInfo's delay set to `retryDelay` (a protobuf Duration: `0.25s`). */
function rateLimited(retryDelay: string): GeminiError {
  const details = (RATE_LIMITED.details ?? []).map((d) => (d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo' ? { ...d, retryDelay } : d));
  return { ...RATE_LIMITED, details };
}
let gemini: GeminiUpstream;
beforeAll(async () => {
  gemini = await startGeminiUpstream();
});
afterAll(() => gemini.close());
beforeEach(() => gemini.reset());

const { gw, upstream } = useGateway({
  gateway: (openaiUpstream) => ({
    env: { GEMINI_API_KEY: GEMINI_KEY },
    yaml: `
model_list:
  - model_name: flash
    params: { model: gemini/gemini-2.5-flash, api_base: ${gemini.url}, api_key: ${GEMINI_KEY} }
  - model_name: pro3
    params: { model: gemini/gemini-3-pro-preview, api_base: ${gemini.url} }
  - model_name: flash-drop
    params: { model: gemini/gemini-2.5-flash, api_base: ${gemini.url}, drop_params: true }
  - model_name: flash-idle
    params: { model: gemini/gemini-2.5-flash, api_base: ${gemini.url}, idle_timeout: 0.3 }
  - model_name: flash-badkey
    params: { model: gemini/gemini-2.5-flash, api_base: ${gemini.url}, api_key: ${WRONG_KEY} }
  - model_name: embed
    params: { model: gemini/gemini-embedding-001, api_base: ${gemini.url} }
  - model_name: mixed
    params: { model: gemini/gemini-2.5-flash, api_base: ${gemini.url}, order: 1 }
    model_info: { id: mixed-gemini }
  - model_name: mixed
    params: { model: openai/fake-model, api_base: ${openaiUpstream.url}, api_key: ${UPSTREAM_KEY}, order: 2 }
    model_info: { id: mixed-openai }
route_rules:
  - provider: gemini
    params: { api_base: ${gemini.url} }
router_settings: { num_retries: 2, stream_commit_timeout: 30 }
`,
  }),
});

describe('gemini: chat both ways', () => {
  it('a chat completion: generateContent at /v1beta/models/<model>, x-goog-api-key, systemInstruction and generationConfig; chat.completion back with usage (cached, thoughts)', async () => {
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Weighing it', thought: true }, { text: 'Bonjour.' }] }], usage: { promptTokenCount: 110, candidatesTokenCount: 3, cachedContentTokenCount: 100, thoughtsTokenCount: 7 } });
    const { data, response } = await gw
      .client()
      .chat.completions.create({ model: 'flash', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }], temperature: 0.5, top_p: 0.9, max_tokens: 64, stop: ['END'], seed: 3, user: 'u-1' })
      .withResponse();
    expect(data).toMatchObject({ object: 'chat.completion', model: 'gemini-2.5-flash', choices: [{ index: 0, message: { role: 'assistant', content: 'Bonjour.' }, finish_reason: 'stop' }] });
    expect(data.id).toMatch(/^resp-fake-/);
    expect(data.usage).toEqual({ prompt_tokens: 110, completion_tokens: 10, total_tokens: 120, prompt_tokens_details: { cached_tokens: 100 }, completion_tokens_details: { reasoning_tokens: 7 } });
    expect(response.headers.get('x-switchyard-deployment')).toBe('flash-0');
    expect(response.headers.get('x-should-not-pass')).toBeNull();
    expect(response.headers.get('server-timing')).toBeNull();
    const [sent] = gemini.generations();
    expect(sent!.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(sent!.headers['x-goog-api-key']).toBe(GEMINI_KEY);
    expect(sent!.headers.authorization).toBeUndefined();
    expect(sent!.query.get('key')).toBeNull();
    expect(sent!.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { temperature: 0.5, topP: 0.9, seed: 3, maxOutputTokens: 64, stopSequences: ['END'] },
    });
  });

  it('a key from GEMINI_API_KEY when the deployment names none', async () => {
    const answer = await gw.client().chat.completions.create({ model: 'pro3', messages: [{ role: 'user', content: 'env' }] });
    expect(answer.choices[0]!.message.content).toBe('Hello! You said: env');
    expect(gemini.generations()[0]!.headers['x-goog-api-key']).toBe(GEMINI_KEY);
  });

  it('a stream with text and two function calls: one role chunk first, tool calls by index with id and name, the finish chunk, the usage chunk, [DONE]; the SDK accumulates it', async () => {
    gemini.script({
      kind: 'content',
      candidates: [{ parts: [{ text: 'Checking both cities.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] }],
      usage: { promptTokenCount: 40, candidatesTokenCount: 30 },
      intervalMs: 2,
    });
    const stream = await gw.client().chat.completions.create({ model: 'pro3', stream: true, stream_options: { include_usage: true }, tools: [WEATHER], messages: [{ role: 'user', content: 'Weather in Paris and Rome?' }] });
    const chunks = await collect(stream);
    const deltas = chunks.flatMap((c) => c.choices.map((choice) => choice.delta));
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(deltas.filter((d) => d.role !== undefined)).toHaveLength(1);
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Checking both cities.');
    expect(deltas.filter((d) => (d.content ?? '') !== '').length).toBeGreaterThan(2);
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    expect(calls.map((t) => [t.index, t.type, t.function?.name, JSON.parse(t.function?.arguments ?? '')])).toEqual([
      [0, 'function', 'get_weather', { city: 'Paris' }],
      [1, 'function', 'get_weather', { city: 'Rome' }],
    ]);
    // Gemini 3 signs the first call of the turn: its signature rides in the id.
    expect(calls[0]!.id).toMatch(/^call_[\w-]+_0__thought__[A-Za-z0-9+/=]+$/);
    expect(calls[1]!.id).toMatch(/^call_[\w-]+_1$/);
    expect(chunks.filter((c) => c.choices[0]?.finish_reason).map((c) => c.choices[0]!.finish_reason)).toEqual(['tool_calls']);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 40, completion_tokens: 30, total_tokens: 70 });
    expect(gemini.generations()[0]!.path).toBe('/v1beta/models/gemini-3-pro-preview:streamGenerateContent');
    expect(gemini.generations()[0]!.query.get('alt')).toBe('sse');
    // The openai SDK's own accumulator (what chat.completions.stream() and LangChain-style clients rely on).
    gemini.script({ kind: 'content', candidates: [{ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }, { functionCall: { name: 'get_weather', args: { city: 'Lima' } } }] }] });
    const final = await gw.client().chat.completions.stream({ model: 'flash', tools: [WEATHER], messages: [{ role: 'user', content: 'Oslo and Lima?' }] }).finalChatCompletion();
    expect(final.choices[0]!.message.tool_calls!.map((t) => (t as { function: { arguments: string } }).function.arguments)).toEqual(['{"city":"Oslo"}', '{"city":"Lima"}']);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('a tool-call round trip on Gemini 3: the thought signature comes back inside the tool call id, the fake (which checks it) takes the next turn; results become named functionResponse parts', async () => {
    const client = gw.client();
    gemini.script({ kind: 'content', candidates: [{ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] }] });
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Paris or Rome, which is warmer?' }];
    const first = await client.chat.completions.create({ model: 'pro3', tools: [WEATHER], tool_choice: 'auto', messages });
    const call = first.choices[0]!.message;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call.content).toBeNull();
    const [paris, rome] = call.tool_calls!;
    expect(paris!.id).toContain('__thought__');
    messages.push(call, { role: 'tool', tool_call_id: paris!.id, content: '18 C' }, { role: 'tool', tool_call_id: rome!.id, content: '24 C' });
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Rome is warmer.' }] }] });
    const second = await client.chat.completions.create({ model: 'pro3', tools: [WEATHER], messages });
    expect(second.choices[0]!.message.content).toBe('Rome is warmer.');
    const signature = paris!.id.split('__thought__')[1];
    expect(gemini.generations()[1]!.body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Paris or Rome, which is warmer?' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: signature },
          { functionCall: { name: 'get_weather', args: { city: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { output: '18 C' } } },
          { functionResponse: { name: 'get_weather', response: { output: '24 C' } } },
        ],
      },
    ]);
    expect(gemini.generations()[1]!.body.toolConfig).toBeUndefined();
    // Without the signature (a client that rewrote the ids) Gemini 3 refuses the history: its 400 is passed through.
    const stripped = messages.map((m) => (m.role === 'assistant' ? { ...m, tool_calls: m.tool_calls!.map((t) => ({ ...t, id: t.id.split('__thought__')[0]! })) } : m.role === 'tool' ? { ...m, tool_call_id: m.tool_call_id.split('__thought__')[0]! } : m));
    const refused = (await client.chat.completions.create({ model: 'pro3', tools: [WEATHER], messages: stripped }).catch((e: unknown) => e)) as APIError;
    expect(refused.status).toBe(400);
    expect(refused.message).toContain('missing a thought_signature');
  });

  it('a streamed round trip: the SDK-accumulated call, its signed id sent back, the streamed answer', async () => {
    const client = gw.client();
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Let me look.' }, { functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] }] });
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Oslo?' }];
    const first = await client.chat.completions.stream({ model: 'pro3', tools: [WEATHER], messages }).finalChatCompletion();
    const call = first.choices[0]!.message;
    expect(call.content).toBe('Let me look.');
    messages.push({ role: 'assistant', content: call.content, tool_calls: call.tool_calls }, { role: 'tool', tool_call_id: call.tool_calls![0]!.id, content: '-3 C' });
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Cold: -3 C.' }] }] });
    const second = await client.chat.completions.stream({ model: 'pro3', tools: [WEATHER], messages }).finalChatCompletion();
    expect(second.choices[0]!.message.content).toBe('Cold: -3 C.');
    expect((gemini.generations()[1]!.body.contents as Array<{ parts: Array<{ thoughtSignature?: string }> }>)[1]!.parts[1]!.thoughtSignature).toBeTruthy();
  });

  it('response_format json_schema: responseMimeType and responseJsonSchema out, the JSON back as content; n: 2 gives two choices', async () => {
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: '{"city":"Paris"}' }] }] });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const answer = await gw.client().chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'A city' }], response_format: { type: 'json_schema', json_schema: { name: 'c', schema, strict: true } } });
    expect(JSON.parse(answer.choices[0]!.message.content!)).toEqual({ city: 'Paris' });
    expect(gemini.generations()[0]!.body.generationConfig).toEqual({ responseMimeType: 'application/json', responseJsonSchema: schema });
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Red.' }] }, { parts: [{ text: 'Blue.' }], finishReason: 'MAX_TOKENS' }] });
    const two = await gw.client().chat.completions.create({ model: 'flash', n: 2, messages: [{ role: 'user', content: 'A colour' }] });
    expect(two.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [0, 'Red.', 'stop'],
      [1, 'Blue.', 'length'],
    ]);
    expect(gemini.generations()[1]!.body.generationConfig).toEqual({ candidateCount: 2 });
  });

  it('finish reasons: SAFETY is content_filter, a blocked prompt is one empty content_filter choice', async () => {
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Partial' }], finishReason: 'SAFETY' }] }, { kind: 'content', blockReason: 'PROHIBITED_CONTENT' });
    const safety = await gw.client().chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'x' }] });
    expect(safety.choices[0]).toMatchObject({ finish_reason: 'content_filter', message: { content: 'Partial' } });
    const blocked = await gw.client().chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'x' }] });
    expect(blocked.choices).toEqual([{ index: 0, message: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: 'content_filter' }]);
  });
});

describe('gemini: embeddings', () => {
  it('batchEmbedContents: one request per input, the vectors back in order, base64 as the openai SDK asks by default (decoded by it) or floats; no usage (Gemini reports none)', async () => {
    const client = gw.client();
    const floats = await client.embeddings.create({ model: 'embed', input: ['first', 'second', 'third'], encoding_format: 'float', dimensions: 4 });
    expect(floats.data.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(floats.data.every((d) => d.embedding.length === 4)).toBe(true);
    expect(floats.model).toBe('gemini-embedding-001');
    expect(floats.usage).toBeUndefined();
    const [sent] = gemini.embeddings();
    expect(sent!.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(sent!.headers['x-goog-api-key']).toBe(GEMINI_KEY);
    expect(sent!.body).toEqual({ requests: ['first', 'second', 'third'].map((text) => ({ model: 'models/gemini-embedding-001', content: { parts: [{ text }] }, outputDimensionality: 4 })) });
    const base64 = await client.embeddings.create({ model: 'embed', input: ['first', 'second', 'third'], dimensions: 4 });
    expect(gemini.embeddings()[1]!.body).toEqual(sent!.body);
    // float32 on the wire: the same vectors to float32 precision.
    base64.data.forEach((d, i) => d.embedding.forEach((v, j) => expect(v).toBeCloseTo(floats.data[i]!.embedding[j]!, 6)));
    const raw = await gw.fetch('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: 'embed', input: 'one', encoding_format: 'base64' }) });
    expect(typeof ((await raw.json()) as { data: Array<{ embedding: unknown }> }).data[0]!.embedding).toBe('string');
  });

  it('token ids cannot be embedded by Gemini: 400 unsupported_parameter, nothing sent', async () => {
    const error = await gw.client().embeddings.create({ model: 'embed', input: [[1, 2, 3]] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, code: 'unsupported_parameter' });
    expect(gemini.embeddings()).toHaveLength(0);
  });
});

describe('gemini: the Responses API through the chat translation', () => {
  it('responses.create and its stream', async () => {
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Paris is the capital.' }] }], usage: { promptTokenCount: 8, candidatesTokenCount: 5 } });
    const response = await gw.client().responses.create({ model: 'flash', instructions: 'Be brief.', input: 'Capital of France?' });
    expect(response.output_text).toBe('Paris is the capital.');
    expect(response.usage).toMatchObject({ input_tokens: 8, output_tokens: 5 });
    expect(gemini.generations()[0]!.body).toMatchObject({ systemInstruction: { parts: [{ text: 'Be brief.' }] }, contents: [{ role: 'user', parts: [{ text: 'Capital of France?' }] }] });
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Rome, of Italy.' }] }] });
    const final = await gw.client().responses.stream({ model: 'flash', input: 'And Italy?' }).finalResponse();
    expect(final.output_text).toBe('Rome, of Italy.');
    expect(final.status).toBe('completed');
  });
});

describe('gemini: what is refused, and errors', () => {
  it('an OpenAI parameter Gemini cannot honour is 400 unsupported_parameter naming it, or dropped with drop_params', async () => {
    const refused = await gw.client().chat.completions.create({ model: 'flash', logit_bias: { '1': 2 }, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(APIError);
    expect(refused).toMatchObject({ status: 400, code: 'unsupported_parameter' });
    expect((refused as APIError).message).toContain('logit_bias:');
    expect(gemini.generations()).toHaveLength(0);
    const dropped = await gw.client().chat.completions.create({ model: 'flash-drop', logit_bias: { '1': 2 }, logprobs: true, parallel_tool_calls: false, reasoning_effort: 'low', messages: [{ role: 'user', content: 'x' }] });
    expect(dropped.choices[0]!.message.content).toBe('Hello! You said: x');
    expect(Object.keys(gemini.generations()[0]!.body)).toEqual(['contents']);
  });

  it('the model id is one encoded path segment: a route-rule name with slashes stays one segment; `.` and `..` are 400', async () => {
    const answer = await gw.client().chat.completions.create({ model: 'gemini/x/../../files', messages: [{ role: 'user', content: 'seg' }] });
    expect(answer.choices[0]!.message.content).toBe('Hello! You said: seg');
    expect(gemini.generations()[0]!.path).toBe('/v1beta/models/x%2F..%2F..%2Ffiles:generateContent');
    for (const id of ['.', '..']) {
      const refused = await gw.client().chat.completions.create({ model: `gemini/${id}`, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ status: 400, code: 'invalid_request' });
    }
    expect(gemini.generations()).toHaveLength(1);
  });

  it('a provider 400 is the compatible error object with its status, message and Gemini\'s status as code', async () => {
    gemini.script({ kind: 'error', error: { code: 400, status: 'INVALID_ARGUMENT', message: '* GenerateContentRequest.generation_config.max_output_tokens: must be positive' } });
    const error = (await gw.client().chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(400);
    expect(error.error).toEqual({ message: '* GenerateContentRequest.generation_config.max_output_tokens: must be positive', type: 'invalid_request_error', param: null, code: 'INVALID_ARGUMENT' });
    expect(gemini.generations()).toHaveLength(1);
  });

  it('429 with RetryInfo (every attempt): each retry waits the body\'s retry delay; the last 429 passed through, Retry-After from that delay', async () => {
    const limited = rateLimited('0.25s');
    gemini.script({ kind: 'error', error: limited }, { kind: 'error', error: limited }, { kind: 'error', error: limited });
    const t0 = performance.now();
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'flash', messages: [{ role: 'user', content: 'x' }] }) });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(500);
    expect(gemini.generations()).toHaveLength(3);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toEqual({ error: { message: RATE_LIMITED.message, type: 'rate_limit_error', param: null, code: 'RESOURCE_EXHAUSTED' } });
  });

  it('500 (every attempt): 502 with the gateway\'s message, not the provider\'s', async () => {
    const internal = { kind: 'error', error: { code: 500, status: 'INTERNAL', message: 'An internal error has occurred internal-detail-xyz' } } as const;
    gemini.script(internal, internal, internal);
    const error = (await gw.client().chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_error');
    expect(error.message).not.toContain('internal-detail-xyz');
    expect(gemini.generations()).toHaveLength(3);
  });

  it('a wrong key (Gemini\'s 400 API_KEY_INVALID): 502 upstream_auth_failed with the gateway\'s message; no key in any log or answer', async () => {
    const error = (await gw.client().chat.completions.create({ model: 'flash-badkey', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_auth_failed');
    expect(error.message).not.toContain('API key not valid');
    const streamed = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'flash-badkey', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    expect(streamed.status).toBe(502);
    await expectNoKeyLeak(gw, [TEST_KEY, GEMINI_KEY, WRONG_KEY, UPSTREAM_KEY]);
  });
});

describe('gemini: errors inside a stream and the commit point', () => {
  it('Gemini\'s error body before any content is a failure of the attempt: on a mixed alias the openai deployment serves one clean stream', async () => {
    gemini.script({ kind: 'stream-error', error: { code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded. Please try again later.' }, afterContent: false });
    const { data: stream, response } = await gw.client().chat.completions.create({ model: 'mixed', stream: true, messages: [{ role: 'user', content: 'fall back' }] }).withResponse();
    const chunks = await collect(stream);
    expect(response.headers.get('x-switchyard-deployment')).toBe('mixed-openai');
    expect(response.headers.get('x-switchyard-attempts')).toBe('2');
    expect(chunks.every((c) => c.id.startsWith('chatcmpl-fake-'))).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('tok0 tok1 tok2 ');
    expect(gemini.generations()).toHaveLength(1);
    expect(upstream.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
  });

  it('a 429 error body before any content on the only deployment: retried after its retry delay, then 429 with that delay as Retry-After', async () => {
    const limited = { kind: 'stream-error', error: rateLimited('0.25s'), afterContent: false } as const;
    gemini.script(limited, limited, limited);
    const t0 = performance.now();
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'flash', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(500);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RESOURCE_EXHAUSTED');
    expect(gemini.generations()).toHaveLength(3);
  });

  it('Gemini\'s error body after content is one SSE error event: the client keeps the text, no [DONE], and the SDK throws', async () => {
    // A short retry delay: the provider's back-off is honoured even when it comes after the commit, and the next request waits for it.
    gemini.script({ kind: 'stream-error', error: rateLimited('0.25s'), afterContent: true });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'flash', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = sseData(text);
    expect(events.slice(0, 2).map((e) => JSON.parse(e).choices[0].delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'Partly' }]);
    expect(events.slice(2)).toHaveLength(1);
    expect(JSON.parse(events[2]!).error).toMatchObject({ code: 'upstream_error', type: 'gateway_error' });
    expect(text).not.toContain('[DONE]');
    expect(text).not.toContain('RESOURCE_EXHAUSTED');
    gemini.script({ kind: 'stream-error', error: { code: 500, status: 'INTERNAL', message: 'Internal' }, afterContent: true });
    const stream = await gw.client().chat.completions.create({ model: 'flash', stream: true, messages: [{ role: 'user', content: 'x' }] });
    await expect(collect(stream)).rejects.toBeInstanceOf(APIError);
  });

  it('a stream cut short before its finish reason, after content, ends with one SSE error event (upstream_reset)', async () => {
    gemini.script({ kind: 'cut-short' });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'flash', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    const events = sseData(await res.text());
    expect(JSON.parse(events.at(-1)!).error.code).toBe('upstream_reset');
  });

  it('the deadlines apply: a stream that goes silent after its first text is cut by idle_timeout, the upstream aborted, and the client gets one SSE error event upstream_idle_timeout', async () => {
    gemini.script({ kind: 'hang' });
    const started = performance.now();
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'flash-idle', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    const events = sseData(await res.text());
    // The hung stream sent content (the commit point passed): the idle timeout is its one SSE error event.
    expect(JSON.parse(events.at(-1)!).error.code).toBe('upstream_idle_timeout');
    // One attempt (committed by its text), cut idle_timeout (0.3 s) after it.
    expect(performance.now() - started).toBeGreaterThanOrEqual(300 - EARLY_MS);
    expect(performance.now() - started).toBeLessThan(300 + MARGIN_MS);
    await gemini.waitFor(() => gemini.generations().length === 1 && gemini.generations().every((r) => r.aborted), 3000);
  });

  it('a client that leaves mid-stream aborts the upstream request', async () => {
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'word '.repeat(200) }] }], intervalMs: 20 });
    expect(await leaveMidStream(gw.client(), 'flash', 3)).toBe(3);
    await gemini.waitFor(() => gemini.generations()[0]!.aborted, 3000);
    expect(gemini.generations()[0]!.done).toBe(false);
  });
});
