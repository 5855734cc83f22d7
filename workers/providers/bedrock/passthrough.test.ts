/**
 * The Bedrock Messages passthrough's pure parts (passthrough.ts): the
 * InvokeModel body a Messages call becomes, and the event stream's `chunk`
 * frames decoded into the Anthropic events they carry, through the
 * adapter's own event-stream parser and the Messages relay, wherever the
 * bytes are cut.
 */
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../protocol/errors.js';
import { AttemptFailure } from '../../routing/failure.js';
import { MessagesEvents } from '../messages-passthrough.js';
import { EventStreamParser, loadAwsLibraries, type AwsLibraries } from './aws.js';
import { BEDROCK_ANTHROPIC_VERSION, betasOf, chunkEvent, invokeBody, isAnthropicModel } from './passthrough.js';

let decode: AwsLibraries['decode'];
beforeAll(async () => {
  ({ decode } = await loadAwsLibraries());
});

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const frame = (type: 'event' | 'exception', name: string, payload: unknown): Uint8Array =>
  codec.encode({
    headers: {
      [type === 'event' ? ':event-type' : ':exception-type']: { type: 'string', value: name },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: type },
    },
    body: fromUtf8(JSON.stringify(payload)),
  });
const chunk = (event: Record<string, unknown>, p = 'abc'): Uint8Array => frame('event', 'chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64'), p });

describe('invokeBody: the InvokeModel body of a Messages call', () => {
  it('the caller\'s body without model and stream, anthropic_version first, every other field as sent and in order; the input untouched', () => {
    const body = { model: 'claude', max_tokens: 64, stream: true, system: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: 'x' }], top_k: 3, context_management: { edits: [] } };
    const copy = structuredClone(body);
    expect(JSON.stringify(invokeBody(body, []))).toBe(
      JSON.stringify({ anthropic_version: BEDROCK_ANTHROPIC_VERSION, max_tokens: 64, system: body.system, messages: body.messages, top_k: 3, context_management: { edits: [] } }),
    );
    expect(body).toEqual(copy);
  });

  it('the anthropic-beta values, from one header or several, comma-separated, trimmed, blanks left out, as anthropic_beta; none without betas', () => {
    const headers = ['anthropic-version', '2023-06-01', 'anthropic-beta', 'a-2025-01-01,  b-2025-02-02 ,', 'anthropic-beta', ' c-2025-03-03'];
    expect(betasOf(headers)).toEqual(['a-2025-01-01', 'b-2025-02-02', 'c-2025-03-03']);
    expect(invokeBody({ model: 'm', max_tokens: 1, messages: [] }, headers).anthropic_beta).toEqual(['a-2025-01-01', 'b-2025-02-02', 'c-2025-03-03']);
    expect(invokeBody({ model: 'm', max_tokens: 1, messages: [] }, ['anthropic-version', '2023-06-01'])).not.toHaveProperty('anthropic_beta');
    expect(invokeBody({ model: 'm', max_tokens: 1, messages: [] }, ['anthropic-beta', ' , '])).not.toHaveProperty('anthropic_beta');
  });

  it('a Claude model on Bedrock: a model id, an inference profile or an ARN naming anthropic.', () => {
    expect(['anthropic.claude-3-5-sonnet-20240620-v1:0', 'us.anthropic.claude-sonnet-4-v1:0', 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-fake-v1:0'].every(isAnthropicModel)).toBe(true);
    expect(['amazon.nova-lite-v1:0', 'meta.llama3-70b-instruct-v1:0'].some(isAnthropicModel)).toBe(false);
  });
});

describe('chunkEvent: one frame of the response stream', () => {
  it('a chunk gives the JSON its base64 bytes carry, UTF-8 included; another event gives nothing', () => {
    const event = JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'héllo ✓ 🌍' } });
    expect(chunkEvent('chunk', JSON.stringify({ bytes: Buffer.from(event).toString('base64'), p: 'abcd' }))).toBe(event);
    expect(chunkEvent('initial-response', '{}')).toBeNull();
    expect(chunkEvent(null, '{}')).toBeNull();
  });

  it('read in place as Bedrock writes it or parsed otherwise, the same event: padding or none, other spacing and order, an escaped slash', () => {
    const event = JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '??>>~ é' } });
    const base64 = Buffer.from(event).toString('base64');
    expect(base64).toContain('/');
    for (const payload of [`{"bytes":"${base64}"}`, `{"bytes":"${base64}","p":"abcdefghij0123"}`, `{ "bytes": "${base64}" }`, `{"p":"x","bytes":"${base64}"}`, `{"bytes":"${base64.replaceAll('/', '\\/')}"}`, `{"bytes":"${base64}","p":"a-b"}`]) {
      expect(chunkEvent('chunk', payload), payload).toBe(event);
    }
    expect(() => chunkEvent('chunk', `{"bytes":"${base64}",}`)).toThrow(GatewayError);
    expect(() => chunkEvent('chunk', `{"bytes":"${base64}"`)).toThrow(GatewayError);
  });

  it('an exception frame is the attempt\'s failure with the status AWS gives it; a chunk without bytes is an invalid response', () => {
    const throttled = (() => {
      try {
        chunkEvent('exception:throttlingException', '{"message":"Too many tokens"}');
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(throttled).toBeInstanceOf(AttemptFailure);
    expect((throttled as AttemptFailure).status).toBe(429);
    expect(() => chunkEvent('exception:modelStreamErrorException', '{"message":"Model stream error"}')).toThrow(AttemptFailure);
    expect(() => chunkEvent('chunk', '{"p":"abc"}')).toThrow(GatewayError);
    expect(() => chunkEvent('chunk', 'not json')).toThrow(GatewayError);
  });
});

describe('a whole response stream: frames → the adapter\'s parser → the Messages relay', () => {
  const events: Array<Record<string, unknown> & { type: string }> = [
    { type: 'message_start', message: { id: 'msg_bdrk_1', type: 'message', role: 'assistant', model: 'claude', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 30, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } },
    { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '"Zürich"}' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 20 } },
    { type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 30, outputTokenCount: 20, invocationLatency: 321, firstByteLatency: 123 } },
  ];
  const expected = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
  const bytes = Buffer.concat(events.map((e, i) => chunk(e, 'p'.repeat(1 + i * 3))));

  /** The SSE text the relay writes for the stream's bytes cut at `cuts`, and the usage it read. */
  function relay(cuts: readonly number[]): { text: string; usage: unknown } {
    const parser = new EventStreamParser(decode, 1 << 20);
    const messages = new MessagesEvents(chunkEvent);
    let text = '';
    const points = [0, ...cuts, bytes.length];
    for (let i = 0; i + 1 < points.length; i++) {
      const batch = parser.push(bytes.subarray(points[i], points[i + 1]));
      batch.events.forEach((data, j) => (text += messages.event(batch.names?.[j] ?? null, data)));
    }
    parser.finish();
    text += messages.end();
    return { text, usage: messages.usage };
  }

  it('each chunk is the SSE event its type names, its JSON unchanged (the invocation metrics too); the usage read from message_start and message_delta', () => {
    const { text, usage } = relay([]);
    expect(text).toBe(expected);
    expect(usage).toEqual({ prompt: 30, completion: 20 });
  });

  it('cut at every byte offset (and at every byte), the same events', () => {
    for (let at = 1; at < bytes.length; at++) expect(relay([at]).text).toBe(expected);
    expect(relay(Array.from({ length: bytes.length - 1 }, (_, i) => i + 1)).text).toBe(expected);
  });

  it('an exception frame before content fails the attempt; a stream that ends before message_stop is a reset', () => {
    const messages = new MessagesEvents(chunkEvent);
    const parser = new EventStreamParser(decode, 1 << 20);
    const batch = parser.push(Buffer.concat([chunk(events[0]!), frame('exception', 'throttlingException', { message: 'slow down' })]));
    expect(messages.event(batch.names?.[0] ?? null, batch.events[0]!)).toContain('event: message_start');
    expect(() => messages.event(batch.names?.[1] ?? null, batch.events[1]!)).toThrow(AttemptFailure);
    const cut = new MessagesEvents(chunkEvent);
    cut.event('chunk', JSON.stringify({ bytes: Buffer.from(JSON.stringify(events[0])).toString('base64') }));
    expect(() => cut.end()).toThrow(GatewayError);
  });
});
