/**
 * POST /v1/messages translated through chat to the native providers that do
 * not speak Messages (issue 35, Tests: "a two-turn tool round trip through
 * each translating provider"; CONTRACT.md, Anthropic Messages API
 * (inbound): "Anthropic-only fields never cause an error on another
 * provider"): the official `@anthropic-ai/sdk` through the real gateway
 * against the Gemini fake (Gemini 3's thought signatures, which the fake
 * checks, ride inside the Anthropic tool id), Bedrock Converse (SigV4, which
 * the fake verifies) and Azure OpenAI, each fake proved by its own SDK.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AZURE_KEY, startAzureUpstream, type AzureUpstream } from './support/azure-upstream.js';
import { AWS_KEYS, BEDROCK_ANTHROPIC_VERSION, startBedrockUpstream, type BedrockUpstream } from './support/bedrock-upstream.js';
import { GEMINI_KEY, startGeminiUpstream, type GeminiUpstream } from './support/gemini-upstream.js';
import { TEST_KEY, startTestGateway, type TestGateway } from './support/gateway.js';

const TOOL_ID = /^[a-zA-Z0-9_-]+$/;
const CONVERSE_MODEL = 'amazon.nova-lite-v1:0';
const CLAUDE_MODEL = 'us.anthropic.claude-sonnet-4-v1:0';
type ApiError = InstanceType<typeof Anthropic.APIError>;

/** A streamed Messages call read raw: the status and the SSE text as the client got it. */
async function rawStream(model: string, body: Record<string, unknown> = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  return { status: res.status, text: await res.text() };
}

let gemini: GeminiUpstream;
let bedrock: BedrockUpstream;
let azure: AzureUpstream;
let gw: TestGateway;
let client: Anthropic;

beforeAll(async () => {
  [gemini, bedrock, azure] = await Promise.all([startGeminiUpstream(), startBedrockUpstream(), startAzureUpstream()]);
  gw = await startTestGateway({
    env: { BEDROCK_SECRET: AWS_KEYS.secretAccessKey },
    yaml: `
model_list:
  - model_name: flash
    params: { model: gemini/gemini-2.5-flash, api_base: ${gemini.url}, api_key: ${GEMINI_KEY} }
  - model_name: pro3
    params: { model: gemini/gemini-3-pro-preview, api_base: ${gemini.url}, api_key: ${GEMINI_KEY} }
  - model_name: nova
    params: { model: bedrock/${CONVERSE_MODEL}, api_base: ${bedrock.url}, aws_access_key_id: ${AWS_KEYS.accessKeyId}, aws_secret_access_key: os.environ/BEDROCK_SECRET, aws_region_name: us-east-1 }
  - model_name: azure-gpt
    params: { model: azure/gpt-4o-deploy, api_base: ${azure.url}, api_key: ${AZURE_KEY} }
  - model_name: bedrock-claude
    params: { model: bedrock/${CLAUDE_MODEL}, api_base: ${bedrock.url}, aws_access_key_id: ${AWS_KEYS.accessKeyId}, aws_secret_access_key: os.environ/BEDROCK_SECRET, aws_region_name: us-east-1 }
router_settings: { num_retries: 0 }
`,
  });
  client = new Anthropic({ baseURL: gw.url, apiKey: TEST_KEY, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([gemini?.close(), bedrock?.close(), azure?.close()]);
});
beforeEach(() => {
  gemini.reset();
  bedrock.reset();
  azure.reset();
});

const weather: Anthropic.Tool = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const noParallel: Anthropic.ToolChoice = { type: 'auto', disable_parallel_tool_use: true };

describe('disable_parallel_tool_use, an Anthropic-only hint, is never an error', () => {
  it('gemini and Bedrock Converse (no equivalent, no drop_params) drop it; azure gets parallel_tool_calls: false', async () => {
    for (const model of ['flash', 'nova']) {
      const message = await client.messages.create({ model, max_tokens: 64, tools: [weather], tool_choice: noParallel, messages: [{ role: 'user', content: 'hello' }] });
      expect(message.content).toEqual([{ type: 'text', text: 'Hello! You said: hello' }]);
    }
    expect(gemini.generations()).toHaveLength(1);
    expect(gemini.generations()[0]!.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(bedrock.converse()).toHaveLength(1);
    expect(bedrock.converse()[0]!.body.toolConfig).toMatchObject({ toolChoice: { auto: {} } });
    azure.script({ kind: 'chat', content: 'Fine.' });
    const streamed = await client.messages.stream({ model: 'azure-gpt', max_tokens: 64, tools: [weather], tool_choice: noParallel, messages: [{ role: 'user', content: 'hello' }] }).finalMessage();
    expect(streamed.content).toEqual([{ type: 'text', text: 'Fine.' }]);
    expect(azure.calls().at(-1)!.body).toMatchObject({ parallel_tool_calls: false, tool_choice: 'auto' });
  });

  it("a chat caller's own parallel_tool_calls: false is still refused by gemini (400 unsupported_parameter)", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` },
      body: JSON.stringify({ model: 'flash', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }], parallel_tool_calls: false }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('parallel_tool_calls');
    expect(gemini.generations()).toHaveLength(0);
  });
});

describe("thinking becomes Gemini's thinkingConfig; its thoughts come back as thinking blocks", () => {
  const thoughts = { kind: 'content', candidates: [{ parts: [{ text: 'Lining up the tenths: 9.9 wins.', thought: true }, { text: '9.9 is larger.' }] }], usage: { promptTokenCount: 12, candidatesTokenCount: 5, thoughtsTokenCount: 40 } } as const;
  const question: Anthropic.MessageParam[] = [{ role: 'user', content: 'Which is larger, 9.11 or 9.9?' }];

  it('a reply: the fake receives the budget with includeThoughts; the thought parts are a thinking block before the text', async () => {
    gemini.script(thoughts);
    const message = await client.messages.create({ model: 'flash', max_tokens: 8000, thinking: { type: 'enabled', budget_tokens: 4000 }, messages: question });
    expect(gemini.generations()).toHaveLength(1);
    expect(gemini.generations()[0]!.body.generationConfig).toEqual({ maxOutputTokens: 8000, thinkingConfig: { thinkingBudget: 4000, includeThoughts: true } });
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'Lining up the tenths: 9.9 wins.', signature: '' },
      { type: 'text', text: '9.9 is larger.' },
    ]);
    expect(message.usage).toMatchObject({ input_tokens: 12, output_tokens: 45 });
  });

  it('a stream: thinking_delta events in a thinking block, then the text block; the SDK assembles both', async () => {
    gemini.script(thoughts);
    const stream = client.messages.stream({ model: 'flash', max_tokens: 8000, thinking: { type: 'enabled', budget_tokens: 2048 }, messages: question });
    const thinkingDeltas: string[] = [];
    stream.on('thinking', (delta) => thinkingDeltas.push(delta));
    const message = await stream.finalMessage();
    expect(gemini.generations()[0]!.body.generationConfig).toMatchObject({ thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } });
    expect(thinkingDeltas.join('')).toBe('Lining up the tenths: 9.9 wins.');
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(message.content[0]).toEqual({ type: 'thinking', thinking: 'Lining up the tenths: 9.9 wins.', signature: '' });
    expect(message.content[1]).toMatchObject({ type: 'text', text: '9.9 is larger.' });
  });

  it("Claude Code's largest budget (31999, over 2.5 Flash's 24576) is clamped, so Gemini (the fake checks the model's range) takes it", async () => {
    const message = await client.messages.stream({ model: 'flash', max_tokens: 32000, thinking: { type: 'enabled', budget_tokens: 31999 }, messages: question }).finalMessage();
    expect(message.content).toMatchObject([{ type: 'text', text: 'Hello! You said: Which is larger, 9.11 or 9.9?' }]);
    expect(gemini.generations()[0]!.body.generationConfig).toEqual({ maxOutputTokens: 32000, thinkingConfig: { thinkingBudget: 24576, includeThoughts: true } });
  });

  it('adaptive asks for the thoughts with no budget; disabled, and display omitted, send no thinkingConfig and show no thinking block', async () => {
    gemini.script(thoughts, thoughts, thoughts);
    const adaptive = await client.messages.create({ model: 'pro3', max_tokens: 1024, thinking: { type: 'adaptive' }, messages: question });
    expect(adaptive.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    const disabled = await client.messages.create({ model: 'flash', max_tokens: 1024, thinking: { type: 'disabled' }, messages: question });
    const omitted = await client.messages.create({ model: 'flash', max_tokens: 1024, thinking: { type: 'adaptive', display: 'omitted' }, messages: question });
    for (const message of [disabled, omitted]) expect(message.content).toEqual([{ type: 'text', text: '9.9 is larger.' }]);
    expect(gemini.generations().map((g) => g.body.generationConfig)).toEqual([{ maxOutputTokens: 1024, thinkingConfig: { includeThoughts: true } }, { maxOutputTokens: 1024 }, { maxOutputTokens: 1024 }]);
  });

  it('Bedrock Converse and azure have no budget knob the gateway can rely on: thinking is dropped, never an error, and nothing of it is sent', async () => {
    const converse = await client.messages.create({ model: 'nova', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 2048 }, messages: question });
    expect(converse.content[0]).toMatchObject({ type: 'text' });
    const sent = bedrock.converse()[0]!.body;
    expect(sent).not.toHaveProperty('additionalModelRequestFields');
    expect(JSON.stringify(sent)).not.toContain('thinking');
    azure.script({ kind: 'chat', content: 'Fine.' });
    const viaAzure = await client.messages.create({ model: 'azure-gpt', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 2048 }, messages: question });
    expect(viaAzure.content).toEqual([{ type: 'text', text: 'Fine.' }]);
    const body = azure.calls().at(-1)!.body;
    expect(body).not.toHaveProperty('thinking');
    expect(body).not.toHaveProperty('reasoning_effort');
  });
});

describe('a two-turn tool round trip through each translating provider', () => {
  it("gemini 3: the signed function call id is a valid Anthropic tool id; sent back as tool_use_id it gives Gemini its thought signature (which the fake checks)", async () => {
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'Let me look.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] }] });
    const first = await client.messages.stream({ model: 'pro3', max_tokens: 64, tools: [weather], tool_choice: noParallel, messages: [{ role: 'user', content: 'Weather in Paris' }] }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b) => b.type === 'tool_use')!;
    expect(use).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    expect(use.id).toMatch(TOOL_ID);
    expect(use.id.startsWith('toolu_sy_')).toBe(true);
    const signature = Buffer.from(use.id.slice('toolu_sy_'.length), 'base64url').toString('utf8').split('__thought__')[1];
    expect(signature).toMatch(/^[A-Za-z0-9+/]+=*$/);
    gemini.script({ kind: 'content', candidates: [{ parts: [{ text: 'It is 18 C in Paris.' }] }] });
    const second = await client.messages.create({
      model: 'pro3',
      max_tokens: 64,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18 C' }] },
      ],
    });
    expect(second).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'It is 18 C in Paris.' }] });
    expect(gemini.generations()[1]!.body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris' }] },
      { role: 'model', parts: [{ text: 'Let me look.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: signature }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: '18 C' } } }] },
    ]);
  });

  it('Bedrock Converse (SigV4): the toolUseId is the tool id as it is; the tool_result answers it in a toolResult block', async () => {
    bedrock.script({ kind: 'message', content: [{ toolUse: { toolUseId: 'tooluse_Q7vTn2Lm', name: 'get_weather', input: { city: 'Rome' } } }] });
    const first = await client.messages.create({ model: 'nova', max_tokens: 64, tools: [weather], messages: [{ role: 'user', content: 'Weather in Rome' }] });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([{ type: 'tool_use', id: 'tooluse_Q7vTn2Lm', name: 'get_weather', input: { city: 'Rome' } }]);
    bedrock.script({ kind: 'message', content: [{ text: 'Rome: 24 C.' }] });
    const second = await client.messages
      .stream({
        model: 'nova',
        max_tokens: 64,
        tools: [weather],
        messages: [
          { role: 'user', content: 'Weather in Rome' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tooluse_Q7vTn2Lm', content: [{ type: 'text', text: '24 C' }] }] },
        ],
      })
      .finalMessage();
    expect(second.content).toEqual([{ type: 'text', text: 'Rome: 24 C.' }]);
    const sent = bedrock.converse()[1]!;
    expect(sent.modelId).toBe(CONVERSE_MODEL);
    expect(sent.path).toBe(`/model/${encodeURIComponent(CONVERSE_MODEL)}/converse-stream`);
    expect((sent.body.messages as unknown[]).slice(1)).toEqual([
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_Q7vTn2Lm', name: 'get_weather', input: { city: 'Rome' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_Q7vTn2Lm', content: [{ text: '24 C' }] } }] },
    ]);
    expect(bedrock.refused).toEqual([]);
  });

  it('azure: a streamed tool call (content filter annotations and all) and its result as a tool message', async () => {
    azure.script({ kind: 'chat', content: 'Checking.', toolCalls: [{ id: 'call_oslo', name: 'get_weather', arguments: '{"city":"Oslo"}' }], asyncFilter: true, intervalMs: 2 });
    const first = await client.messages.stream({ model: 'azure-gpt', max_tokens: 64, tools: [weather], messages: [{ role: 'user', content: 'Weather in Oslo' }] }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toHaveLength(2);
    expect(first.content).toMatchObject([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'call_oslo', name: 'get_weather', input: { city: 'Oslo' } },
    ]);
    azure.script({ kind: 'chat', content: 'Oslo: 3 C.' });
    const second = await client.messages.create({
      model: 'azure-gpt',
      max_tokens: 64,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Oslo' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_oslo', content: '3 C' }] },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'Oslo: 3 C.' }]);
    const sent = azure.calls().at(-1)!;
    expect(sent.path).toBe('/openai/deployments/gpt-4o-deploy/chat/completions');
    expect((sent.body.messages as unknown[]).slice(1)).toEqual([
      { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'call_oslo', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_oslo', content: '3 C' },
    ]);
  });
});

describe('passed through to Bedrock\'s Claude (InvokeModel, SigV4 verified by the fake)', () => {
  it('a reply: the InvokeModel body is the caller\'s without model and stream, with anthropic_version; the Message as Bedrock sent it', async () => {
    const message = await client.messages.create({ model: 'bedrock-claude', max_tokens: 32, system: 'Be brief.', top_k: 3, messages: [{ role: 'user', content: 'Hello' }] });
    expect(message).toEqual({ id: expect.stringMatching(/^msg_bdrk_/), type: 'message', role: 'assistant', model: 'claude-sonnet-4', content: [{ type: 'text', text: 'Hello! You said: Hello' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 6 } });
    const [sent] = bedrock.invocations();
    expect(sent!.path).toBe(`/model/${encodeURIComponent(CLAUDE_MODEL)}/invoke`);
    expect(sent!.modelId).toBe(CLAUDE_MODEL);
    expect(sent!.raw.toString()).toBe(JSON.stringify({ anthropic_version: BEDROCK_ANTHROPIC_VERSION, max_tokens: 32, system: 'Be brief.', top_k: 3, messages: [{ role: 'user', content: 'Hello' }] }));
    expect(String(sent!.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}$/);
    expect(sent!.headers['anthropic-version']).toBeUndefined();
    expect(bedrock.refused).toEqual([]);
  });

  it('a stream with a tool_use: finalMessage has its whole input; every event goes on as Bedrock\'s chunk carried it (invocation metrics included)', async () => {
    bedrock.scriptClaude({ kind: 'message', content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_bdrk_01', name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } }], usage: { input_tokens: 30, output_tokens: 20 }, intervalMs: 1 });
    const final = await client.messages.stream({ model: 'bedrock-claude', max_tokens: 64, tools: [weather], messages: [{ role: 'user', content: 'Weather in Paris' }] }).finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'toolu_bdrk_01', name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } },
    ]);
    expect(final.usage).toMatchObject({ input_tokens: 30, output_tokens: 20 });
    const [sent] = bedrock.invocations();
    expect(sent!.path).toBe(`/model/${encodeURIComponent(CLAUDE_MODEL)}/invoke-with-response-stream`);
    expect(sent!.body).not.toHaveProperty('stream');
    expect(sent!.body).not.toHaveProperty('model');

    bedrock.scriptClaude({ kind: 'message', content: [{ type: 'text', text: 'Fine.' }] });
    const { status, text } = await rawStream('bedrock-claude');
    expect(status).toBe(200);
    const events = [...text.matchAll(/^event: (\S+)\ndata: (.*)$/gm)].map((m) => ({ name: m[1], data: JSON.parse(m[2]!) as Record<string, unknown> }));
    expect(events.map((e) => e.name)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    for (const e of events) expect(e.data.type).toBe(e.name);
    expect(events.at(-1)!.data).toEqual({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 12, outputTokenCount: 6, invocationLatency: 321, firstByteLatency: 123 } });
  });

  it('betas arrive as the anthropic_beta list (from the SDK\'s betas and from several anthropic-beta headers)', async () => {
    const message = await client.beta.messages.create({ model: 'bedrock-claude', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }], betas: ['interleaved-thinking-2025-05-14', 'context-1m-2025-08-07'] });
    expect(message.content).toEqual([{ type: 'text', text: 'Hello! You said: hi' }]);
    expect(bedrock.invocations()[0]!.body.anthropic_beta).toEqual(['interleaved-thinking-2025-05-14', 'context-1m-2025-08-07']);
    const headers = new Headers({ 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' });
    headers.append('anthropic-beta', 'token-efficient-tools-2025-02-19, fine-grained-tool-streaming-2025-05-14');
    headers.append('anthropic-beta', 'output-128k-2025-02-19');
    const res = await fetch(`${gw.url}/v1/messages?beta=true`, { method: 'POST', headers, body: JSON.stringify({ model: 'bedrock-claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }) });
    expect(res.status).toBe(200);
    expect(bedrock.invocations()[1]!.body.anthropic_beta).toEqual(['token-efficient-tools-2025-02-19', 'fine-grained-tool-streaming-2025-05-14', 'output-128k-2025-02-19']);
    expect(bedrock.refused).toEqual([]);
  });

  it("errors: Bedrock's ValidationException is a 400 BadRequestError in Anthropic's shape with its message; an exception after content is one event: error, the last", async () => {
    bedrock.scriptClaude({ kind: 'error', status: 400, type: 'ValidationException', message: 'messages: roles must alternate' });
    const bad = await client.messages.create({ model: 'bedrock-claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as ApiError).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('messages: roles must alternate') } });

    bedrock.scriptClaude({ kind: 'exception', name: 'modelStreamErrorException', message: 'Model stream error', afterContent: true });
    const { status, text } = await rawStream('bedrock-claude');
    expect(status).toBe(200);
    const names = [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    expect(names.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
    expect(names.filter((n) => n === 'error')).toHaveLength(1);
    expect(names.at(-1)).toBe('error');
    expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"\w+","message":"[^"]*"\}\}\n\n$/);
    await expect(
      (async () => {
        bedrock.scriptClaude({ kind: 'exception', name: 'modelStreamErrorException', message: 'Model stream error', afterContent: true });
        await client.messages.stream({ model: 'bedrock-claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
      })(),
    ).rejects.toBeInstanceOf(Anthropic.APIError);
  });
});
