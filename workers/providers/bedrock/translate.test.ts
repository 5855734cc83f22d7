/**
 * The Bedrock translators against their golden files (golden/*.json:
 * Bedrock's wire format in, the compatible form out), the event-stream
 * framing against frames the codec encodes, and what the translation
 * refuses. UPDATE_GOLDEN=1 rewrites the expected sides (read the diff).
 */
import { join } from 'node:path';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../protocol/errors.js';
import { AttemptFailure } from '../../routing/failure.js';
import { goldenFiles, judged, sseData } from '../golden.js';
import { EventStreamParser, loadAwsLibraries, type AwsLibraries } from './aws.js';
import { BATCH_SIZE, embeddingFamily, embeddingRequest, embeddingTexts, embeddingVectors, type EmbeddingFamily } from './embeddings.js';
import { bedrockError, errorTypeOf } from './errors.js';
import { toConverseRequest, type RequestOptions } from './request.js';
import { toChatCompletion, type ResponseOptions } from './response.js';
import { ConverseStreamTranslator, ERROR, EXCEPTION, textDeltaInPlace, type StreamOptions } from './stream.js';

const DIR = join(import.meta.dirname, 'golden');

/** The event-stream decoder (the codec's, loaded as the adapter loads it). */
let decode: AwsLibraries['decode'];
beforeAll(async () => {
  ({ decode } = await loadAwsLibraries());
});

describe('chat request → Converse request (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; options: RequestOptions; chat?: Record<string, unknown>; cases?: Array<Record<string, unknown>>; bedrock: unknown }>(DIR, 'request-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const bodies = golden.case.cases ?? [golden.case.chat as Record<string, unknown>];
      const before = JSON.stringify(bodies);
      const out = bodies.map((body) => toConverseRequest(body, golden.case.options));
      golden.expectAt('bedrock', golden.case.cases === undefined ? out[0] : out);
      // The body is the attempt loop's, shared by every attempt: never changed.
      expect(JSON.stringify(bodies)).toBe(before);
    });
  }
});

describe('Converse answer → chat.completion (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; options: ResponseOptions; bedrock: unknown; chat: unknown }>(DIR, 'response-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      golden.expectAt('chat', toChatCompletion(golden.case.bedrock, golden.case.options).completion);
    });
  }
});

interface StreamCase {
  about: string;
  options: StreamOptions;
  /** The decoded messages (files written for the translator); or, for a recorded stream, */
  messages?: Array<{ messageType?: string; name: string; payload: unknown }>;
  /** the event-stream bytes as recorded, base64 (files with a `source`), read by the adapter's EventStreamParser. */
  eventStreamBase64?: string;
  chunks: unknown;
  failure: unknown;
}

/** A golden message as the parser hands it on: its event name (exceptions and errors prefixed) and payload. */
const asEvent = (m: NonNullable<StreamCase['messages']>[number]): { name: string; data: string } => ({
  name: m.messageType === 'exception' ? EXCEPTION + m.name : m.messageType === 'error' ? ERROR + m.name : m.name,
  data: typeof m.payload === 'string' ? m.payload : JSON.stringify(m.payload),
});

const failureOf = (err: unknown) =>
  err instanceof AttemptFailure
    ? { kind: err.kind, code: err.code, status: err.status, message: err.message, detail: err.detail, answer: err.answer === null ? null : { status: err.answer.status, body: JSON.parse(toUtf8(err.answer.body as Uint8Array)) as unknown } }
    : { code: (err as GatewayError).code, message: (err as Error).message };

/** Recorded event-stream bytes as the adapter's parser hands them on (aws.ts: prelude, CRCs and headers read by the codec). */
function recordedMessages(base64: string): Array<{ name: string; data: string }> {
  const parser = new EventStreamParser(decode, 1 << 20);
  const out: Array<{ name: string; data: string }> = [];
  for (const batch of [parser.push(Buffer.from(base64, 'base64')), parser.finish()]) batch.events.forEach((data, i) => out.push({ name: batch.names?.[i] ?? '', data }));
  return out;
}

/** Feeds the messages one by one; the chunks sent until the end or the failure, and the failure. */
function translateMessages(options: StreamOptions, events: Array<{ name: string; data: string }>): { chunks: unknown[]; failure: unknown } {
  const translator = new ConverseStreamTranslator(options);
  let sse = '';
  try {
    for (const { name, data } of events) sse = judged(translator, sse + translator.event(name, data));
    sse = judged(translator, sse + translator.end());
  } catch (err) {
    return { chunks: sseData(sse), failure: failureOf(err) };
  }
  return { chunks: sseData(sse), failure: null };
}

describe('ConverseStream → chat.completion.chunk events (golden files)', () => {
  for (const golden of goldenFiles<StreamCase>(DIR, 'stream-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const events = golden.case.messages?.map(asEvent) ?? recordedMessages(golden.case.eventStreamBase64 ?? '');
      const { chunks, failure } = translateMessages(golden.case.options, events);
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
  const OPTIONS: StreamOptions = { id: 'chatcmpl-1', model: 'm', created: 1, includeUsage: false, jsonMode: false };
  const started = (): ConverseStreamTranslator => {
    const t = new ConverseStreamTranslator(OPTIONS);
    t.event('messageStart', '{"role":"assistant","p":"abcd"}');
    return t;
  };
  const contentOf = (sse: string): unknown => (sseData(sse) as Array<{ choices: Array<{ delta: { content?: string } }> }>)[0]?.choices[0]?.delta.content;
  // As Bedrock writes it: index, delta, then (mostly) the padding.
  const deltaData = (index: number, text: string, padding: string | null): string => JSON.stringify({ contentBlockIndex: index, delta: { text }, ...(padding === null ? {} : { p: padding }) });

  it('any text, padded or not, gives the chunk the parse would: same text once decoded', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', minLength: 1 }), fc.option(fc.string({ unit: 'binary' })), (text, padding) => {
      const data = deltaData(0, text, padding);
      expect(textDeltaInPlace(data)).not.toBeNull();
      expect(contentOf(started().event('contentBlockDelta', data))).toBe(text);
      // The same event with its keys in another order goes through the parse: the same chunk.
      const reordered = JSON.stringify({ delta: { text }, contentBlockIndex: 0 });
      expect(textDeltaInPlace(reordered)).toBeNull();
      expect(started().event('contentBlockDelta', reordered)).toBe(started().event('contentBlockDelta', deltaData(0, text, null)));
    }), { numRuns: 300 });
  });

  it('escapes spelled otherwise than JSON.stringify\'s still decode to the same text', () => {
    const data = '{"contentBlockIndex":0,"delta":{"text":"\\u0041\\/\\u00e9"},"p":"abc"}';
    expect(textDeltaInPlace(data)?.escaped).toBe('\\u0041\\/\\u00e9');
    expect(contentOf(started().event('contentBlockDelta', data))).toBe('A/é');
  });

  it('anything but a well-formed text delta is left to the parse', () => {
    for (const data of [
      '{"contentBlockIndex":0,"delta":{"text":"a\\x"},"p":"abc"}', // a bad escape
      '{"contentBlockIndex":0,"delta":{"text":"a","x":"b"},"p":"abc"}', // a bare quote: another key
      '{"contentBlockIndex":0,"delta":{"text":"ends\\"}}', // the closing quote escaped
      '{"contentBlockIndex":0,"delta":{"text":"ends\\"},"p":"abc"}', // likewise, padded
      '{"contentBlockIndex":0,"delta":{"text":"a"},"p":"b\\x"}', // a bad escape in the padding
      '{"contentBlockIndex":0,"delta":{"text":"a"},"p":"b","q":1}', // more after the padding
      '{"contentBlockIndex":0,"delta":{"text":""},"p":"abc"}', // empty
      '{"contentBlockIndex":01,"delta":{"text":"a"}}', // not a JSON number
      '{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{}"}},"p":"abc"}',
    ]) expect(textDeltaInPlace(data), data).toBeNull();
    // What the parse refuses stays refused.
    expect(() => started().event('contentBlockDelta', '{"contentBlockIndex":0,"delta":{"text":"a\\x"},"p":"abc"}')).toThrow(GatewayError);
    expect(() => started().event('contentBlockDelta', '{"contentBlockIndex":0,"delta":{"text":"a"},"p":"b\\x"}')).toThrow(GatewayError);
  });

  it('a text delta before messageStart is refused; one of a tool block is not sent as text', () => {
    expect(() => new ConverseStreamTranslator(OPTIONS).event('contentBlockDelta', deltaData(0, 'early', 'ab'))).toThrow(/before messageStart/);
    const t = started();
    t.event('contentBlockStart', JSON.stringify({ contentBlockIndex: 1, start: { toolUse: { toolUseId: 't1', name: 'f' } } }));
    expect(t.event('contentBlockDelta', deltaData(1, 'stray', 'ab'))).toBe('');
  });
});

describe('Bedrock errors', () => {
  for (const golden of goldenFiles<{ about: string; status: number; errorType: string | null; body: string; compatible: unknown }>(DIR, 'error-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const { contentType, body } = bedrockError(golden.case.status, golden.case.body, errorTypeOf(golden.case.errorType ?? undefined));
      expect(contentType).toBe('application/json');
      golden.expectAt('compatible', JSON.parse(new TextDecoder().decode(body)));
    });
  }

  it('x-amzn-errortype: the name before the first colon, a namespace before # dropped, anything else null', () => {
    expect(errorTypeOf('ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/')).toBe('ThrottlingException');
    expect(errorTypeOf('com.amazon.coral.service#UnrecognizedClientException')).toBe('UnrecognizedClientException');
    expect(errorTypeOf(['ValidationException'])).toBe('ValidationException');
    expect(errorTypeOf('<script>')).toBeNull();
    expect(errorTypeOf(undefined)).toBeNull();
  });
});

describe('embeddings through InvokeModel (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; family: EmbeddingFamily; texts: string[]; chat: Record<string, unknown>; request: unknown; answer: unknown; vectors: unknown }>(DIR, 'embeddings-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const texts = embeddingTexts(golden.case.chat.input);
      expect(texts.slice(0, BATCH_SIZE[golden.case.family])).toEqual(golden.case.texts);
      golden.expectAt('request', embeddingRequest(golden.case.family, golden.case.texts, golden.case.chat));
      golden.expectAt('vectors', embeddingVectors(golden.case.family, golden.case.answer, golden.case.texts.length));
    });
  }

  it('the family from the model id (cross-region prefixes too); anything else has none', () => {
    expect(embeddingFamily('amazon.titan-embed-text-v2:0')).toBe('titan');
    expect(embeddingFamily('amazon.titan-embed-g1-text-02')).toBe('titan');
    expect(embeddingFamily('cohere.embed-multilingual-v3')).toBe('cohere');
    expect(embeddingFamily('us.cohere.embed-v4:0')).toBe('cohere');
    expect(embeddingFamily('amazon.titan-embed-image-v1')).toBeNull();
    expect(embeddingFamily('anthropic.claude-3-haiku-20240307-v1:0')).toBeNull();
    expect(embeddingFamily('arn:aws:bedrock:us-east-1:1:application-inference-profile/x')).toBeNull();
  });

  it('token arrays, an empty input and an unknown input_type are refused', () => {
    expect(() => embeddingTexts([[1, 2, 3]])).toThrow(/input\[0\]: the bedrock provider embeds text/);
    expect(() => embeddingTexts([])).toThrow(/must not be empty/);
    expect(() => embeddingRequest('cohere', ['a'], { input_type: 'query' })).toThrow(/input_type: must be one of/);
    expect(() => embeddingVectors('cohere', { embeddings: [[1]] }, 2)).toThrow(/no embeddings for every input/);
  });
});

describe('the event-stream framing (EventStreamParser over frames the codec encodes)', () => {
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  const frame = (type: string, payload: unknown) =>
    codec.encode({ headers: { ':message-type': { type: 'string', value: 'event' }, ':event-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' } }, body: fromUtf8(JSON.stringify(payload)) });
  const join = (parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));

  it('gives each whole message once, whatever the chunking: byte by byte, and several in one chunk', () => {
    const bytes = join([frame('messageStart', { role: 'assistant' }), frame('contentBlockDelta', { delta: { text: 'héllo' } }), frame('messageStop', { stopReason: 'end_turn' })]);
    const all = new EventStreamParser(decode, 1 << 20).push(bytes);
    expect(all.names).toEqual(['messageStart', 'contentBlockDelta', 'messageStop']);
    expect(all.events.map((e) => JSON.parse(e) as unknown)).toEqual([{ role: 'assistant' }, { delta: { text: 'héllo' } }, { stopReason: 'end_turn' }]);
    const parser = new EventStreamParser(decode, 1 << 20);
    const names: Array<string | null> = [];
    const events: string[] = [];
    for (let i = 0; i < bytes.length; i++) {
      const batch = parser.push(bytes.subarray(i, i + 1));
      names.push(...(batch.names ?? []));
      events.push(...batch.events);
    }
    expect({ names, events }).toEqual({ names: all.names, events: all.events });
    expect(parser.finish().events).toEqual([]);
  });

  it('exception and error frames carry their names; the payload of an error frame is its :error-message', () => {
    const exception = codec.encode({ headers: { ':message-type': { type: 'string', value: 'exception' }, ':exception-type': { type: 'string', value: 'throttlingException' } }, body: fromUtf8('{"message":"slow down"}') });
    const error = codec.encode({ headers: { ':message-type': { type: 'string', value: 'error' }, ':error-code': { type: 'string', value: 'InternalFailure' }, ':error-message': { type: 'string', value: 'boom' } }, body: new Uint8Array(0) });
    const batch = new EventStreamParser(decode, 1 << 20).push(join([exception, error]));
    expect(batch.names).toEqual(['exception:throttlingException', 'error:InternalFailure']);
    expect(batch.events).toEqual(['{"message":"slow down"}', 'boom']);
  });

  it('bytes that are not UTF-8 are decoded with U+FFFD, as the SDK decodes them', () => {
    const bytes = codec.encode({ headers: { ':message-type': { type: 'string', value: 'event' }, ':event-type': { type: 'string', value: 'contentBlockDelta' } }, body: Uint8Array.from([0x61, 0xff, 0x62]) });
    const batch = new EventStreamParser(decode, 1 << 20).push(bytes);
    expect(batch.events).toEqual([toUtf8(Uint8Array.from([0x61, 0xff, 0x62]))]);
    expect(batch.events).toEqual(['a\ufffdb']);
  });

  it('a corrupted message (CRC), a message over the cap (before anything is allocated for it) and a stream ending mid-message fail', () => {
    const good = frame('messageStart', { role: 'assistant' });
    const bad = good.slice();
    bad[bad.length - 6] = (bad[bad.length - 6] as number) ^ 0xff;
    expect(() => new EventStreamParser(decode, 1 << 20).push(bad)).toThrow(expect.objectContaining({ code: 'upstream_invalid_response' }));
    const huge = new Uint8Array([0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    expect(() => new EventStreamParser(decode, 1 << 20).push(huge)).toThrow(expect.objectContaining({ code: 'upstream_response_too_large' }));
    const cut = new EventStreamParser(decode, 1 << 20);
    expect(cut.push(good.subarray(0, good.length - 1)).events).toEqual([]);
    expect(() => cut.finish()).toThrow(expect.objectContaining({ code: 'upstream_reset' }));
    const prelude = new EventStreamParser(decode, 1 << 20);
    prelude.push(good.subarray(0, 2));
    expect(() => prelude.finish()).toThrow(expect.objectContaining({ code: 'upstream_reset' }));
  });
});

describe('what the request translation refuses', () => {
  const base = { model: 'a', messages: [{ role: 'user', content: 'hi' }] };
  const refusal = (body: Record<string, unknown>) => {
    try {
      toConverseRequest(body, { dropParams: false });
    } catch (err) {
      return err as GatewayError;
    }
    throw new Error('not refused');
  };
  const weather = { type: 'function', function: { name: 'get_weather' } };

  it.each([
    [{ n: 2 }, 'n'],
    [{ logit_bias: { '1': 5 } }, 'logit_bias'],
    [{ seed: 1 }, 'seed'],
    [{ presence_penalty: 0.5 }, 'presence_penalty'],
    [{ parallel_tool_calls: false, tools: [weather] }, 'parallel_tool_calls'],
    [{ response_format: { type: 'json_object' }, tools: [weather] }, 'response_format'],
    [{ tools: [{ type: 'custom', custom: { name: 'g' } }] }, 'tools[0].type'],
    [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] }, 'messages[0].content[0].image_url.url'],
    [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/bmp;base64,Qk0=' } }] }] }, 'messages[0].content[0].image_url.url'],
    [{ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] }, 'messages[0].content[0].type'],
    [{ tools: [weather], tool_choice: 'none', messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [{ id: 't', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 't', content: 'ok' }] }, 'tool_choice'],
  ])('%j → 400 unsupported_parameter naming %s', (extra, param) => {
    const err = refusal({ ...base, ...extra });
    expect(err).toBeInstanceOf(GatewayError);
    expect(err.code).toBe('unsupported_parameter');
    expect(err.message.startsWith(`${param}:`)).toBe(true);
    expect(err.message).toContain('drop_params');
  });

  it('a parameter the call marks droppable (a Messages translation\'s derived parallel_tool_calls) is dropped, not refused', () => {
    const out = toConverseRequest({ ...base, tools: [weather], parallel_tool_calls: false }, { dropParams: false, droppable: new Set(['parallel_tool_calls']) });
    expect(out).not.toHaveProperty('parallel_tool_calls');
    expect(out.toolConfig).toMatchObject({ tools: [{ toolSpec: { name: 'get_weather' } }] });
  });

  it("tool call arguments that are not a JSON object are the caller's 400", () => {
    const err = refusal({ ...base, messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '[1]' } }] }] });
    expect(err.code).toBe('invalid_request');
    expect(err.message).toContain('messages[0].tool_calls[0].function.arguments');
  });
});
