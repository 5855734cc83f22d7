import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../protocol/errors.js';
import { plainMessages } from '../../../protocol/request-body.js';
import { checkMessagesRequest, messagesRequestSchema } from '../../../protocol/requests.js';
import { goldenFiles } from './golden.js';
import { showsThinking, toChatRequest, type Thinking } from './request.js';

type Json = Record<string, unknown>;

/** What the session will do with a body: the hand check, the schema for what it does not pass, then the translation. */
function translate(body: Json) {
  if (!plainMessages(body)) checkMessagesRequest(body);
  return toChatRequest(body);
}

function refusal(body: Json): { code: string; message: string } {
  try {
    translate(body);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return { code: (err as GatewayError).code, message: (err as Error).message };
  }
  throw new Error('accepted');
}

describe('Messages request → chat request (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; anthropic: Json; chat: Json; thinking: Thinking | null }>('request-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const before = JSON.stringify(golden.case.anthropic);
      const { chat, thinking } = translate(golden.case.anthropic);
      golden.expectAt('chat', chat);
      golden.expectAt('thinking', thinking);
      // The caller's body is every attempt's: never changed.
      expect(JSON.stringify(golden.case.anthropic)).toBe(before);
    });
  }
});

describe('a body Anthropic would refuse is a 400 invalid_request naming the field', () => {
  const base = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

  it('max_tokens is required, as Anthropic requires it, and is a non-negative integer', () => {
    const { max_tokens: _, ...without } = base;
    expect(refusal(without)).toEqual({ code: 'invalid_request', message: '"max_tokens" is required' });
    expect(refusal({ ...base, max_tokens: -1 })).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/^"max_tokens": /) });
    expect(refusal({ ...base, max_tokens: 1.5 })).toMatchObject({ message: expect.stringMatching(/^"max_tokens": /) });
    // The translator keeps the rule whoever calls it.
    expect(() => toChatRequest(without)).toThrow('"max_tokens" is required');
  });

  it('the top-level shapes the translation relies on', () => {
    expect(refusal({ ...base, model: '' })).toMatchObject({ message: expect.stringMatching(/^"model": /) });
    expect(refusal({ ...base, messages: [] })).toMatchObject({ message: expect.stringMatching(/^"messages": /) });
    expect(refusal({ ...base, messages: [{ role: 'system', content: 'x' }] })).toMatchObject({ message: expect.stringMatching(/^"messages\[0\]\.role": /) });
    expect(refusal({ ...base, messages: [{ role: 'user', content: [{ text: 'no type' }] }] })).toMatchObject({ message: expect.stringMatching(/^"messages\[0\]\.content/) });
    expect(refusal({ ...base, system: [{ type: 'image' }] })).toMatchObject({ message: expect.stringMatching(/^"system/) });
    expect(refusal({ ...base, stop_sequences: 'END' })).toMatchObject({ message: expect.stringMatching(/^"stop_sequences": /) });
    expect(refusal({ ...base, tool_choice: { type: 'tool' } })).toMatchObject({ message: expect.stringMatching(/^"tool_choice/) });
    expect(refusal({ ...base, tool_choice: { type: 'sometimes' } })).toMatchObject({ message: expect.stringMatching(/^"tool_choice/) });
    expect(refusal({ ...base, metadata: { user_id: 7 } })).toMatchObject({ message: expect.stringMatching(/^"metadata\.user_id": /) });
  });

  it("the blocks' own fields, checked where they are translated", () => {
    const user = (content: unknown) => ({ ...base, messages: [{ role: 'user', content }] });
    const assistant = (content: unknown) => ({ ...base, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content }] });
    expect(refusal(assistant([{ type: 'tool_use', name: 'f', input: {} }]))).toEqual({ code: 'invalid_request', message: '"messages[1].content[0].id": must be a non-empty string' });
    expect(refusal(assistant([{ type: 'tool_use', id: 'a', input: {} }]))).toMatchObject({ message: '"messages[1].content[0].name": must be a non-empty string' });
    expect(refusal(assistant([{ type: 'tool_use', id: 'a', name: 'f', input: [1] }]))).toMatchObject({ message: '"messages[1].content[0].input": must be an object' });
    expect(refusal(user([{ type: 'tool_result', content: 'x' }]))).toMatchObject({ message: '"messages[0].content[0].tool_use_id": must be a non-empty string' });
    expect(refusal(user([{ type: 'text' }]))).toMatchObject({ message: '"messages[0].content[0].text": must be a string' });
    expect(refusal(user([{ type: 'image', source: { type: 'base64', data: 'x' } }]))).toMatchObject({ message: expect.stringMatching(/^"messages\[0\]\.content\[0\]\.source": /) });
    expect(refusal(user([{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 1 }] }]))).toMatchObject({ message: '"messages[0].content[0].content[0].text": must be a string' });
    expect(refusal({ ...base, tools: [{ name: 'f' }] })).toMatchObject({ message: '"tools[0].input_schema": must be an object' });
  });

  it('content chat cannot carry is 400 unsupported_parameter naming it, never dropped in silence', () => {
    const user = (block: Json) => ({ ...base, messages: [{ role: 'user', content: [block] }] });
    expect(refusal(user({ type: 'image', source: { type: 'file', file_id: 'file_011' } }))).toMatchObject({
      code: 'unsupported_parameter',
      message: expect.stringContaining("'messages[0].content[0].source.type'"),
    });
    expect(refusal(user({ type: 'document', source: { type: 'url', url: 'https://x/y.pdf' } }))).toMatchObject({
      code: 'unsupported_parameter',
      message: expect.stringContaining("'messages[0].content[0].source'"),
    });
  });
});

describe('what the contract leaves open', () => {
  const base = { model: 'm', max_tokens: 10 };

  it("a request whose only tools are Anthropic's own sends no tools, and so no tool choice", () => {
    const { chat } = translate({ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }], tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'news?' }] });
    expect(chat).toEqual({ model: 'm', messages: [{ role: 'user', content: 'news?' }], max_completion_tokens: 10 });
  });

  it('an assistant turn of only thinking, and a user turn of only Anthropic-only blocks, send no message', () => {
    const { chat } = translate({
      ...base,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'x' }] },
        { role: 'user', content: [{ type: 'container_upload', file_id: 'f' }] },
        { role: 'user', content: 'b' },
      ],
    });
    expect(chat.messages).toEqual([
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ]);
  });

  it("an assistant turn's text blocks are joined with nothing between them; an empty is_error result says Error", () => {
    const { chat } = translate({
      ...base,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [{ type: 'text', text: 'The grass is green' }, { type: 'text', text: ', the sky blue.' }, { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true }] },
      ],
    });
    expect(chat.messages).toEqual([
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'The grass is green, the sky blue.', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'Error' },
    ]);
  });

  it('thinking: enabled with its budget, adaptive (and between_tools, later types, enabled without a budget) leaving it to the model, disabled; display omitted hides the text; anything else says nothing', () => {
    const thinking = (t: unknown) => toChatRequest({ ...base, messages: [{ role: 'user', content: 'x' }], thinking: t }).thinking;
    expect(thinking({ type: 'enabled', budget_tokens: 2048 })).toEqual({ type: 'budget', budgetTokens: 2048, shown: true });
    expect(thinking({ type: 'enabled', budget_tokens: 2048, display: 'omitted' })).toEqual({ type: 'budget', budgetTokens: 2048, shown: false });
    expect(thinking({ type: 'enabled', budget_tokens: 2048, display: 'summarized' })).toEqual({ type: 'budget', budgetTokens: 2048, shown: true });
    expect(thinking({ type: 'enabled' })).toEqual({ type: 'adaptive', shown: true });
    expect(thinking({ type: 'enabled', budget_tokens: 1.5 })).toEqual({ type: 'adaptive', shown: true });
    expect(thinking({ type: 'adaptive' })).toEqual({ type: 'adaptive', shown: true });
    expect(thinking({ type: 'adaptive', display: 'omitted' })).toEqual({ type: 'adaptive', shown: false });
    expect(thinking({ type: 'between_tools' })).toEqual({ type: 'adaptive', shown: true });
    expect(thinking({ type: 'disabled' })).toEqual({ type: 'disabled' });
    expect(thinking(undefined)).toBeNull();
    expect(thinking('on')).toBeNull();
    expect(thinking({ budget_tokens: 2048 })).toBeNull();
  });

  it('the reasoning text is shown only when thinking is on and not omitted', () => {
    expect(showsThinking({ type: 'budget', budgetTokens: 1024, shown: true })).toBe(true);
    expect(showsThinking({ type: 'adaptive', shown: true })).toBe(true);
    expect(showsThinking({ type: 'adaptive', shown: false })).toBe(false);
    expect(showsThinking({ type: 'disabled' })).toBe(false);
    expect(showsThinking(null)).toBe(false);
  });
});

// As for chat, embeddings and responses (protocol/requests.test.ts, responses-request.test.ts): the hand check
// skips zod on the common shapes, and must never accept what the schema refuses.
const w = <T>(arbitrary: fc.Arbitrary<T>, weight: number) => ({ arbitrary, weight });
const anyJson = fc.jsonValue({ maxDepth: 2 });
const text = fc.string({ maxLength: 6 });
const block = fc.oneof(w(fc.record({ type: fc.constantFrom('text', 'image', 'tool_use', 'tool_result', 'thinking'), text }), 6), w(fc.record({ type: anyJson }), 1), w(anyJson, 1));
const content = fc.oneof(w(text, 4), w(fc.array(block, { maxLength: 2 }), 3), w(anyJson, 1));
const optional = <T>(a: fc.Arbitrary<T>) => fc.oneof(w(a, 14), w(fc.constant(null), 1), w(anyJson, 1));
const messagesBody = fc.record(
  {
    model: fc.oneof(w(fc.constant('claude-sonnet-4-5'), 6), w(fc.constant(''), 1), w(anyJson, 1)),
    max_tokens: fc.oneof(w(fc.integer({ min: -2, max: 64000 }), 6), w(fc.double(), 1), w(anyJson, 1)),
    messages: fc.oneof(w(fc.array(fc.oneof(w(fc.record({ role: fc.oneof(w(fc.constantFrom('user', 'assistant'), 8), w(anyJson, 1)), content }), 8), w(anyJson, 1)), { maxLength: 3 }), 6), w(anyJson, 1)),
    system: optional(fc.oneof(text, fc.array(fc.oneof(w(fc.record({ type: fc.constant('text'), text }), 6), w(anyJson, 1)), { maxLength: 2 }))),
    stream: optional(fc.boolean()),
    stop_sequences: optional(fc.array(fc.oneof(w(text, 6), w(anyJson, 1)), { maxLength: 2 })),
    temperature: optional(fc.double({ noNaN: true })),
    metadata: optional(fc.record({ user_id: optional(text) }, { requiredKeys: [] })),
    tools: optional(fc.array(fc.oneof(w(fc.record({ name: text, input_schema: fc.constant({ type: 'object' }) }), 6), w(anyJson, 1)), { maxLength: 2 })),
    tool_choice: optional(fc.record({ type: fc.oneof(w(fc.constantFrom('auto', 'any', 'none', 'tool'), 6), w(anyJson, 1)), name: fc.oneof(text, anyJson), disable_parallel_tool_use: fc.oneof(fc.boolean(), anyJson) }, { requiredKeys: ['type'] })),
    thinking: optional(fc.record({ type: fc.constantFrom('enabled', 'disabled', 'adaptive'), budget_tokens: fc.nat() })),
  },
  { requiredKeys: ['model', 'messages'] },
);

describe('POST /v1/messages: the hand check', () => {
  it('plainMessages accepts only what messagesRequestSchema accepts, and most valid bodies', () => {
    let fast = 0;
    fc.assert(
      fc.property(messagesBody, (body) => {
        if (!plainMessages(body)) return;
        fast++;
        expect(messagesRequestSchema.safeParse(body).success).toBe(true);
      }),
      { seed: 35, numRuns: 5000 },
    );
    expect(fast).toBeGreaterThan(100);
  });
});
