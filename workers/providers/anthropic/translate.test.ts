/**
 * The Anthropic translators against their golden files (golden/*.json:
 * Anthropic's wire format in, the compatible form out), and what they
 * refuse. UPDATE_GOLDEN=1 rewrites the expected sides (read the diff).
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../protocol/errors.js';
import { AttemptFailure } from '../../routing/failure.js';
import { expectUnsupported, goldenFiles, recordedSse, refusalOf, requestGoldens, sseData, translatedStream } from '../golden.js';
import { anthropicError, anthropicHeaders } from './errors.js';
import { toMessagesRequest, type RequestOptions } from './request.js';
import { toChatCompletion, type ResponseOptions } from './response.js';
import { MessagesStreamTranslator, textDeltaInPlace, type StreamOptions } from './stream.js';

const DIR = join(import.meta.dirname, 'golden');

describe('chat request → Anthropic Messages request (golden files)', () => {
  requestGoldens<RequestOptions>(DIR, 'anthropic', toMessagesRequest);
});

describe('Anthropic message → chat.completion (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; options: ResponseOptions; anthropic: unknown; chat: unknown }>(DIR, 'response-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      golden.expectAt('chat', toChatCompletion(golden.case.anthropic, golden.case.options).completion);
    });
  }
});

interface StreamCase {
  about: string;
  options: StreamOptions;
  /** The events, each data as JSON (files written for the translator); or, for a recorded stream, */
  events?: Array<{ event: string; data: unknown }>;
  /** the SSE text as recorded (files with a `source`), read by the gateway's SSE parser. */
  sse?: string;
  chunks: unknown;
  failure: unknown;
}

/** Feeds the events one by one; the chunks sent until the end or the failure, and the failure. */
function translateEvents(options: StreamOptions, events: Parameters<typeof translatedStream>[1]): { chunks: unknown[]; failure: unknown } {
  return translatedStream(new MessagesStreamTranslator(options), events, (err) =>
    err instanceof AttemptFailure ? { kind: err.kind, code: err.code, status: err.status, message: err.message, detail: err.detail } : { code: (err as GatewayError).code, message: (err as Error).message },
  );
}

describe('Anthropic stream → chat.completion.chunk events (golden files)', () => {
  for (const golden of goldenFiles<StreamCase>(DIR, 'stream-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const { chunks, failure } = translateEvents(golden.case.options, golden.case.events ?? recordedSse(golden.case.sse ?? ''));
      golden.expectAt('chunks', chunks);
      golden.expectAt('failure', failure);
      // CONTRACT.md, Streams: exactly one role chunk, the first.
      const roles = chunks.filter((c) => typeof c === 'object' && (c as { choices: Array<{ delta: { role?: string } }> }).choices[0]?.delta.role !== undefined);
      expect(roles).toHaveLength(1);
      expect(chunks[0]).toBe(roles[0]);
    });
  }
});

describe('text deltas read in place', () => {
  const OPTIONS: StreamOptions = { created: 1, includeUsage: false, jsonMode: false };
  const started = (): MessagesStreamTranslator => {
    const t = new MessagesStreamTranslator(OPTIONS);
    t.event('message_start', JSON.stringify({ type: 'message_start', message: { id: 'msg_1', model: 'claude', usage: { input_tokens: 1, output_tokens: 0 } } }));
    t.event('content_block_start', JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
    return t;
  };
  const deltaData = (index: number, text: string): string => JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });

  it('any text gives the chunk the parse would: same text once decoded', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', minLength: 1 }), (text) => {
      const data = deltaData(0, text);
      expect(textDeltaInPlace(data)).not.toBeNull();
      const [chunk] = sseData(started().event('content_block_delta', data)) as Array<{ choices: Array<{ delta: { content: string } }> }>;
      expect(chunk?.choices[0]?.delta.content).toBe(text);
    }), { numRuns: 200 });
  });

  it('escapes spelled otherwise than JSON.stringify\'s still decode to the same text', () => {
    const data = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u0041\\/\\u00e9"}}';
    expect(textDeltaInPlace(data)?.escaped).toBe('\\u0041\\/\\u00e9');
    const [chunk] = sseData(started().event('content_block_delta', data)) as Array<{ choices: Array<{ delta: { content: string } }> }>;
    expect(chunk?.choices[0]?.delta.content).toBe('A/é');
  });

  it('anything but a well-formed text delta is left to the parse', () => {
    for (const data of [
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\x"}}', // a bad escape
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","x":"b"}}', // a bare quote: another key
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ends\\"}}', // the closing quote escaped
      '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}', // empty
      '{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"a"}}', // not a JSON number
      '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"a"}}',
    ]) expect(textDeltaInPlace(data), data).toBeNull();
    // A text the parse refuses stays refused.
    expect(() => started().event('content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\x"}}')).toThrow(GatewayError);
  });

  it('a delta of a block that is not text (or of no block) is not sent as text', () => {
    expect(started().event('content_block_delta', deltaData(3, 'stray'))).toBe('');
  });
});

describe('Anthropic errors and headers', () => {
  for (const golden of goldenFiles<{ about: string; status: number; body: string; compatible: unknown }>(DIR, 'error-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const { contentType, body } = anthropicError(golden.case.status, golden.case.body);
      expect(contentType).toBe('application/json');
      golden.expectAt('compatible', JSON.parse(new TextDecoder().decode(body)));
    });
  }

  it('maps anthropic-ratelimit-* onto the allowlist (resets as seconds from now), keeps retry-after, drops the rest', () => {
    const now = Date.parse('2026-11-26T12:00:00Z');
    const headers = anthropicHeaders(
      {
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '49',
        'anthropic-ratelimit-requests-reset': '2026-11-26T12:00:12Z',
        'anthropic-ratelimit-tokens-limit': '80000',
        'anthropic-ratelimit-tokens-remaining': '79000',
        'anthropic-ratelimit-tokens-reset': 'soon',
        'anthropic-ratelimit-input-tokens-limit': '40000',
        'retry-after': '7',
        'request-id': 'req_1',
        'x-api-key-echo': 'sk-ant-secret',
      },
      now,
    );
    const map = Object.fromEntries(Array.from({ length: headers.length / 2 }, (_, i) => [headers[2 * i], headers[2 * i + 1]]));
    expect(map).toEqual({
      'retry-after': '7',
      'x-ratelimit-limit-requests': '50',
      'x-ratelimit-remaining-requests': '49',
      'x-ratelimit-reset-requests': '12s',
      'x-ratelimit-limit-tokens': '80000',
      'x-ratelimit-remaining-tokens': '79000',
      'x-ratelimit-reset-tokens': 'soon',
    });
  });
});

describe('what the request translation refuses', () => {
  const base = { model: 'a', messages: [{ role: 'user', content: 'hi' }] };
  const options = { model: 'claude-fake-1', dropParams: false };
  const refusal = (body: Record<string, unknown>) => refusalOf((body) => toMessagesRequest(body, options), body);

  it.each([
    [{ n: 2 }, 'n'],
    [{ logit_bias: { '1': 5 } }, 'logit_bias'],
    [{ logprobs: true }, 'logprobs'],
    [{ seed: 1 }, 'seed'],
    [{ frequency_penalty: 0.2 }, 'frequency_penalty'],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } }, tools: [{ type: 'function', function: { name: 't' } }] }, 'response_format'],
    [{ tools: [{ type: 'custom', custom: { name: 'g' } }] }, 'tools[0].type'],
    [{ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] }, 'messages[0].content[0].type'],
    [{ messages: [{ role: 'function', name: 'f', content: 'x' }] }, 'messages[0].role'],
  ])('%j → 400 unsupported_parameter naming %s', (extra, param) => {
    expectUnsupported(refusal({ ...base, ...extra }), param);
  });

  it('tool call arguments that are not a JSON object are the caller\'s 400', () => {
    const err = refusal({ ...base, messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '[1]' } }] }] });
    expect(err.code).toBe('invalid_request');
    expect(err.message).toContain('messages[0].tool_calls[0].function.arguments');
  });
});
