import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FULL_CHECK_BYTES, checkCompatible, usageOf, usageValueAt } from './response-body.js';

const enc = (text: string) => [new TextEncoder().encode(text)];
const vector = Array.from({ length: 1536 }, (_, i) => Math.sin(i));
const bigEmbeddings = (extra = '') =>
  JSON.stringify({ object: 'list', model: 'm', data: Array.from({ length: 16 }, (_, index) => ({ object: 'embedding', index, embedding: vector })), usage: { prompt_tokens: 64, total_tokens: 64 } }) + extra;

describe('checkCompatible', () => {
  it('parses small bodies whole: usage returned, malformed JSON and a missing array refused', () => {
    expect(checkCompatible('chat', enc('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}'))).toEqual({ prompt: 3, completion: 4 });
    expect(() => checkCompatible('chat', enc('{"choices":[}'))).toThrow(/not JSON/);
    expect(() => checkCompatible('embeddings', enc('{"hello":"world"}'))).toThrow(/no "data" array/);
    expect(checkCompatible('embeddings', enc('{"data":[]}'))).toBeNull();
  });

  it('checks bodies over FULL_CHECK_BYTES by structure and reads usage from its own object', () => {
    const body = bigEmbeddings('\n');
    expect(body.length).toBeGreaterThan(FULL_CHECK_BYTES);
    expect(checkCompatible('embeddings', enc(body))).toEqual({ prompt: 64, completion: 0 });
    // Pretty-printed with spaces around the colon still passes.
    const spaced = body.replace('"data":[', '"data" :  [');
    expect(checkCompatible('embeddings', enc(spaced))).toEqual({ prompt: 64, completion: 0 });
  });

  it('refuses large bodies that are not an object or lack the array', () => {
    const body = bigEmbeddings();
    expect(() => checkCompatible('embeddings', enc(`[${body}]`))).toThrow(/not a JSON object/);
    // A body cut off mid-way (a truncated transfer) does not end the object.
    expect(() => checkCompatible('embeddings', enc(body.slice(0, Math.floor(body.length / 2))))).toThrow(/not a JSON object/);
    expect(() => checkCompatible('embeddings', enc(body.replace('"data":[', '"rows":[')))).toThrow(/no "data" array/);
    expect(() => checkCompatible('embeddings', enc(body.replace('"data":[', '"data":{')))).toThrow(/no "data" array/);
    expect(() => checkCompatible('chat', enc(body))).toThrow(/no "choices" array/);
  });

  it('a large body without usage gives null usage', () => {
    const body = bigEmbeddings().replace(/,"usage":\{[^}]*\}/, '');
    expect(body.length).toBeGreaterThan(FULL_CHECK_BYTES);
    expect(checkCompatible('embeddings', enc(body))).toBeNull();
  });
});

/** Cuts `bytes` at the given offsets (sorted, deduplicated): the pieces undici could have read it in. */
function cut(bytes: Uint8Array, at: number[]): Uint8Array[] {
  const points = [...new Set(at.map((x) => Math.min(bytes.length, x)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let from = 0;
  for (const p of points) {
    pieces.push(bytes.subarray(from, p));
    from = p;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

/** The result or the error message: what a check decides. */
function outcome(op: 'chat' | 'embeddings', body: Uint8Array[]): unknown {
  try {
    return checkCompatible(op, body);
  } catch (err) {
    return (err as Error).message;
  }
}

describe('checkCompatible over pieces', () => {
  const big = new TextEncoder().encode(bigEmbeddings());
  const variants: Array<[string, string]> = [
    ['valid', bigEmbeddings()],
    ['pretty', bigEmbeddings().replace('"data":[', '"data" : \n [').replace('"usage":{', '"usage" : {')],
    ['no usage', bigEmbeddings().replace(/,"usage":\{[^}]*\}/, '')],
    ['no array', bigEmbeddings().replace('"data":[', '"rows":[')],
    ['object, not array', bigEmbeddings().replace('"data":[', '"data":{')],
    ['cut short', bigEmbeddings().slice(0, 100_000)],
    ['spaces around', `  \n${bigEmbeddings()}\n  `],
    ['usage twice', bigEmbeddings().replace('"model":"m"', '"model":"m","usage":{"prompt_tokens":1}')],
    ['small chat', '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}'],
  ];

  it('decides exactly as on the joined body, however the body is cut (fast-check)', () => {
    expect(big.length).toBeGreaterThan(FULL_CHECK_BYTES);
    for (const [name, text] of variants) {
      const bytes = new TextEncoder().encode(text);
      for (const op of ['chat', 'embeddings'] as const) {
        const expected = outcome(op, [bytes]);
        fc.assert(
          fc.property(
            // Cut points anywhere, and often right inside the key, the colon and bracket after it, and "usage".
            fc.array(fc.oneof(fc.nat({ max: bytes.length }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: Math.max(0, bytes.length - 120), max: bytes.length })), { maxLength: 12 }),
            (at) => {
              expect(outcome(op, cut(bytes, at)), `${name}, ${op}, cut at ${at.join(',')}`).toEqual(expected);
            },
          ),
          { seed: 20261123, numRuns: 150 },
        );
      }
    }
  });
});

describe('usageValueAt', () => {
  const at = (text: string, from = 0) => usageValueAt(new TextEncoder().encode(text), from);

  it('finds a "usage" key with a value, and passes over one that is null (OpenAI\'s chunks before the last), a value and an escaped quote', () => {
    expect(at('{"choices":[],"usage":{"prompt_tokens":1}}')).toBe(14);
    expect(at('{"usage" : \n {"prompt_tokens":1}}')).toBe(1);
    expect(at('{"choices":[{"delta":{}}],"usage":null}')).toBe(-1);
    expect(at('{"usage" :  null,"x":1}')).toBe(-1);
    expect(at('{"content":"usage"}')).toBe(-1);
    expect(at('{"a":{"usage":null},"usage":{"prompt_tokens":2}}')).toBe(20);
    // From an offset: the one before it is not looked at.
    expect(at('{"usage":{}} {"usage":{}}', 2)).toBe(14);
    expect(at('{"id":"chatcmpl-bench","object":"chat.completion.chunk"}')).toBe(-1);
  });

  it('never misses usage that a parse finds: no JSON object with usage is taken for one without (fast-check)', () => {
    const key = fc.constantFrom('usage', 'Usage', 'usage_', 'id', 'x"usage', 'choices', 'g');
    const leaf = fc.oneof(fc.constant(null), fc.integer(), fc.constantFrom('usage', '"usage":{}', '"usage"', 'null', 'g'), fc.string());
    const usage = fc.oneof(fc.constant(null), fc.record({ prompt_tokens: fc.nat(), completion_tokens: fc.nat() }));
    const chunk = fc.record({ before: fc.object({ key, values: [leaf], maxDepth: 2 }), usage: fc.option(usage), after: fc.object({ key, values: [leaf], maxDepth: 2 }) });
    fc.assert(
      fc.property(chunk, fc.constantFrom(undefined, 1, '\t'), ({ before, usage: u, after }, indent) => {
        const json = { ...before, ...(u === null ? {} : { usage: u }), ...after };
        const text = JSON.stringify(json, null, indent);
        if (usageOf(JSON.parse(text)) !== null) expect(at(text), text).not.toBe(-1);
      }),
      { numRuns: 2000 },
    );
  });
});
