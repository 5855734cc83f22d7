import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plainResponses, readRequestBody, toParsedRequest } from './request-body.js';
import { checkWithSchema, refuseStateful, responsesRequestSchema } from './requests.js';

// As for chat and embeddings (requests.test.ts): the hand check of POST /v1/responses skips zod on the
// common shapes, and must never accept what the schema, or the refusal of stateful parameters, refuses.
const w = <T>(arbitrary: fc.Arbitrary<T>, weight: number) => ({ arbitrary, weight });
const anyJson = fc.jsonValue({ maxDepth: 2 });
const text = fc.string({ maxLength: 6 });
const part = fc.oneof(w(fc.record({ type: fc.constantFrom('input_text', 'output_text'), text }), 6), w(fc.record({ type: anyJson }), 1), w(anyJson, 1));
const content = fc.oneof(w(text, 4), w(fc.array(part, { maxLength: 2 }), 3), w(anyJson, 1));
const role = fc.oneof(w(fc.constantFrom('user', 'assistant', 'system', 'developer'), 8), w(fc.constantFrom('tool', ''), 1), w(anyJson, 1));
const item = fc.oneof(
  w(fc.record({ role, content }, { requiredKeys: ['role'] }), 6),
  w(fc.record({ type: fc.constant('message'), role, content }, { requiredKeys: ['type', 'role'] }), 2),
  w(fc.record({ type: fc.constant('function_call'), call_id: fc.oneof(text, anyJson), name: fc.oneof(text, anyJson), arguments: fc.oneof(text, anyJson) }, { requiredKeys: ['type'] }), 3),
  w(fc.record({ type: fc.constant('function_call_output'), call_id: fc.oneof(text, anyJson), output: content }, { requiredKeys: ['type'] }), 3),
  w(fc.record({ type: fc.constantFrom('item_reference', 'reasoning', 'web_search_call'), id: text }), 1),
  w(anyJson, 1),
);
const nullable = <T>(a: fc.Arbitrary<T>) => fc.oneof(w(a, 6), w(fc.constant(null), 1), w(anyJson, 1));
const responsesBody = fc.record(
  {
    model: fc.oneof(w(fc.constant('gpt-4o-mini'), 6), w(fc.constant(''), 1), w(anyJson, 1)),
    input: fc.oneof(w(text, 3), w(fc.array(item, { maxLength: 3 }), 5), w(anyJson, 1)),
    instructions: nullable(text),
    stream: nullable(fc.boolean()),
    store: nullable(fc.boolean()),
    temperature: nullable(fc.double({ noNaN: true })),
    max_output_tokens: nullable(fc.integer({ min: -2, max: 100 })),
    tools: nullable(fc.array(fc.oneof(w(fc.record({ type: fc.constant('function'), name: text }), 4), w(fc.record({ type: anyJson }), 1), w(anyJson, 1)), { maxLength: 2 })),
    tool_choice: nullable(fc.oneof(fc.constantFrom('auto', 'none', 'required', 'any'), fc.record({ type: fc.constant('function'), name: text }))),
    text: nullable(fc.record({ format: nullable(fc.record({ type: fc.oneof(fc.constantFrom('text', 'json_schema', 'json_object', 'yaml'), anyJson), name: text })), verbosity: text }, { requiredKeys: [] })),
    previous_response_id: fc.oneof(w(fc.constant(null), 6), w(text, 1)),
    background: fc.oneof(w(fc.constant(false), 6), w(fc.boolean(), 1), w(anyJson, 1)),
  },
  { requiredKeys: ['model', 'input'] },
);

describe('POST /v1/responses: the hand check', () => {
  it('plainResponses accepts only what the schema and the stateful refusal accept, and most valid bodies', () => {
    let fast = 0;
    fc.assert(
      fc.property(responsesBody, (body) => {
        if (!plainResponses(body)) return;
        fast++;
        expect(responsesRequestSchema.safeParse(body).success).toBe(true);
        expect(() => refuseStateful(body)).not.toThrow();
      }),
      { seed: 24, numRuns: 5000 },
    );
    expect(fast).toBeGreaterThan(150);
  });

  it('what the hand check leaves to the schema is accepted or refused with the parameter named', () => {
    const parse = (body: object) => {
      const { json, plain } = readRequestBody('responses', new TextEncoder().encode(JSON.stringify(body)));
      if (!plain) checkWithSchema('responses', json);
      return toParsedRequest('responses', json);
    };
    expect(parse({ model: 'm', input: 'hi', stream: true, text: { format: { type: 'json_object' } } })).toMatchObject({ model: 'm', stream: true });
    expect(() => parse({ model: 'm', input: 'hi', previous_response_id: 'resp_1' })).toThrow(expect.objectContaining({ code: 'unsupported_parameter' }));
    expect(() => parse({ model: 'm', input: [{ type: 'item_reference', id: 'x' }] })).toThrow(/'input\[0\]'/);
    expect(() => parse({ model: 'm', input: 'hi', background: true })).toThrow(/'background'/);
    expect(() => parse({ model: 'm' })).toThrow(/"input" is required/);
    expect(() => parse({ model: 'm', input: 'hi', text: { format: { type: 'yaml' } } })).toThrow(/"text.format.type"/);
  });
});
