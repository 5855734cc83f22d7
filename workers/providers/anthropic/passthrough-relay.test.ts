import { describe, expect, it } from 'vitest';
import { wholePayload, type Payload } from '../../../protocol/channel.js';
import { GatewayError } from '../../../protocol/errors.js';
import { AttemptFailure } from '../../routing/failure.js';
import { messagesUsage } from '../messages-passthrough.js';
import { MessagesPassthroughRelay } from './passthrough-relay.js';

const event = (name: string, data: Record<string, unknown>): string => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
const START = event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 9, cache_read_input_tokens: 3, output_tokens: 1 } } });
const BLOCK = event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
const PING = event('ping', {});
const delta = (text: string): string => event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
const TAIL = event('content_block_stop', { index: 0 }) + event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }) + event('message_stop', {});
const STREAM = START + BLOCK + PING + delta('héllo ') + delta('wörld ✓') + TAIL;

const text = (out: Payload | null): string => (out === null ? '' : Buffer.from(wholePayload(out)).toString('utf8'));

/** The relay fed `bytes` in reads of `size` bytes: what it sent, and what it judged after each read. */
function relayed(bytes: Buffer, size: number, limit = 1 << 20): { sent: string; relay: MessagesPassthroughRelay; content: boolean[] } {
  const relay = new MessagesPassthroughRelay(limit);
  let sent = '';
  const content: boolean[] = [];
  for (let at = 0; at < bytes.length; at += size) {
    sent += text(relay.push(bytes.subarray(at, at + size)));
    content.push(relay.contentSent());
    if (relay.failure() !== null) return { sent, relay, content };
  }
  sent += text(relay.end({ verbatim: false, events: [], names: null }));
  return { sent, relay, content };
}

describe('the anthropic passthrough relay: Anthropic events as their bytes', () => {
  it('the bytes as sent, whatever the reads (an event split anywhere, a character split inside), the usage of message_start and message_delta', () => {
    const bytes = Buffer.from(STREAM);
    for (const size of [bytes.length, 1, 2, 7, 64, 333]) {
      const { sent, relay } = relayed(bytes, size);
      expect(sent).toBe(STREAM);
      expect(relay.failure()).toBeNull();
      expect(relay.usage()).toEqual({ prompt: 12, completion: 20 });
    }
  });

  it("the usage is the message's and the delta's own, read from its object alone: a usage elsewhere, nested objects, spaces, strings with quotes and braces", () => {
    const start = 'event: message_start\ndata: {"type": "message_start", "other": {"usage": {"input_tokens": 1000}}, "message": {"id": "msg_1", "content": [], "model": "a \\"usage\\": {} }", "usage": {"input_tokens": 9, "cache_creation_input_tokens": 2, "cache_creation": {"ephemeral_5m_input_tokens": 2}, "output_tokens": 1}}}\n\n';
    const end = event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7, server_tool_use: { web_search_requests: 1 } } }) + event('message_stop', {});
    const { sent, relay } = relayed(Buffer.from(start + BLOCK + delta('a') + end), 1 << 20);
    expect(sent).toBe(start + BLOCK + delta('a') + end);
    expect(relay.usage()).toEqual({ prompt: 11, completion: 7 });
  });

  it('the usage read on its bytes counts what JSON.parse would give messagesUsage, whatever its values (integers, other numbers, strings, null, objects, escapes)', () => {
    const usages = [
      '{"input_tokens":9,"output_tokens":1}',
      '{ "input_tokens" : 0 , "cache_read_input_tokens":12,"cache_creation_input_tokens":3, "output_tokens":0 }',
      '{}',
      '{"output_tokens":4}',
      '{"input_tokens":null,"cache_read_input_tokens":"7","output_tokens":true}',
      '{"input_tokens":1.5,"output_tokens":2e1}',
      '{"input_tokens":-3,"output_tokens":5}',
      '{"input_tokens":123456789012345678,"output_tokens":5}',
      '{"input_tokens":{"n":1},"cache_creation":{"ephemeral_5m_input_tokens":2,"ephemeral_1h_input_tokens":0},"service_tier":"standard","output_tokens":[1]}',
      '{"input_tokens":5,"input_tokens":6,"output_tokens":1}',
      '{"input\\u005ftokens":8,"output_tokens":1}',
      '{"note":"caf\u00e9","input_tokens":2,"server_tool_use":{"web_search_requests":1,"deep":{"x":null}},"output_tokens":3}',
      '{"input_tokens":9,\t"output_tokens":false}',
    ];
    const tail = event('content_block_stop', { index: 0 }) + event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: {} }) + event('message_stop', {});
    for (const usage of usages) {
      const start = `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","content":[],"usage":${usage}}}\n\n`;
      const { sent, relay } = relayed(Buffer.from(start + BLOCK + delta('a') + tail), 1 << 20);
      expect(sent).toBe(start + BLOCK + delta('a') + tail);
      expect(relay.usage(), usage).toEqual(messagesUsage(JSON.parse(usage), null));
    }
  });

  it('a message_start whose message has no usage object leaves the count to the message_delta; one not JSON counts nothing', () => {
    const noUsage = event('message_start', { message: { id: 'msg_1', content: [], usage: null } });
    expect(relayed(Buffer.from(noUsage + BLOCK + delta('a') + TAIL), 1 << 20).relay.usage()).toEqual({ prompt: 0, completion: 20 });
    const broken = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":9,}}}\n\n';
    const { sent, relay } = relayed(Buffer.from(broken + BLOCK + delta('a') + TAIL), 1 << 20);
    expect(sent).toBe(broken + BLOCK + delta('a') + TAIL);
    expect(relay.usage()).toEqual({ prompt: 0, completion: 20 });
  });

  it('only whole events go on: a read that ends inside an event holds that event back', () => {
    const relay = new MessagesPassthroughRelay(1 << 20);
    const cut = START.length + 10;
    expect(text(relay.push(Buffer.from(STREAM.slice(0, cut))))).toBe(START);
    expect(text(relay.push(Buffer.from(STREAM.slice(cut))))).toBe(STREAM.slice(START.length));
  });

  it('content (the commit point) from the first content_block_delta: message_start, the block start and ping are not', () => {
    const relay = new MessagesPassthroughRelay(1 << 20);
    relay.push(Buffer.from(START + BLOCK + PING));
    expect(relay.contentSent()).toBe(false);
    relay.push(Buffer.from(delta('a')));
    expect(relay.contentSent()).toBe(true);
  });

  it('an event: error before content: the events before it go on, then the attempt fails with it (retryable)', () => {
    const error = event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
    const relay = new MessagesPassthroughRelay(1 << 20);
    expect(text(relay.push(Buffer.from(START + BLOCK + error + delta('never'))))).toBe(START + BLOCK);
    expect(relay.failure()).toBeInstanceOf(AttemptFailure);
    expect(() => relay.push(Buffer.from(delta('x')))).toThrow(AttemptFailure);
  });

  it('an event: error after content goes on as sent and ends the stream', () => {
    const error = event('error', { error: { type: 'api_error', message: 'boom' } });
    const { sent, relay } = relayed(Buffer.from(START + BLOCK + delta('a') + error), 1 << 20);
    expect(sent).toBe(START + BLOCK + delta('a') + error);
    expect(relay.failure()).toBeNull();
  });

  it('a stream cut short before message_stop fails at its end (upstream_reset)', () => {
    const { relay } = relayed(Buffer.from(START + BLOCK + delta('a')), 1 << 20);
    expect(relay.failure()).toBeInstanceOf(GatewayError);
    expect((relay.failure() as GatewayError).code).toBe('upstream_reset');
  });

  it('a last event without its blank line is still an event at the end', () => {
    const { sent, relay } = relayed(Buffer.from(STREAM.slice(0, -2)), 50);
    expect(sent).toBe(STREAM);
    expect(relay.failure()).toBeNull();
  });

  it('out of Anthropic form (CRLF, a comment, an event in two data lines): the rest is parsed and written again, each line of data a data: line', () => {
    const crlf = STREAM.replaceAll('\n', '\r\n');
    for (const size of [crlf.length, 5]) expect(relayed(Buffer.from(crlf), size).sent).toBe(STREAM);
    const comment = START + ': keepalive\n\n' + BLOCK + delta('a') + TAIL;
    expect(relayed(Buffer.from(comment), comment.length).sent).toBe(START + BLOCK + delta('a') + TAIL);
    const twoLines = START + 'event: content_block_delta\ndata: {"type":"content_block_delta",\ndata: "index":0,"delta":{"type":"text_delta","text":"a"}}\n\n' + TAIL;
    const { sent, relay } = relayed(Buffer.from(twoLines), twoLines.length);
    expect(sent).toBe(twoLines);
    expect(relay.contentSent()).toBe(true);
    expect(relay.usage()).toEqual({ prompt: 12, completion: 20 });
  });

  it('bytes that are not UTF-8 are decoded as the parser does (U+FFFD), not passed on raw', () => {
    const bad = Buffer.concat([Buffer.from(START + BLOCK + 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'), Buffer.from([0xff]), Buffer.from('"}}\n\n' + TAIL)]);
    const { sent } = relayed(bad, bad.length);
    expect(sent).toContain('"text":"\uFFFD"');
    expect(Buffer.from(sent).includes(0xff)).toBe(false);
  });

  it('an event over many reads goes on whole once a read ends it; a CRLF stream that starts inside a carried event is parsed', () => {
    const big = delta('x'.repeat(5000));
    const bytes = Buffer.from(START + big + TAIL);
    const { sent, relay } = relayed(bytes, 100);
    expect(sent).toBe(START + big + TAIL);
    expect(relay.failure()).toBeNull();
    const crlf = Buffer.from((START + big + TAIL).replaceAll('\n', '\r\n'));
    expect(relayed(crlf, 100).sent).toBe(START + big + TAIL);
  });

  it('an event that grows past the limit without ending fails the attempt (upstream_response_too_large)', () => {
    const relay = new MessagesPassthroughRelay(64);
    relay.push(Buffer.from(START));
    expect(() => relay.push(Buffer.from(`event: content_block_delta\ndata: ${'x'.repeat(100)}`))).toThrow(expect.objectContaining({ code: 'upstream_response_too_large' }));
    const inPieces = new MessagesPassthroughRelay(64);
    inPieces.push(Buffer.from(`${START}event: content_block_delta\ndata: `));
    expect(() => {
      for (let i = 0; i < 10; i++) inPieces.push(Buffer.from('x'.repeat(10)));
    }).toThrow(expect.objectContaining({ code: 'upstream_response_too_large' }));
  });
});
