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

/** JSON text with `space()` between every two tokens: the whitespace variants a provider (or a pretty-printer) may send. */
function serialize(value: unknown, space: () => string): string {
  if (Array.isArray(value)) return `[${space()}${value.map((v) => serialize(v, space)).join(`${space()},${space()}`)}${space()}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}${space()}:${space()}${serialize(v, space)}`);
    return `{${space()}${members.join(`${space()},${space()}`)}${space()}}`;
  }
  return JSON.stringify(value);
}

/** The record's keys in any order. */
const anyOrder = <T extends Record<string, unknown>>(record: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  record.chain((r) => fc.shuffledSubarray(Object.keys(r), { minLength: Object.keys(r).length }).map((keys) => Object.fromEntries(keys.map((k) => [k, r[k]])) as T));

describe('usage of any body, large or small', () => {
  // Text that is hard on a byte scan: braces, quotes, escaped quotes, backslashes, the key itself, multi-byte characters.
  const fragment = fc.constantFrom('{', '}', '[', ']', '"', '\\', '\\"', '"usage"', '"usage":{"prompt_tokens":7}', 'usage', '}}"', ':', ',', ' ', '\n', 'é', '😀', 'plain text ');
  const text = fc.array(fragment, { maxLength: 24 }).map((parts) => parts.join(''));
  const tokens = fc.nat({ max: 2_000_000 });
  // As OpenAI sends it: counts and nested details objects, keys in any order; sometimes null or absent.
  const usage = anyOrder(
    fc.record(
      {
        prompt_tokens: tokens,
        completion_tokens: tokens,
        total_tokens: tokens,
        prompt_tokens_details: anyOrder(fc.record({ cached_tokens: tokens, audio_tokens: tokens }, { requiredKeys: [] })),
        completion_tokens_details: anyOrder(fc.record({ reasoning_tokens: tokens, audio_tokens: tokens, accepted_prediction_tokens: tokens, rejected_prediction_tokens: tokens }, { requiredKeys: [] })),
        // A provider's own string member, with braces and escaped quotes inside the usage object.
        x_note: text,
      },
      { requiredKeys: [] },
    ),
  );
  // Around and above FULL_CHECK_BYTES (64 KiB) most of the time, small otherwise.
  const padLength = fc.oneof(fc.nat({ max: 2_000 }), fc.integer({ min: 60_000, max: 70_000 }), fc.integer({ min: 70_000, max: 160_000 }));
  const body = fc
    .record({
      op: fc.constantFrom('chat' as const, 'embeddings' as const),
      usage: fc.option(fc.oneof(usage, fc.constant(null)), { nil: undefined, freq: 3 }),
      text,
      idText: text,
      padLength,
      // A "usage" that is not the top-level one: in a nested object, in a choice, and as a string value.
      nested: fc.option(usage, { nil: undefined, freq: 2 }),
      inChoice: fc.option(usage, { nil: undefined, freq: 2 }),
      note: fc.option(fc.constant('usage'), { nil: undefined, freq: 2 }),
      order: fc.nat(),
      spaces: fc.array(fc.constantFrom('', '', ' ', '\n', '\t', '\r\n', '  '), { minLength: 1, maxLength: 8 }),
      around: fc.constantFrom('', ' ', '\n', '\r\n  '),
    })
    .map(({ op, usage: u, text: t, idText, padLength: n, nested, inChoice, note, order, spaces, around }) => {
      const content = `${t}${(t || 'x').repeat(Math.ceil(n / Math.max(1, t.length))).slice(0, n)}`;
      const items =
        op === 'chat'
          ? [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', ...(inChoice && { usage: inChoice }) }]
          : [{ object: 'embedding', index: 0, embedding: [0.25, -1.5e-7], text: content, ...(inChoice && { usage: inChoice }) }];
      const members: Array<[string, unknown]> = [
        ['id', `chatcmpl-${idText}`],
        ['object', op === 'chat' ? 'chat.completion' : 'list'],
        [op === 'chat' ? 'choices' : 'data', items],
        ...(u !== undefined ? [['usage', u] as [string, unknown]] : []),
        ...(nested ? [['metadata', { usage: nested }] as [string, unknown]] : []),
        ...(note ? [['note', note] as [string, unknown]] : []),
        ['system_fingerprint', 'fp_}"'],
      ];
      // Usage before or after the array, or anywhere: rotate the members.
      const k = order % members.length;
      const json = Object.fromEntries([...members.slice(k), ...members.slice(0, k)]);
      let next = 0;
      const text = `${around}${serialize(json, () => spaces[next++ % spaces.length] as string)}${around}`;
      // A counterexample is reported by its size and ends, not 160 KB of padding.
      return { op, text, [fc.toStringMethod]: () => `${op} body of ${text.length} chars: ${text.length > 900 ? `${text.slice(0, 300)} … ${text.slice(-600)}` : text}` };
    });

  it('counts what JSON.parse(body).usage holds, or no usage, however the body is cut (fast-check)', () => {
    let large = 0;
    let counted = 0;
    fc.assert(
      fc.property(body, fc.array(fc.nat(), { maxLength: 6 }), ({ op, text }, cuts) => {
        const bytes = new TextEncoder().encode(text);
        if (bytes.length > FULL_CHECK_BYTES) large++;
        const expected = usageOf(JSON.parse(text));
        if (expected !== null) counted++;
        const at = cuts.map((c) => c % (bytes.length + 1));
        expect(checkCompatible(op, cut(bytes, at)), `${bytes.length} bytes cut at ${at.join(',')}`).toEqual(expected);
      }),
      // Shrinking 100 KB bodies can take minutes: stop at 30 s with the smallest counterexample found by then.
      { numRuns: 600, interruptAfterTimeLimit: 30_000, markInterruptAsFailure: true },
    );
    // The property held for bodies of both paths, with and without usage.
    expect(large).toBeGreaterThan(250);
    expect(counted).toBeGreaterThan(150);
  });
});

describe('usage of a reply over 64 KiB (issue 21, point 8)', () => {
  const details =
    '{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":5,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}';
  const choices = (content = 'x'.repeat(70_000)) => `[{"index":0,"message":{"role":"assistant","content":${JSON.stringify(content)}},"finish_reason":"stop"}]`;

  it('is counted when usage holds nested details objects, as OpenAI sends them (the first "}" is not its end)', () => {
    const body = `{"id":"chatcmpl-1","object":"chat.completion","choices":${choices()},"usage":${details},"service_tier":"default","system_fingerprint":"fp_1"}`;
    expect(body.length).toBeGreaterThan(FULL_CHECK_BYTES);
    expect(checkCompatible('chat', enc(body))).toEqual({ prompt: 12, completion: 34 });
    // The same reply under 64 KiB, parsed whole, counts the same.
    expect(checkCompatible('chat', enc(body.replace(/x{70000}/, 'x')))).toEqual({ prompt: 12, completion: 34 });
  });

  // Layouts the property test meets only now and then, each against JSON.parse.
  const layouts: Array<[string, string, ReturnType<typeof usageOf>]> = [
    ['usage before the array', `{"usage":${details},"choices":${choices()}}`, { prompt: 12, completion: 34 }],
    ['a "usage" string value after it', `{"choices":${choices()},"usage":${details},"note":"usage"}`, { prompt: 12, completion: 34 }],
    ['a nested "usage" key after it', `{"choices":${choices()},"usage":${details},"meta":{"usage":{"prompt_tokens":999}}}`, { prompt: 12, completion: 34 }],
    ['only a nested "usage", near the end', `{"choices":${choices()},"meta":{"usage":{"prompt_tokens":999}}}`, null],
    ['only a nested "usage", near the start', `{"meta":{"usage":{"prompt_tokens":999}},"choices":${choices()}}`, null],
    ['content ending in an escaped quote then usage', `{"choices":${choices(`${'x'.repeat(70_000)}"usage`)},"usage":${details}}`, { prompt: 12, completion: 34 }],
    ['escaped quotes and backslashes, and braces, in strings', `{"choices":${choices(`${'x'.repeat(70_000)}\\`)},"usage":{"prompt_tokens":1,"note":"a\\\\ \\"}{","completion_tokens":2}}`, { prompt: 1, completion: 2 }],
    ['an escaped quote and a brace in a string before usage', `{"id":"a\\"{","usage":${details},"choices":${choices()}}`, { prompt: 12, completion: 34 }],
    ['duplicate top-level keys (the last wins)', `{"usage":{"prompt_tokens":1},"choices":${choices()},"usage":${details}}`, { prompt: 12, completion: 34 }],
    ['duplicate top-level keys before the array', `{"usage":{"prompt_tokens":1},"usage":${details},"choices":${choices()}}`, { prompt: 12, completion: 34 }],
    ['usage null', `{"choices":${choices()},"usage":null}`, null],
  ];
  it('a last piece that starts just after a backslash is not read as if the quote it starts with were unescaped', () => {
    // The top-level key x"usage is not usage; cut after its backslash, the last piece reads "usage":{…} on its own.
    const body = `{"choices":${choices()},"usage":${details},"x\\"usage":{"prompt_tokens":5}}`;
    const bytes = new TextEncoder().encode(body);
    expect(usageOf(JSON.parse(body))).toEqual({ prompt: 12, completion: 34 });
    expect(checkCompatible('chat', cut(bytes, [body.lastIndexOf('"usage"')]))).toEqual({ prompt: 12, completion: 34 });
  });

  it.each(layouts)('%s', (_, body, expected) => {
    expect(body.length).toBeGreaterThan(FULL_CHECK_BYTES);
    expect(usageOf(JSON.parse(body))).toEqual(expected);
    expect(checkCompatible('chat', enc(body))).toEqual(expected);
  });
});
