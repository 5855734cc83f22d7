import { describe, expect, it } from 'vitest';
import { FULL_CHECK_BYTES, checkCompatible } from './response-body.js';

const enc = (text: string) => new TextEncoder().encode(text);
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
