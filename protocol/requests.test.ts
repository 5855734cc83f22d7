import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Operation } from './frames.js';
import { plainChat, plainEmbeddings, readRequestBody, toParsedRequest } from './request-body.js';
import { chatRequestSchema, checkWithSchema, embeddingsRequestSchema } from './requests.js';

/** What a worker does with a body: the hand checks, else the schema. */
function parseRequest(op: Operation, bytes: Uint8Array) {
  const { json, plain } = readRequestBody(op, bytes);
  if (!plain) checkWithSchema(op, json);
  return toParsedRequest(op, json);
}

// The hand-written checks skip zod on the common shapes; they must never accept what the schema refuses.
const w = <T>(arbitrary: fc.Arbitrary<T>, weight: number) => ({ arbitrary, weight });
const anyJson = fc.jsonValue({ maxDepth: 2 });
const role = fc.oneof(w(fc.constantFrom('user', 'system', 'assistant'), 8), w(fc.constant(''), 1), w(anyJson, 1));
const content = fc.oneof(w(fc.string({ maxLength: 8 }), 3), w(fc.constant(null), 1), w(fc.array(anyJson, { maxLength: 2 }), 1), w(anyJson, 1));
const message = fc.oneof(w(fc.record({ role, content }, { requiredKeys: ['role'] }), 12), w(fc.record({ role, content }, { requiredKeys: [] }), 1), w(anyJson, 1));
const model = fc.oneof(w(fc.constant('gpt-4o-mini'), 6), w(fc.constant(''), 1), w(anyJson, 1));
const chatBody = fc.record(
  {
    model,
    messages: fc.oneof(w(fc.array(message, { maxLength: 3 }), 6), w(anyJson, 1)),
    stream: fc.oneof(w(fc.boolean(), 4), w(anyJson, 1)),
    temperature: anyJson,
  },
  { requiredKeys: ['model', 'messages'] },
);
const token = fc.oneof(w(fc.nat(), 4), w(fc.integer(), 1), w(fc.double(), 1));
const embeddingsBody = fc.record(
  {
    model,
    input: fc.oneof(
      w(fc.string({ maxLength: 8 }), 2),
      w(fc.array(fc.oneof(w(fc.string({ maxLength: 8 }), 6), w(anyJson, 1)), { maxLength: 3 }), 4),
      w(fc.array(token, { maxLength: 3 }), 2),
      w(fc.array(fc.array(token, { maxLength: 3 }), { maxLength: 2 }), 2),
      w(anyJson, 1),
    ),
    encoding_format: fc.oneof(w(fc.constantFrom('float', 'base64'), 4), w(anyJson, 1)),
  },
  { requiredKeys: ['model', 'input'] },
);

describe('hand-written request checks', () => {
  it('plainChat accepts only what chatRequestSchema accepts, and most valid bodies', () => {
    let fast = 0;
    fc.assert(
      fc.property(chatBody, (body) => {
        if (plainChat(body)) {
          fast++;
          expect(chatRequestSchema.safeParse(body).success).toBe(true);
        }
      }),
      { seed: 5, numRuns: 5000 },
    );
    // The generator is weighted toward valid bodies: the fast path has to take a good share of them.
    expect(fast).toBeGreaterThan(500);
  });

  it('plainEmbeddings accepts only what embeddingsRequestSchema accepts, and most text inputs', () => {
    let fast = 0;
    fc.assert(
      fc.property(embeddingsBody, (body) => {
        if (plainEmbeddings(body)) {
          fast++;
          expect(embeddingsRequestSchema.safeParse(body).success).toBe(true);
        }
      }),
      { seed: 6, numRuns: 5000 },
    );
    expect(fast).toBeGreaterThan(500);
  });

  it('bodies the fast path leaves to the schema are still accepted or refused by it', () => {
    const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    // token arrays: not taken by the hand check, accepted by the schema
    expect(plainEmbeddings({ model: 'm', input: [1, 2, 3] })).toBe(false);
    expect(() => parseRequest('embeddings', enc({ model: 'm', input: 'x', encoding_format: 'int8' }))).toThrow(/"encoding_format"/);
    expect(parseRequest('embeddings', enc({ model: 'm', input: [[1, 2], [3]] })).model).toBe('m');
    // wrong types: refused with the schema's wording
    expect(() => parseRequest('chat', enc({ model: 'm', messages: [{ role: 'user' }], stream: 'yes' }))).toThrow(/"stream"/);
    expect(() => parseRequest('chat', enc({ messages: [{ role: 'user', content: 'hi' }] }))).toThrow(/"model" is required/);
    expect(() => parseRequest('embeddings', enc({ model: 'm', input: [] }))).toThrow(/"input"/);
  });
});
