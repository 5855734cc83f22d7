/**
 * The local count_tokens estimate (count-tokens.ts): what is counted, with
 * a counter that is each text's length (so each piece's part is plain),
 * and the o200k counter the adapter loads on its first call.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import type { AttemptSink, ProviderCall } from '../../providers/adapter.js';
import { countInputTokens, localTokenCounter, MESSAGE_OVERHEAD } from './count-tokens.js';

const length = (text: string) => text.length;
const O = MESSAGE_OVERHEAD;

describe('countInputTokens', () => {
  it('the system prompt (a string or its text blocks) and each message, each with its overhead; no system, no overhead for it', () => {
    expect(countInputTokens({ model: 'm', messages: [{ role: 'user', content: 'Hello, world' }] }, length)).toBe(12 + O);
    expect(countInputTokens({ model: 'm', system: 'abc', messages: [{ role: 'user', content: 'de' }] }, length)).toBe(3 + O + 2 + O);
    expect(countInputTokens({ model: 'm', system: [{ type: 'text', text: 'abc' }, { type: 'text', text: 'fg', cache_control: { type: 'ephemeral' } }], messages: [] }, length)).toBe(5 + O);
    expect(countInputTokens({ model: 'm', system: '', messages: [{ role: 'user', content: 'x' }] }, length)).toBe(1 + O);
    expect(countInputTokens({ model: 'm', system: [], messages: [] }, length)).toBe(0);
  });

  it('blocks: text, thinking, a tool use\'s name and JSON input, a tool result\'s text (string or blocks); images, documents and redacted thinking not counted', () => {
    const messages = [
      { role: 'user', content: [{ type: 'text', text: 'abcd' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }, { type: 'document', source: { type: 'text', data: 'zzzz' } }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, { type: 'redacted_thinking', data: 'xxxxxxxx' }, { type: 'tool_use', id: 't1', name: 'get', input: { a: 1 } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: '18 C' }, { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'ok' }, { type: 'image', source: {} }] }] },
    ];
    expect(countInputTokens({ model: 'm', messages }, length)).toBe(4 + O + (3 + 3 + '{"a":1}'.length) + O + (4 + 2) + O);
  });

  it('tools: the JSON of name, description and input_schema; Anthropic\'s own tools by name; entries that are not objects skipped', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } } };
    const custom = { name: 'get_weather', description: 'Weather', input_schema: schema, cache_control: { type: 'ephemeral' } };
    const server = { type: 'web_search_20250305', name: 'web_search', max_uses: 3 };
    const expected = JSON.stringify({ name: 'get_weather', description: 'Weather', input_schema: schema }).length + JSON.stringify({ name: 'web_search' }).length;
    expect(countInputTokens({ model: 'm', messages: [], tools: [custom, server, 'junk', null] }, length)).toBe(expected);
    expect(countInputTokens({ model: 'm', messages: ['junk', null, { role: 'user', content: 'x' }] }, length)).toBe(1 + O);
  });
});

describe('localTokenCounter', () => {
  it('answers {"input_tokens": N} at once with o200k\'s count (special-token spellings counted as text), no usage, no upstream', async () => {
    const text = 'Hello, world <|endoftext|> and some more words';
    const replies: Array<{ status: number; contentType: string; body: string; usage: unknown }> = [];
    const sink = { reply: (status: number, contentType: string, _h: unknown, body: Uint8Array, usage: unknown) => void replies.push({ status, contentType, body: Buffer.from(body).toString('utf8'), usage }) } as unknown as AttemptSink;
    const call = { op: 'count_tokens', body: { model: 'm', system: 'Be brief.', messages: [{ role: 'user', content: text }] }, sentAt: 0, headersAt: 0, readAt: 0 } as unknown as ProviderCall;
    await localTokenCounter.call(call, sink);
    const expected = countTokens('Be brief.') + O + countTokens(text, { disallowedSpecial: new Set() }) + O;
    expect(replies).toEqual([{ status: 200, contentType: 'application/json', body: JSON.stringify({ input_tokens: expected }), usage: null }]);
    expect(call.sentAt).toBeGreaterThan(0);
    expect(call.readAt).toBeGreaterThanOrEqual(call.sentAt);
    expect(localTokenCounter.probe({} as never)).toBeNull();
  });
});
