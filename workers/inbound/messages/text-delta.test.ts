import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plainTextDelta, TextDeltas } from './text-delta.js';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** What the parse makes of a chunk, for the shape plainTextDelta takes: the text's JSON, '' for none; null when the chunk is of another shape. */
function parsedTextDelta(data: string): string | null {
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isRecord(chunk) || 'error' in chunk || (chunk.usage !== undefined && chunk.usage !== null)) return null;
  if (chunk.choices === undefined) return '';
  if (!Array.isArray(chunk.choices) || chunk.choices.length > 1) return null;
  const choice: unknown = chunk.choices[0];
  if (choice === undefined) return '';
  if (!isRecord(choice) || (choice.index !== undefined && choice.index !== 0) || (choice.finish_reason !== undefined && choice.finish_reason !== null)) return null;
  if (choice.delta === undefined || choice.delta === null) return '';
  if (!isRecord(choice.delta)) return null;
  const delta = choice.delta;
  for (const key of ['refusal', 'reasoning_content', 'reasoning', 'tool_calls']) if (delta[key] !== undefined && delta[key] !== null) return null;
  if (delta.content === undefined || delta.content === null || delta.content === '') return '';
  return typeof delta.content === 'string' ? JSON.stringify(delta.content) : null;
}

const chunk = (content: unknown, extra: Json = {}): string =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1700000000, model: 'm', system_fingerprint: 'fp', choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], usage: null, ...extra });

describe('a chat chunk read in place: a text delta of choice 0 alone', () => {
  it("the usual chunks are taken, their text as JSON.stringify writes it (escapes, surrogate pairs, U+2028 included)", () => {
    expect(plainTextDelta(chunk('tok0 '))).toBe('"tok0 "');
    expect(plainTextDelta(chunk('a "quoted"\nline\\ é 😀 \u2028'))).toBe(JSON.stringify('a "quoted"\nline\\ é 😀 \u2028'));
    expect(plainTextDelta('{"choices":[{"index":0,"delta":{"content":"\\u0041\\/"}}]}')).toBe('"A/"');
    expect(plainTextDelta(' { "choices" : [ { "delta" : { "role" : "assistant" , "content" : "x" } } ] } ')).toBe('"x"');
    expect(plainTextDelta(chunk(''))).toBe('');
    expect(plainTextDelta(chunk(null))).toBe('');
    expect(plainTextDelta('{"choices":[]}')).toBe('');
  });

  it('anything else is left to the parse: a finish reason, usage, an error, a tool call, a refusal, reasoning, two choices, another index, a repeated key or a key with escapes', () => {
    for (const data of [
      chunk('a', { choices: [{ index: 0, delta: { content: 'a' }, finish_reason: 'stop' }] }),
      chunk('a', { usage: { prompt_tokens: 1 } }),
      chunk('a', { error: null }),
      chunk('a', { choices: [{ index: 0, delta: { tool_calls: [] } }] }),
      chunk('a', { choices: [{ index: 0, delta: { content: null, refusal: 'no' } }] }),
      chunk('a', { choices: [{ index: 0, delta: { reasoning_content: 'hm' } }] }),
      chunk('a', { choices: [{ index: 0, delta: { content: 'a' } }, { index: 1, delta: { content: 'b' } }] }),
      chunk('a', { choices: [{ index: 1, delta: { content: 'a' } }] }),
      '{"choices":[{"delta":{"content":"a","content":"b"}}]}',
      '{"choices":[{"delta":{"cont\\u0065nt":"a"}}]}',
      `{"x":${'['.repeat(40)}${']'.repeat(40)},"choices":[]}`,
      '[DONE]',
    ]) expect(plainTextDelta(data), data).toBeNull();
  });

  it('text JSON.parse refuses is never taken (a control character in a string, a bad escape or number, a trailing comma, text after the object)', () => {
    for (const data of ['{"choices":[{"delta":{"content":"a\nb"}}]}', '{"id":"\\x","choices":[]}', '{"created":01,"choices":[]}', '{"created":1.,"choices":[]}', '{"choices":[],}', '{"choices":[]} x', '{"choices":[{"delta":{"content":"a"}}]']) {
      expect(plainTextDelta(data), data).toBeNull();
    }
  });

  // Chunks of the shapes a chat stream has, with other keys and values of any JSON, written with or without spacing.
  const anyText = fc.oneof(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\u2028', 'a', '\ud800') }));
  const delta = fc.record({ role: fc.constant('assistant'), content: fc.oneof(anyText, fc.constant(null)), refusal: fc.constant(null), tool_calls: fc.constantFrom(null, []), extra: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] });
  const choice = fc.record({ index: fc.constantFrom(0, 1), delta: fc.oneof(delta, fc.constant(null)), finish_reason: fc.constantFrom(null, 'stop'), logprobs: fc.constant(null) }, { requiredKeys: [] });
  const chunks = fc.record({ id: anyText, model: anyText, created: fc.integer(), choices: fc.array(choice, { maxLength: 2 }), usage: fc.constantFrom(null, { prompt_tokens: 1 }), other: fc.jsonValue({ maxDepth: 3 }) }, { requiredKeys: ['choices'] });
  const written = fc.tuple(chunks, fc.constantFrom(undefined, 1, '\t')).map(([c, space]) => JSON.stringify(c, null, space));

  it('on any chunk, what it takes is what the parse finds, and it takes every chunk of the shape it reads (fast-check)', () => {
    let taken = 0;
    fc.assert(
      fc.property(written, (data) => {
        const fast = plainTextDelta(data);
        const parsed = parsedTextDelta(data);
        if (fast !== null) {
          taken++;
          expect(fast).toBe(parsed);
        } else if (parsed !== null) {
          // Left to the parse only for depth past the bound (fc.jsonValue's maxDepth keeps under it here).
          expect.fail(`not taken: ${data}`);
        }
      }),
      { numRuns: 2000 },
    );
    expect(taken).toBeGreaterThan(200);
  });

  it('on any chunk cut short or with a character put in, never text JSON.parse refuses (fast-check)', () => {
    const mangled = fc.tuple(written, fc.nat(), fc.constantFrom('', '"', '\\', ',', '}', ']', '{', '[', '\n', '\u0001', 'x', '0', '-', ':')).map(([data, at, put]) => {
      const i = at % (data.length + 1);
      return data.slice(0, i) + put + data.slice(i + (put === '' ? 1 : 0));
    });
    fc.assert(
      fc.property(mangled, (data) => {
        const fast = plainTextDelta(data);
        if (fast !== null) expect(fast).toBe(parsedTextDelta(data));
      }),
      { numRuns: 3000 },
    );
  });

  it("a stream's chunks alike but for their text: each read as the parse finds it, whatever the text put between the template's quotes (fast-check)", () => {
    const body = fc.oneof(anyText.map((t) => JSON.stringify(t).slice(1, -1)), fc.string({ unit: fc.constantFrom('"', '\\', 'u', '0', 'a', '\n', '}', ',') }));
    fc.assert(
      fc.property(written, fc.array(body, { maxLength: 8 }), (first, bodies) => {
        const deltas = new TextDeltas();
        expect(deltas.read(first)).toBe(plainTextDelta(first));
        const marker = '"content":"';
        const at = first.indexOf(marker);
        if (at === -1 || plainTextDelta(first) === null) return;
        const end = first.indexOf('"', at + marker.length) === -1 ? at : first.indexOf('"', at + marker.length);
        for (const text of bodies) {
          const data = first.slice(0, at + marker.length) + text + first.slice(end);
          const read = deltas.read(data);
          const parsed = parsedTextDelta(data);
          if (read !== null || parsed !== null) expect(read).toBe(parsed);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('the template is the last chunk read: a chunk of another id or model is read in full, then is the template', () => {
    const deltas = new TextDeltas();
    expect(deltas.read(chunk('a'))).toBe('"a"');
    expect(deltas.read(chunk('b\n'))).toBe('"b\\n"');
    expect(deltas.read(chunk('c', { id: 'other' }))).toBe('"c"');
    expect(deltas.read(chunk('d"', { id: 'other' }))).toBe('"d\\""');
    expect(deltas.read(chunk('e', { id: 'other' }).replace('"e"', '"e\\u00"'))).toBeNull();
  });

  it("OpenAI's chunks, whose obfuscation padding differs in each: the text read as the parse finds it, whatever is put in the content and the padding (fast-check)", () => {
    const openai = (content: string, padding: string): string =>
      `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"${content}"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"${padding}"}`;
    const body = fc.oneof(anyText.map((t) => JSON.stringify(t).slice(1, -1)), fc.string({ unit: fc.constantFrom('"', '\\', 'u', '0', 'a', '\n', '}', ',') }));
    fc.assert(
      fc.property(fc.array(fc.tuple(body, body), { minLength: 1, maxLength: 8 }), (parts) => {
        const deltas = new TextDeltas();
        deltas.read(openai('Hello', 'x1'));
        for (const [content, padding] of parts) {
          const data = openai(content, padding);
          const read = deltas.read(data);
          const parsed = parsedTextDelta(data);
          if (read !== null || parsed !== null) expect(read).toBe(parsed);
        }
      }),
      { numRuns: 1000 },
    );
    const deltas = new TextDeltas();
    expect(deltas.read(openai('Hello', 'x1'))).toBe('"Hello"');
    expect(deltas.read(openai(' wor\\"ld', 'Qz9'))).toBe('" wor\\"ld"');
    expect(deltas.read(openai('!', ''))).toBe('"!"');
    expect(deltas.read(openai('a', 'b","error":{"message":"x"},"c":"d'))).toBeNull();
  });

  it("a stream's first chunk: its text, id and model as the parse finds them (fast-check), undefined where it has none; an id that is not a string is parsed", () => {
    fc.assert(
      fc.property(written, (data) => {
        const first = new TextDeltas().first(data);
        if (first === null) return;
        const parsed = JSON.parse(data) as Json;
        expect(first.text).toBe(parsedTextDelta(data));
        expect(first.id).toBe(parsed.id);
        expect(first.model).toBe(parsed.model);
      }),
      { numRuns: 1000 },
    );
    expect(new TextDeltas().first('{"id":"a\\u00e9\\"","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}')).toEqual({ text: '', id: 'aé"', model: undefined });
    expect(new TextDeltas().first('{"id":7,"choices":[]}')).toBeNull();
  });
});
