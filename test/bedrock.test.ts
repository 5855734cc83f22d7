/**
 * The `bedrock` provider end to end (CONTRACT.md, Native providers; issue
 * 25): the real gateway (two worker threads) in front of the fake Bedrock
 * runtime (test/support/bedrock-upstream.ts, which verifies the SigV4
 * signature of every request and was proved by the official AWS SDK), the
 * `openai` SDK as the client. Every mapping both ways, streamed and not;
 * tool-call round trips; Titan and Cohere embeddings; each error; exception
 * frames before and after the commit point; signatures the fake rejects
 * (wrong secret, clock skew); cancellation; the time to the first byte;
 * any split of the event stream into TCP chunks; the health probe (in test/provider-health-probes.test.ts); no
 * secret, session token or signature in any log or answer.
 */
import fc from 'fast-check';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AWS_KEYS, AWS_SESSION_KEYS, BEDROCK_API_KEY, startBedrockUpstream, streamFrames, vectorOf, type BedrockReply, type BedrockUpstream } from './support/bedrock-upstream.js';
import { expectNoKeyLeak, TEST_KEY, UPSTREAM_KEY, useGateway } from './support/gateway.js';
import { collect, WEATHER, type Chunk, leaveMidStream } from './support/chat-stream.js';
import { chatBody } from './support/requests.js';
import { sseData } from './support/sse.js';
import { EARLY_MS, MARGIN_MS } from './support/waits.js';

const MODEL = 'anthropic.claude-fake-v1:0';
const ARN = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-fake-v1:0';
const WRONG_SECRET = 'wrong/secret/key+abcdefghijklmnopqrstuv';
let bedrock: BedrockUpstream;
beforeAll(async () => {
  bedrock = await startBedrockUpstream();
});
afterAll(() => bedrock.close());
beforeEach(() => bedrock.reset());

const keys = `aws_access_key_id: ${AWS_KEYS.accessKeyId}, aws_secret_access_key: os.environ/BEDROCK_SECRET, aws_region_name: us-east-1`;
const { gw, upstream } = useGateway({
  gateway: (openaiUpstream) => ({
    env: {
      BEDROCK_SECRET: AWS_KEYS.secretAccessKey,
      BEDROCK_API_KEY,
      AWS_ACCESS_KEY_ID: AWS_SESSION_KEYS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: AWS_SESSION_KEYS.secretAccessKey,
      AWS_SESSION_TOKEN: AWS_SESSION_KEYS.sessionToken,
      AWS_REGION: 'us-east-1',
    },
    yaml: `
model_list:
  - model_name: claude
    params: { model: bedrock/${MODEL}, api_base: ${bedrock.url}, ${keys} }
  - model_name: claude-env
    params: { model: bedrock/${MODEL}, api_base: ${bedrock.url} }
  - model_name: claude-arn
    params: { model: "bedrock/${ARN}", api_base: ${bedrock.url}, ${keys} }
  - model_name: claude-apikey
    params: { model: bedrock/${MODEL}, api_base: ${bedrock.url}, api_key: os.environ/BEDROCK_API_KEY }
  - model_name: claude-wrong-secret
    params: { model: bedrock/${MODEL}, api_base: ${bedrock.url}, aws_access_key_id: ${AWS_KEYS.accessKeyId}, aws_secret_access_key: "${WRONG_SECRET}" }
  - model_name: claude-drop
    params: { model: bedrock/${MODEL}, api_base: ${bedrock.url}, ${keys}, drop_params: true }
  - model_name: claude-idle
    params: { model: bedrock/${MODEL}, api_base: ${bedrock.url}, ${keys}, idle_timeout: 0.3 }
  - model_name: dots
    params: { model: bedrock/.., api_base: ${bedrock.url}, ${keys} }
  - model_name: titan
    params: { model: bedrock/amazon.titan-embed-text-v2:0, api_base: ${bedrock.url}, ${keys} }
  - model_name: cohere
    params: { model: bedrock/cohere.embed-english-v3, api_base: ${bedrock.url}, ${keys} }
  - model_name: mixed
    params: { model: bedrock/${MODEL}, api_base: ${bedrock.url}, ${keys}, order: 1 }
    model_info: { id: mixed-bedrock }
  - model_name: mixed
    params: { model: openai/fake-model, api_base: ${openaiUpstream.url}, api_key: ${UPSTREAM_KEY}, order: 2 }
    model_info: { id: mixed-openai }
router_settings: { num_retries: 2, stream_commit_timeout: 30 }
`,
  }),
});

describe('bedrock: chat both ways', () => {
  it('a chat completion: a Converse request signed with SigV4 (which the fake verifies), chat.completion back with usage as OpenAI counts', async () => {
    bedrock.script({ kind: 'message', content: [{ text: 'Bonjour.' }], usage: { inputTokens: 10, outputTokens: 3, cacheReadInputTokens: 100, cacheWriteInputTokens: 5 } });
    const { data, response } = await gw
      .client()
      .chat.completions.create({ model: 'claude', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }], temperature: 0.5, top_p: 0.9, max_tokens: 64, stop: ['END'], user: 'u-1' })
      .withResponse();
    expect(data).toMatchObject({ object: 'chat.completion', model: MODEL, choices: [{ index: 0, message: { role: 'assistant', content: 'Bonjour.' }, finish_reason: 'stop' }] });
    expect(data.id).toMatch(/^chatcmpl-/);
    expect(data.usage).toEqual({ prompt_tokens: 115, completion_tokens: 3, total_tokens: 118, prompt_tokens_details: { cached_tokens: 100 } });
    expect(response.headers.get('x-amzn-requestid')).toBeNull();
    expect(bedrock.refused).toEqual([]);
    const [sent] = bedrock.converse();
    expect(sent!.path).toBe(`/model/${encodeURIComponent(MODEL)}/converse`);
    expect(String(sent!.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/);
    expect(sent!.headers['x-amz-security-token']).toBeUndefined();
    // The gateway's own headers go along unsigned; what Bedrock reads is signed.
    expect(/SignedHeaders=([a-z0-9;-]+)/.exec(String(sent!.headers.authorization))?.[1]).toBe('accept;content-type;host;x-amz-content-sha256;x-amz-date');
    expect(sent!.headers['x-request-id']).toMatch(/\S/);
    expect(sent!.body).toEqual({
      messages: [{ role: 'user', content: [{ text: 'Hello' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 64, temperature: 0.5, topP: 0.9, stopSequences: ['END'] },
    });
  });

  it('credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN and the region from AWS_REGION when the deployment names none', async () => {
    const answer = await gw.client().chat.completions.create({ model: 'claude-env', messages: [{ role: 'user', content: 'env' }] });
    expect(answer.choices[0]!.message.content).toBe('Hello! You said: env');
    expect(bedrock.refused).toEqual([]);
    const [sent] = bedrock.converse();
    expect(String(sent!.headers.authorization)).toContain(`Credential=${AWS_SESSION_KEYS.accessKeyId}/`);
    expect(sent!.headers['x-amz-security-token']).toBe(AWS_SESSION_KEYS.sessionToken);
    // Status says where the credentials come from, never what they are.
    const status = (await (await gw.fetch('/status/models/claude-env')).json()) as Record<string, unknown>;
    expect(status).toMatchObject({ provider: 'bedrock', credentials: 'present', credentials_source: 'AWS_ACCESS_KEY_ID', api_base: bedrock.url });
  });

  it('a Bedrock API key (api_key) goes as Authorization: Bearer, no signature', async () => {
    const answer = await gw.client().chat.completions.create({ model: 'claude-apikey', messages: [{ role: 'user', content: 'key' }] });
    expect(answer.choices[0]!.message.content).toBe('Hello! You said: key');
    const [sent] = bedrock.converse();
    expect(sent!.headers.authorization).toBe(`Bearer ${BEDROCK_API_KEY}`);
    expect(sent!.headers['x-amz-date']).toBeUndefined();
  });

  it("the model id is one encoded path segment (an inference profile ARN's ':' and '/'), signed as sent; '..' is 400 before any call", async () => {
    const answer = await gw.client().chat.completions.create({ model: 'claude-arn', messages: [{ role: 'user', content: 'arn' }] });
    expect(answer.model).toBe(ARN);
    expect(bedrock.refused).toEqual([]);
    expect(bedrock.converse()[0]!.path).toBe(`/model/${encodeURIComponent(ARN)}/converse`);
    expect(bedrock.converse()[0]!.modelId).toBe(ARN);
    const dots = await gw.client().chat.completions.create({ model: 'dots', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(dots).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(bedrock.converse()).toHaveLength(1);
  });

  it('a stream with reasoning, text and two tool calls: one role chunk first, tool calls by index with id and name first, arguments in fragments, the finish chunk, the usage chunk, [DONE]; the SDK accumulates it', async () => {
    bedrock.script({
      kind: 'message',
      content: [
        { reasoningContent: { reasoningText: { text: 'Two cities.', signature: 'sig' } } },
        { text: 'Checking both cities.' },
        { toolUse: { toolUseId: 'tooluse_paris', name: 'get_weather', input: { city: 'Paris' } } },
        { toolUse: { toolUseId: 'tooluse_rome', name: 'get_weather', input: { city: 'Rome' } } },
      ],
      usage: { inputTokens: 40, outputTokens: 30 },
      intervalMs: 2,
    });
    const chunks = await collect(await gw.client().chat.completions.create({ model: 'claude', stream: true, stream_options: { include_usage: true }, tools: [WEATHER], messages: [{ role: 'user', content: 'Weather in Paris and Rome?' }] }));
    expect(bedrock.converse()[0]!.path).toBe(`/model/${encodeURIComponent(MODEL)}/converse-stream`);
    expect(bedrock.refused).toEqual([]);
    const deltas = chunks.flatMap((c) => c.choices.map((choice) => choice.delta));
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(deltas.filter((d) => d.role !== undefined)).toHaveLength(1);
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Checking both cities.');
    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    expect(calls.filter((t) => t.id !== undefined).map((t) => [t.index, t.id, t.type, t.function?.name])).toEqual([
      [0, 'tooluse_paris', 'function', 'get_weather'],
      [1, 'tooluse_rome', 'function', 'get_weather'],
    ]);
    const args = [0, 1].map((i) => calls.filter((t) => t.index === i).map((t) => t.function?.arguments ?? '').join(''));
    expect(args.map((a) => JSON.parse(a))).toEqual([{ city: 'Paris' }, { city: 'Rome' }]);
    expect(chunks.filter((c) => c.choices[0]?.finish_reason).map((c) => c.choices[0]!.finish_reason)).toEqual(['tool_calls']);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 40, completion_tokens: 30, total_tokens: 70 });
    bedrock.script({ kind: 'message', content: [{ toolUse: { toolUseId: 'tooluse_a', name: 'get_weather', input: { city: 'Oslo' } } }, { toolUse: { toolUseId: 'tooluse_b', name: 'get_weather', input: { city: 'Lima' } } }] });
    const final = await gw.client().chat.completions.stream({ model: 'claude', tools: [WEATHER], messages: [{ role: 'user', content: 'Oslo and Lima?' }] }).finalChatCompletion();
    expect(final.choices[0]!.message.tool_calls!.map((t) => [t.id, (t as { function: { arguments: string } }).function.arguments])).toEqual([
      ['tooluse_a', '{"city":"Oslo"}'],
      ['tooluse_b', '{"city":"Lima"}'],
    ]);
  });

  it('a tool-call round trip: toolUse blocks with no blank text block, then every toolResult in the next user turn', async () => {
    const client = gw.client();
    bedrock.script({ kind: 'message', content: [{ toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } } }, { toolUse: { toolUseId: 'tooluse_2', name: 'get_weather', input: { city: 'Rome' } } }] });
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Paris or Rome, which is warmer?' }];
    const first = await client.chat.completions.create({ model: 'claude', tools: [WEATHER], tool_choice: 'required', messages });
    const call = first.choices[0]!.message;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call.content).toBeNull();
    expect(bedrock.converse()[0]!.body.toolConfig).toMatchObject({ toolChoice: { any: {} }, tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: { type: 'object' } } } }] });
    // As a client sends it back: the assistant turn with an empty content string.
    messages.push({ ...call, content: '' }, { role: 'tool', tool_call_id: 'tooluse_1', content: '18 C' }, { role: 'tool', tool_call_id: 'tooluse_2', content: '24 C' });
    bedrock.script({ kind: 'message', content: [{ text: 'Rome is warmer.' }] });
    const second = await client.chat.completions.create({ model: 'claude', tools: [WEATHER], messages });
    expect(second.choices[0]!.message.content).toBe('Rome is warmer.');
    expect(bedrock.refused).toEqual([]);
    expect(bedrock.converse()[1]!.body.messages).toEqual([
      { role: 'user', content: [{ text: 'Paris or Rome, which is warmer?' }] },
      {
        role: 'assistant',
        content: [{ toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } } }, { toolUse: { toolUseId: 'tooluse_2', name: 'get_weather', input: { city: 'Rome' } } }],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'tooluse_1', content: [{ text: '18 C' }] } },
          { toolResult: { toolUseId: 'tooluse_2', content: [{ text: '24 C' }] } },
        ],
      },
    ]);
  });

  it('every stop reason, streamed and not: end_turn, stop_sequence → stop; tool_use → tool_calls; max_tokens → length; guardrail_intervened, content_filtered → content_filter', async () => {
    const cases: Array<[string, string]> = [
      ['end_turn', 'stop'],
      ['stop_sequence', 'stop'],
      ['max_tokens', 'length'],
      ['guardrail_intervened', 'content_filter'],
      ['content_filtered', 'content_filter'],
      ['tool_use', 'tool_calls'],
    ];
    for (const [stopReason, finish] of cases) {
      const content = stopReason === 'tool_use' ? [{ toolUse: { toolUseId: 't', name: 'get_weather', input: {} } }] : [{ text: 'x' }];
      bedrock.script({ kind: 'message', content, stopReason }, { kind: 'message', content, stopReason });
      const whole = await gw.client().chat.completions.create({ model: 'claude', tools: [WEATHER], messages: [{ role: 'user', content: stopReason }] });
      expect([stopReason, whole.choices[0]!.finish_reason]).toEqual([stopReason, finish]);
      const chunks = await collect(await gw.client().chat.completions.create({ model: 'claude', stream: true, tools: [WEATHER], messages: [{ role: 'user', content: stopReason }] }));
      expect([stopReason, chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean)]).toEqual([stopReason, [finish]]);
    }
  });

  it('response_format json_schema: a forced tool, whose input comes back as the content', async () => {
    bedrock.script({ kind: 'message', content: [{ toolUse: { toolUseId: 't', name: 'json_response', input: { city: 'Paris' } } }] });
    const answer = await gw.client().chat.completions.create({
      model: 'claude',
      messages: [{ role: 'user', content: 'A city' }],
      response_format: { type: 'json_schema', json_schema: { name: 'c', schema: { type: 'object', properties: { city: { type: 'string' } } } } },
    });
    expect(JSON.parse(answer.choices[0]!.message.content!)).toEqual({ city: 'Paris' });
    expect(answer.choices[0]!.finish_reason).toBe('stop');
    expect(bedrock.converse()[0]!.body.toolConfig).toMatchObject({ toolChoice: { tool: { name: 'json_response' } } });
  });

  it('the Responses API through the chat translation, streamed too', async () => {
    bedrock.script({ kind: 'message', content: [{ text: 'Paris is the capital.' }], usage: { inputTokens: 8, outputTokens: 5 } });
    const response = await gw.client().responses.create({ model: 'claude', instructions: 'Be brief.', input: 'Capital of France?' });
    expect(response.output_text).toBe('Paris is the capital.');
    expect(response.usage).toMatchObject({ input_tokens: 8, output_tokens: 5 });
    bedrock.script({ kind: 'message', content: [{ text: 'Rome, of Italy.' }] });
    const final = await gw.client().responses.stream({ model: 'claude', input: 'And Italy?' }).finalResponse();
    expect(final.output_text).toBe('Rome, of Italy.');
  });
});

describe('bedrock: embeddings through InvokeModel', () => {
  it('Titan: one call per text, in order, each signed; the SDK\'s base64 decodes to the vectors; usage from the token count header', async () => {
    const answer = await gw.client().embeddings.create({ model: 'titan', input: ['alpha', 'beta', 'gamma'], dimensions: 256 });
    expect(answer.data.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(answer.data.map((d) => d.embedding)).toEqual(['alpha', 'beta', 'gamma'].map((t) => vectorOf(t, 256)));
    expect(answer.model).toBe('amazon.titan-embed-text-v2:0');
    expect(answer.usage).toEqual({ prompt_tokens: 5, total_tokens: 5 });
    expect(bedrock.invocations().map((r) => r.body)).toEqual([
      { inputText: 'alpha', dimensions: 256 },
      { inputText: 'beta', dimensions: 256 },
      { inputText: 'gamma', dimensions: 256 },
    ]);
    expect(bedrock.invocations()[0]!.path).toBe(`/model/${encodeURIComponent('amazon.titan-embed-text-v2:0')}/invoke`);
    expect(bedrock.refused).toEqual([]);
  });

  it('Cohere: one call for the list, input_type search_document unless the caller sends its own; floats when asked for', async () => {
    const answer = await gw.client().embeddings.create({ model: 'cohere', input: ['a', 'b'] });
    expect(answer.data.map((d) => d.embedding)).toEqual([vectorOf('a', 1024), vectorOf('b', 1024)]);
    expect(bedrock.invocations()[0]!.body).toEqual({ texts: ['a', 'b'], input_type: 'search_document' });
    const res = await gw.fetch('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: 'cohere', input: 'q', input_type: 'search_query', encoding_format: 'float' }) });
    expect(res.status).toBe(200);
    const floats = (await res.json()) as { data: Array<{ embedding: number[] }>; usage: { prompt_tokens: number } };
    expect(floats.data[0]!.embedding).toEqual(vectorOf('q', 1024));
    expect(floats.usage.prompt_tokens).toBe(1);
    expect(bedrock.invocations()[1]!.body).toEqual({ texts: ['q'], input_type: 'search_query' });
  });

  it('embeddings on a chat model, and chat on an embedding model, are 400 unsupported_operation', async () => {
    await expect(gw.client().embeddings.create({ model: 'claude', input: 'x' })).rejects.toMatchObject({ status: 400, code: 'unsupported_operation' });
    await expect(gw.client().chat.completions.create({ model: 'titan', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 400, code: 'unsupported_operation' });
    expect(bedrock.received).toHaveLength(0);
  });
});

describe('bedrock: what is refused, and errors', () => {
  it('an OpenAI parameter Converse cannot honour is 400 unsupported_parameter naming it, or dropped with drop_params', async () => {
    const refused = await gw.client().chat.completions.create({ model: 'claude', n: 2, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 400, code: 'unsupported_parameter' });
    expect((refused as APIError).message).toContain('n:');
    expect(bedrock.received).toHaveLength(0);
    const dropped = await gw.client().chat.completions.create({ model: 'claude-drop', n: 2, logit_bias: { '1': 2 }, seed: 3, messages: [{ role: 'user', content: 'x' }] });
    expect(dropped.choices[0]!.message.content).toBe('Hello! You said: x');
    expect(bedrock.converse()[0]!.body).toEqual({ messages: [{ role: 'user', content: [{ text: 'x' }] }] });
  });

  it('a ValidationException (400) and a ResourceNotFoundException (404) are the compatible error object with their status, message and Bedrock\'s name as code', async () => {
    bedrock.script({ kind: 'error', status: 400, type: 'ValidationException', message: 'The model returned the following errors: max_tokens too large' }, { kind: 'error', status: 404, type: 'ResourceNotFoundException', message: 'Could not resolve the foundation model.' });
    const bad = (await gw.client().chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(bad.status).toBe(400);
    expect(bad.error).toEqual({ message: 'The model returned the following errors: max_tokens too large', type: 'invalid_request_error', param: null, code: 'ValidationException' });
    const missing = (await gw.client().chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(missing).toMatchObject({ status: 404, code: 'ResourceNotFoundException' });
  });

  it('ThrottlingException (429) on every attempt: 429 with retry-after and Bedrock\'s message', async () => {
    const limited = { kind: 'error', status: 429, type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.', headers: { 'retry-after': '3' } } as const;
    bedrock.script(limited, limited, limited);
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody('claude') });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(await res.json()).toEqual({ error: { message: 'Too many requests, please wait before trying again.', type: 'rate_limit_error', param: null, code: 'ThrottlingException' } });
  });

  it("ServiceUnavailableException (503) and ModelTimeoutException (408) on every attempt: 502 with the gateway's message", async () => {
    const down = { kind: 'error', status: 503, type: 'ServiceUnavailableException', message: 'internal-detail-xyz' } as const;
    bedrock.script(down, { kind: 'error', status: 408, type: 'ModelTimeoutException', message: 'internal-detail-xyz' }, down);
    const error = (await gw.client().chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(error.message).not.toContain('internal-detail-xyz');
    expect(bedrock.converse()).toHaveLength(3);
  });

  it('a signature the fake rejects (wrong secret): 502 upstream_auth_failed at once, never a hang; no secret, session token, API key or signature in any log or answer', async () => {
    const started = performance.now();
    const error = (await gw.client().chat.completions.create({ model: 'claude-wrong-secret', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(performance.now() - started).toBeLessThan(MARGIN_MS);
    expect(error).toMatchObject({ status: 502, code: 'upstream_auth_failed' });
    expect(error.message).not.toMatch(/signature|secret/i);
    expect(bedrock.refused.length).toBeGreaterThan(0);
    expect(bedrock.refused.every((r) => r.startsWith('InvalidSignatureException: The request signature we calculated does not match'))).toBe(true);
    // Calls that were signed rightly too, so that their signatures are in the logs if anything logs them.
    await gw.client().chat.completions.create({ model: 'claude-env', messages: [{ role: 'user', content: 'x' }] });
    await gw.client().chat.completions.create({ model: 'claude-apikey', messages: [{ role: 'user', content: 'x' }] });
    const signatures = bedrock.received.map((r) => /Signature=([0-9a-f]{64})/.exec(String(r.headers.authorization))?.[1]).filter((s): s is string => s !== undefined);
    expect(signatures.length).toBeGreaterThan(1);
    await expectNoKeyLeak(gw, [TEST_KEY, UPSTREAM_KEY, AWS_KEYS.secretAccessKey, AWS_SESSION_KEYS.secretAccessKey, AWS_SESSION_KEYS.sessionToken, BEDROCK_API_KEY, WRONG_SECRET, ...signatures]);
  });

  it('a clock 20 minutes off: AWS says "Signature expired", the caller gets 502 upstream_auth_failed, never a hang', async () => {
    bedrock.skewMs = 20 * 60_000;
    const started = performance.now();
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody('claude', { stream: true }) });
    expect(performance.now() - started).toBeLessThan(MARGIN_MS);
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_auth_failed');
    expect(bedrock.refused.length).toBeGreaterThan(0);
    expect(bedrock.refused.every((r) => r.startsWith('InvalidSignatureException: Signature expired'))).toBe(true);
  });
});

describe('bedrock: exception frames and the commit point', () => {
  it('an exception frame before any content is retried: on a mixed alias the openai deployment serves one clean stream', async () => {
    bedrock.script({ kind: 'exception', name: 'modelStreamErrorException', message: 'Model stream error', afterContent: false });
    const { data: stream, response } = await gw.client().chat.completions.create({ model: 'mixed', stream: true, messages: [{ role: 'user', content: 'fall back' }] }).withResponse();
    const chunks = await collect(stream);
    expect(response.headers.get('x-switchyard-deployment')).toBe('mixed-openai');
    expect(response.headers.get('x-switchyard-attempts')).toBe('2');
    expect(chunks.every((c) => c.id === 'chatcmpl-fake-1')).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('tok0 tok1 tok2 ');
    expect(bedrock.converse()).toHaveLength(1);
    expect(upstream.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
  });

  it('a throttlingException frame before content on every attempt: 429 with Bedrock\'s message, as the same error outside a stream', async () => {
    const throttled = { kind: 'exception', name: 'throttlingException', message: 'Too many tokens, please wait before trying again.', afterContent: false } as const;
    bedrock.script(throttled, throttled, throttled);
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody('claude', { stream: true }) });
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ error: { message: 'Too many tokens, please wait before trying again.', type: 'rate_limit_error', param: null, code: 'ThrottlingException' } });
    expect(bedrock.converse()).toHaveLength(3);
  });

  it('an exception frame after content is one SSE error event: the client keeps the text, then the SDK throws', async () => {
    bedrock.script({ kind: 'exception', name: 'internalServerException', message: 'internal-detail-xyz', afterContent: true });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody('claude', { stream: true }) });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = sseData(text);
    expect(events.slice(0, 2).map((e) => (JSON.parse(e) as Chunk).choices[0]!.delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'Partly' }]);
    expect(events).toHaveLength(3);
    expect((JSON.parse(events[2]!) as { error: unknown }).error).toMatchObject({ code: 'upstream_error', type: 'gateway_error' });
    expect(text).not.toContain('[DONE]');
    expect(text).not.toContain('internal-detail-xyz');
    bedrock.script({ kind: 'exception', name: 'throttlingException', message: 'slow down', afterContent: true });
    const stream = await gw.client().chat.completions.create({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'x' }] });
    await expect(collect(stream)).rejects.toBeInstanceOf(APIError);
  });

  it('a stream cut short before messageStop, after content, ends with one SSE error event (upstream_reset)', async () => {
    bedrock.script({ kind: 'cut-short' });
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody('claude', { stream: true }) });
    expect((JSON.parse(sseData(await res.text()).at(-1)!) as { error: { code: string } }).error.code).toBe('upstream_reset');
  });

  it('a stream that goes silent after messageStart is cut by idle_timeout, each attempt aborted, then 502 upstream_idle_timeout', async () => {
    bedrock.script({ kind: 'hang' }, { kind: 'hang' }, { kind: 'hang' });
    const started = performance.now();
    const error = (await gw.client().chat.completions.create({ model: 'claude-idle', stream: true, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as APIError;
    expect(error).toMatchObject({ status: 502, code: 'upstream_idle_timeout' });
    // Three attempts (num_retries 2), each cut idle_timeout (0.3 s) after its last event.
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * 300 - EARLY_MS);
    expect(performance.now() - started).toBeLessThan(3 * 300 + MARGIN_MS);
    await bedrock.waitFor(() => bedrock.converse().length === 3 && bedrock.converse().every((r) => r.aborted), 3000);
  });

  it('a client that leaves mid-stream aborts the upstream request', async () => {
    bedrock.script({ kind: 'message', content: [{ text: 'word '.repeat(200) }], intervalMs: 20 });
    expect(await leaveMidStream(gw.client(), 'claude', 3)).toBe(3);
    await bedrock.waitFor(() => bedrock.converse()[0]!.aborted, 3000);
    expect(bedrock.converse()[0]!.done).toBe(false);
  });

  it('each event is translated as it arrives: the first content reaches the client before the fake sends its last frame', async () => {
    bedrock.script({ kind: 'message', content: [{ text: 'one two three four five' }], intervalMs: 150 });
    const stream = await gw.client().chat.completions.create({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'slowly' }] });
    let firstContentAt = 0;
    for await (const chunk of stream) if (firstContentAt === 0 && chunk.choices[0]?.delta.content) firstContentAt = performance.now();
    expect(firstContentAt).toBeGreaterThan(0);
    // 9 frames 150 ms apart: the last is written ~1.2 s after the first content.
    expect(bedrock.lastFrameAt - firstContentAt).toBeGreaterThan(600);
  });

  it('any split of the event-stream bytes into TCP chunks gives the client the same stream', async () => {
    const reply: BedrockReply = {
      kind: 'message',
      content: [{ text: 'Splits change nothing.' }, { toolUse: { toolUseId: 'tooluse_s', name: 'get_weather', input: { city: 'Bergen' } } }],
      usage: { inputTokens: 9, outputTokens: 4 },
    };
    const request = chatBody('claude', { stream: true, stream_options: { include_usage: true }, tools: [WEATHER] });
    /** The answer's events with the per-request parts (id, created) taken out. */
    const normalised = (text: string) => text.replace(/"id":"[^"]*","object"/g, '"id":"X","object"').replace(/"created":\d+/g, '"created":0');
    bedrock.script(reply);
    const whole = normalised(await (await gw.fetch('/v1/chat/completions', { method: 'POST', body: request })).text());
    expect(whole).toContain('[DONE]');
    const length = streamFrames(reply).reduce((n, f) => n + f.length, 0);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: length - 1 }), { minLength: 1, maxLength: 25 }), async (cuts) => {
        bedrock.script({ ...reply, cuts });
        const text = normalised(await (await gw.fetch('/v1/chat/completions', { method: 'POST', body: request })).text());
        expect(text).toBe(whole);
      }),
      { numRuns: 12 },
    );
    expect(bedrock.refused).toEqual([]);
  });
});
