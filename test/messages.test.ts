/**
 * POST /v1/messages and /v1/messages/count_tokens end to end (issue 35;
 * CONTRACT.md, Anthropic Messages API (inbound)): the official
 * `@anthropic-ai/sdk` through the real gateway (two worker threads), against
 * the fake Anthropic API (passed through: test/support/anthropic-upstream.ts)
 * and the scripted OpenAI-compatible fake (translated through chat:
 * test/support/responses-upstream.ts), each proved by its own SDK.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ANTHROPIC_KEY, startAnthropicUpstream, type AnthropicUpstream } from './support/anthropic-upstream.js';
import { startResponsesUpstream, type ResponsesUpstream } from './support/responses-upstream.js';
import { TEST_KEY, UPSTREAM_KEY, startTestGateway, type TestGateway } from './support/gateway.js';

let anthropic: AnthropicUpstream;
let openai: ResponsesUpstream;
let gw: TestGateway;
let client: Anthropic;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream();
  openai = await startResponsesUpstream();
  gw = await startTestGateway({
    yaml: `
model_list:
  - model_name: claude
    params: { model: anthropic/claude-fake-1, api_base: ${anthropic.url}, api_key: ${ANTHROPIC_KEY} }
  - model_name: gpt
    params: { model: openai/gpt-fake, api_base: ${openai.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: mock-chat
    params: { model: mock/chat-small, mock_stream_chunks: 5 }
  - model_name: claude-then-gpt
    params: { model: anthropic/claude-fake-1, api_base: ${anthropic.url}, api_key: ${ANTHROPIC_KEY}, order: 1 }
    model_info: { id: first-claude }
  - model_name: claude-then-gpt
    params: { model: openai/gpt-fake, api_base: ${openai.url}, api_key: ${UPSTREAM_KEY}, order: 2 }
    model_info: { id: then-gpt }
router_settings: { num_retries: 2, retry_after: 0, stream_commit_timeout: 30 }
`,
  });
  client = new Anthropic({ baseURL: gw.url, apiKey: TEST_KEY, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.close();
  await anthropic?.close();
  await openai?.close();
});
beforeEach(() => {
  anthropic.reset();
  openai.reset();
});

const weather: Anthropic.Tool = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

describe('translated through chat (an OpenAI-compatible deployment)', () => {
  it('messages.create: a Message with text, usage and the upstream model; the chat request the upstream got', async () => {
    const message = await client.messages.create({ model: 'gpt', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'hello gateway' }], metadata: { user_id: 'u-1' } });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'echo: hello gateway' }], stop_reason: 'end_turn', stop_sequence: null });
    expect(message.id).toMatch(/^msg_[a-zA-Z0-9_-]+$/);
    const sent = openai.requests.at(-1)!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.json).toMatchObject({ model: 'gpt-fake', max_completion_tokens: 64, user: 'u-1', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello gateway' }] });
  });

  it('a two-turn tool round trip, streamed: input_json_delta fragments give the tool input; the tool_result goes back as a tool message', async () => {
    const first = await client.messages.stream({ model: 'gpt', max_tokens: 64, tools: [weather], messages: [{ role: 'user', content: 'Weather in Paris' }] }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b) => b.type === 'tool_use')!;
    expect(use).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    expect(use.id).toMatch(/^[a-zA-Z0-9_-]+$/);
    const second = await client.messages.create({
      model: 'gpt',
      max_tokens: 64,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18 C' }] },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'The tool said: 18 C' }]);
    const sent = openai.requests.at(-1)!.json;
    expect((sent.messages as unknown[]).slice(-2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: expect.any(String), content: '18 C' },
    ]);
  });

  it('thinking, cache_control, top_k and betas are dropped, never an error', async () => {
    const message = await client.beta.messages.create({
      model: 'gpt',
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      top_k: 5,
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi there', cache_control: { type: 'ephemeral' } }] }],
      betas: ['interleaved-thinking-2025-05-14'],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'echo: hi there' }]);
    const sent = openai.requests.at(-1)!.json;
    expect(sent).not.toHaveProperty('thinking');
    expect(sent).not.toHaveProperty('top_k');
    // An openai upstream gets no reasoning_effort for it either: a model without reasoning refuses it (docs/PROVIDERS.md, Thinking).
    expect(sent).not.toHaveProperty('reasoning_effort');
  });
});

describe('passed through to an anthropic deployment', () => {
  it('the body as sent with only model replaced, anthropic-version and anthropic-beta byte for byte, the answer as sent', async () => {
    const body = { model: 'claude', max_tokens: 32, messages: [{ role: 'user', content: 'Hello' }], top_k: 3 };
    const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'prompt-caching-2024-07-31,  token-efficient-tools-2025-02-19' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    const sent = anthropic.messages().at(-1)!;
    expect(sent.raw.toString()).toBe(JSON.stringify({ ...body, model: 'claude-fake-1' }));
    expect(sent.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31,  token-efficient-tools-2025-02-19');
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(await res.json()).toEqual({ id: 'msg_fake_1', type: 'message', role: 'assistant', model: 'claude-fake-1', content: [{ type: 'text', text: 'Hello! You said: Hello' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 6 } });
    expect(res.headers.get('x-switchyard-deployment')).toBeTruthy();
  });

  it('messages.stream(...).finalMessage(): the events as sent, a tool_use whose input is whole', async () => {
    anthropic.script({ kind: 'message', content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris' } }] });
    const final = await client.messages.stream({ model: 'claude', max_tokens: 64, tools: [weather], messages: [{ role: 'user', content: 'Weather in Paris' }] }).finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris' } }]);
    expect(final.stop_reason).toBe('tool_use');
  });
});

describe('count_tokens', () => {
  it('an anthropic deployment counts itself (passed through); any other, the local o200k estimate', async () => {
    const local = await client.messages.countTokens({ model: 'gpt', system: 'Be brief.', messages: [{ role: 'user', content: 'Hello, world' }] });
    // o200k: "Be brief." 3 tokens, "Hello, world" 3 tokens; 3 per message and for the system prompt.
    expect(local).toEqual({ input_tokens: 3 + 3 + 3 + 3 });
    expect(anthropic.received).toHaveLength(0);
  });
});

describe('errors, in Anthropic shape with the SDK class for each status', () => {
  it('401 AuthenticationError for a wrong key, x-api-key or bearer; 404 NotFoundError for an unknown model; 400 BadRequestError without max_tokens', async () => {
    const wrong = new Anthropic({ baseURL: gw.url, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(wrong.messages.create({ model: 'gpt', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const bearer = new Anthropic({ baseURL: gw.url, apiKey: null, authToken: TEST_KEY, maxRetries: 0 });
    expect((await bearer.messages.create({ model: 'gpt', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })).type).toBe('message');
    const missing = await client.messages.create({ model: 'no-such-model', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect((missing as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const bad = await client.messages.create({ model: 'gpt', messages: [{ role: 'user', content: 'hi' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: '"max_tokens" is required' } });
  });
});

describe('GET /v1/models with anthropic-version', () => {
  it("Anthropic's list shape: every alias, has_more false, first_id, last_id", async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['claude', 'gpt', 'mock-chat', 'claude-then-gpt']);
    expect(page.data[0]).toEqual({ type: 'model', id: 'claude', display_name: 'claude', created_at: new Date(gw.config.loadedAt).toISOString() });
    const raw = (await (await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' } })).json()) as Record<string, unknown>;
    expect(raw).toMatchObject({ has_more: false, first_id: 'claude', last_id: 'claude-then-gpt' });
    expect(await client.models.retrieve('gpt')).toMatchObject({ type: 'model', id: 'gpt' });
  });
});

/** The raw SSE text of a streamed Messages call, and the answer's headers. */
async function rawStream(model: string, content = 'hello'): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 64, stream: true, messages: [{ role: 'user', content }] }),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}
type ApiError = InstanceType<typeof Anthropic.APIError>;
const eventNames = (sse: string): string[] => [...sse.matchAll(/^event: (\S+)$/gm)].map((m) => m[1] as string);

describe('count_tokens passed through', () => {
  it("an anthropic deployment's own count, anthropic-version with it; the body without max_tokens", async () => {
    const counted = await client.messages.countTokens({ model: 'claude', system: 'Be brief.', messages: [{ role: 'user', content: 'Hello there, world' }] });
    expect(counted).toEqual({ input_tokens: 5 });
    expect(anthropic.counts()).toHaveLength(1);
    expect(anthropic.counts()[0]!.body).toEqual({ model: 'claude-fake-1', system: 'Be brief.', messages: [{ role: 'user', content: 'Hello there, world' }] });
    expect(anthropic.counts()[0]!.headers['anthropic-version']).toBe('2023-06-01');
  });
});

describe('errors from the providers, each status with its SDK class', () => {
  it("passed through: a 400 and a 429 as Anthropic sent them; a 529 as 529 after every attempt; a 500 as 502 api_error", async () => {
    anthropic.script({ kind: 'error', status: 400, type: 'invalid_request_error', message: 'messages: roles must alternate' });
    const bad = await client.messages.create({ model: 'claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as ApiError).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'messages: roles must alternate' } });

    anthropic.script(...[1, 2, 3].map(() => ({ kind: 'error' as const, status: 429, type: 'rate_limit_error', message: 'slow down', headers: { 'retry-after': '0' } })));
    const limited = await client.messages.create({ model: 'claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect((limited as ApiError).error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });

    anthropic.script(...[1, 2, 3].map(() => ({ kind: 'error' as const, status: 529, type: 'overloaded_error', message: 'Overloaded' })));
    const overloaded = await client.messages.create({ model: 'claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(Anthropic.InternalServerError);
    expect((overloaded as ApiError).status).toBe(529);
    expect((overloaded as ApiError).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    expect(anthropic.messages()).toHaveLength(7);

    anthropic.script(...[1, 2, 3].map(() => ({ kind: 'error' as const, status: 500, type: 'api_error', message: 'Internal' })));
    const failed = await client.messages.create({ model: 'claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(Anthropic.InternalServerError);
    expect((failed as ApiError).status).toBe(502);
    expect((failed as ApiError).error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
  });

  it("translated: the provider's 4xx in the compatible envelope becomes Anthropic's shape with its status and message; a refused gateway key is 502 api_error", async () => {
    openai.failNext({ kind: 'status', status: 400, message: 'bad thing' });
    const bad = await client.messages.create({ model: 'gpt', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as ApiError).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'bad thing' }, request_id: expect.any(String) });
    // A lone deployment is tried again after a 403 (num_retries 2): refused three times.
    anthropic.script(...[1, 2, 3].map(() => ({ kind: 'error' as const, status: 403, type: 'permission_error', message: 'no access' })));
    const denied = await client.messages.create({ model: 'claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    // CONTRACT.md: a provider 401/403 rejects the gateway's credentials: 502, api_error.
    expect(denied).toBeInstanceOf(Anthropic.InternalServerError);
    expect((denied as ApiError).error).toMatchObject({ type: 'error', error: { type: 'api_error', message: 'the provider rejected the gateway credentials for this model' } });
  });
});

describe('streams and the commit point', () => {
  it('an event: error before content is retried invisibly on the next deployment: one clean event sequence', async () => {
    anthropic.script({ kind: 'stream-error', type: 'overloaded_error', message: 'Overloaded', afterContent: false });
    const { status, text, headers } = await rawStream('claude-then-gpt', 'retry me');
    expect(status).toBe(200);
    expect(headers.get('x-switchyard-attempts')).toBe('2');
    expect(headers.get('x-switchyard-deployment')).toBe('then-gpt');
    const names = eventNames(text);
    expect(names.filter((n) => n === 'message_start')).toHaveLength(1);
    expect(names).not.toContain('error');
    expect(names.at(-1)).toBe('message_stop');
    expect(text).toContain('echo: retry me'.split(' ')[0]);
  });

  it('a passed-through event: error after content reaches the client once, as Anthropic sent it, the last event', async () => {
    anthropic.script({ kind: 'stream-error', type: 'overloaded_error', message: 'Overloaded', afterContent: true });
    const { status, text } = await rawStream('claude');
    expect(status).toBe(200);
    const names = eventNames(text);
    expect(names.filter((n) => n === 'error')).toHaveLength(1);
    expect(names.at(-1)).toBe('error');
    expect(text).toContain('data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}');
    await expect(client.messages.stream({ model: 'claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).finalMessage()).resolves.toBeDefined();
  });

  it('a translated stream that breaks after content ends with one event: error; the SDK raises it', async () => {
    openai.failNext({ kind: 'break', after: 3 });
    const { status, text } = await rawStream('gpt', 'one two three four five');
    expect(status).toBe(200);
    const names = eventNames(text);
    expect(names[0]).toBe('message_start');
    expect(names.filter((n) => n === 'error')).toHaveLength(1);
    expect(names.at(-1)).toBe('error');
    expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"[^"]+"\}\}\n\n$/);
  });

  it('a stream that never committed gets the HTTP error in Anthropic shape, never a 200', async () => {
    anthropic.script(...[1, 2, 3].map(() => ({ kind: 'stream-error' as const, type: 'api_error', message: 'boom', afterContent: false })));
    const { status, text } = await rawStream('claude');
    expect(status).toBe(502);
    expect(JSON.parse(text)).toMatchObject({ type: 'error', error: { type: 'api_error' }, request_id: expect.any(String) });
  });
});

/**
 * A Claude Code session's requests, written from its documented request shapes (Claude Code's LLM
 * gateway docs: `?beta=true`, `anthropic-beta`, `x-app`, system blocks with cache_control, tools,
 * thinking, metadata.user_id): a quota probe, a title, the main turn with tools and thinking, a
 * tool round trip, and a token count. Each is answered without error, passed through and translated.
 */
const CLAUDE_CODE_BETAS = 'claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14';
function claudeCodeSession(model: string): Array<{ path: string; body: Record<string, unknown> }> {
  const system = [
    { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
    { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.', cache_control: { type: 'ephemeral' } },
  ];
  const tools = [
    { name: 'Bash', description: 'Executes a bash command', input_schema: { type: 'object', properties: { command: { type: 'string' }, description: { type: 'string' } }, required: ['command'], additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' } },
    { name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] }, cache_control: { type: 'ephemeral' } },
  ];
  const metadata = { user_id: 'user_0123abcd_account__session_5f0c1e2a-1111-2222-3333-444455556666' };
  const user = { role: 'user', content: [{ type: 'text', text: '<system-reminder>This is a reminder.</system-reminder>' }, { type: 'text', text: 'list the files in src', cache_control: { type: 'ephemeral' } }] };
  return [
    { path: '/v1/messages?beta=true', body: { model, max_tokens: 1, messages: [{ role: 'user', content: 'quota' }], metadata } },
    { path: '/v1/messages?beta=true', body: { model, max_tokens: 512, temperature: 0, system: [{ type: 'text', text: 'Summarize this coding conversation in under 50 characters.' }], messages: [{ role: 'user', content: 'list the files in src' }], metadata, stream: true } },
    { path: '/v1/messages?beta=true', body: { model, max_tokens: 32000, thinking: { type: 'enabled', budget_tokens: 4000 }, system, tools, metadata, stream: true, messages: [user] } },
    {
      path: '/v1/messages?beta=true',
      body: {
        model,
        max_tokens: 32000,
        system,
        tools,
        metadata,
        stream: true,
        messages: [
          user,
          { role: 'assistant', content: [{ type: 'text', text: "I'll list them." }, { type: 'tool_use', id: 'toolu_01Cc', name: 'Bash', input: { command: 'ls src', description: 'List src' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Cc', content: 'main.ts\nfront' }] },
        ],
      },
    },
    { path: '/v1/messages/count_tokens?beta=true', body: { model, system, tools, messages: [user] } },
  ];
}

describe('a Claude Code session replayed', () => {
  it.each([
    ['passed through to an anthropic deployment', 'claude'],
    ['translated to an OpenAI-compatible deployment', 'gpt'],
  ])('%s: every request answered 200 with its shape', async (_name, model) => {
    for (const { path, body } of claudeCodeSession(model)) {
      const res = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'anthropic-version': '2023-06-01', 'anthropic-beta': CLAUDE_CODE_BETAS, 'x-app': 'cli', 'anthropic-dangerous-direct-browser-access': 'true' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      expect(res.status, `${path} ${text.slice(0, 300)}`).toBe(200);
      if (path.startsWith('/v1/messages/count_tokens')) expect(JSON.parse(text)).toEqual({ input_tokens: expect.any(Number) });
      else if (body.stream === true) expect(eventNames(text).at(-1), text.slice(-300)).toBe('message_stop');
      else expect(JSON.parse(text)).toMatchObject({ type: 'message', role: 'assistant' });
    }
    if (model === 'claude') {
      // The betas went byte for byte with every message request.
      expect(anthropic.messages().map((r) => r.headers['anthropic-beta'])).toEqual(Array(4).fill(CLAUDE_CODE_BETAS));
      expect(anthropic.messages()[2]!.body).toMatchObject({ model: 'claude-fake-1', thinking: { type: 'enabled', budget_tokens: 4000 } });
    } else {
      expect(anthropic.received).toHaveLength(0);
    }
  });
});
