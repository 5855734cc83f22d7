/**
 * MessagesSink (sink.ts) on its own: what each attempt sends (the body
 * passed through to a deployment that speaks Messages, with the caller's
 * anthropic-* headers; the chat translation, made once, to any other, its
 * derived parameters droppable), and what reaches the front: replies and
 * streams passed through as they are or translated back, provider errors
 * in Anthropic's shape, and a failure before or after a stream's commit.
 */
import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../../protocol/config.js';
import type { ClientSink } from '../../routing/attempts.js';
import { countingIds, parseSse } from './golden.js';
import { MessagesSink, type MessagesSinkOptions } from './sink.js';

const upstream = (provider: string, upstreamModel = 'up-model'): Upstream => ({ provider, upstreamModel, apiBase: 'http://127.0.0.1:1', credentials: 'present' }) as unknown as Upstream;
const ANTHROPIC = upstream('anthropic', 'claude-up');
const OPENAI = upstream('openai', 'gpt-up');
const HEADERS = ['anthropic-version', '2023-06-01', 'anthropic-beta', 'b1,b2'];

/** What reaches the front's sink, in order, bodies decoded. */
function recorder() {
  const calls: Array<[string, ...unknown[]]> = [];
  const text = (b: unknown) => Buffer.concat((b instanceof Uint8Array ? [b] : (b as Uint8Array[])).map((p) => Buffer.from(p))).toString('utf8');
  const sink: ClientSink = {
    reply: (status, contentType, _h, body, usage) => void calls.push(['reply', status, contentType, text(body), usage]),
    head: () => void calls.push(['head']),
    data: (bytes) => void calls.push(['data', text(bytes)]),
    end: (usage) => void calls.push(['end', usage]),
    fail: (error) => void calls.push(['fail', error]),
    routed: () => undefined,
  };
  return { sink, calls, sse: () => calls.filter((c) => c[0] === 'data').map((c) => c[1]).join('') };
}

const options = (extra: Partial<MessagesSinkOptions> = {}): MessagesSinkOptions => ({ headers: HEADERS, native: (u) => u.provider === 'anthropic', requestId: 'req_1', op: 'messages', ids: countingIds(), ...extra });
const request = { model: 'alias', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 'f', input_schema: { type: 'object' } }], tool_choice: { type: 'auto', disable_parallel_tool_use: true }, top_k: 3 };
const bytes = (s: string) => new TextEncoder().encode(s);
const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 5, model: 'gpt-up', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

describe('MessagesSink.attempt', () => {
  it('a deployment that speaks Messages: the body as sent with only model replaced, the caller\'s headers, nothing droppable', () => {
    const messages = new MessagesSink(recorder().sink, request, options());
    expect(messages.attempt(ANTHROPIC)).toEqual({ op: 'messages', body: { ...request, model: 'claude-up' }, headers: HEADERS });
    expect(request.model).toBe('alias');
  });

  it('any other: the chat translation (made once, its model set per deployment), parallel_tool_calls marked droppable, no headers', () => {
    const messages = new MessagesSink(recorder().sink, request, options());
    const first = messages.attempt(OPENAI);
    expect(first.op).toBe('chat');
    expect(first.headers).toBeUndefined();
    expect(first.body).toMatchObject({ model: 'gpt-up', max_completion_tokens: 32, parallel_tool_calls: false, tool_choice: 'auto' });
    expect(first.body).not.toHaveProperty('top_k');
    expect([...(first.droppable ?? [])]).toEqual(['parallel_tool_calls']);
    const second = messages.attempt(upstream('gemini', 'gemini-up'));
    expect(second.body).toBe(first.body);
    expect(second.body.model).toBe('gemini-up');
  });

  it('count_tokens goes as it is to any deployment (the session picks the counter)', () => {
    const body = { model: 'alias', messages: [{ role: 'user', content: 'hi' }] };
    const counts = new MessagesSink(recorder().sink, body, options({ op: 'count_tokens' }));
    expect(counts.attempt(OPENAI)).toEqual({ op: 'count_tokens', body: { ...body, model: 'gpt-up' }, headers: HEADERS });
  });

  it('a block chat cannot carry: the translation throws its 400 for the attempt loop to answer', () => {
    const messages = new MessagesSink(recorder().sink, { ...request, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }] }] }, options());
    expect(() => messages.attempt(OPENAI)).toThrow(/unsupported parameter/i);
    expect(messages.attempt(ANTHROPIC).op).toBe('messages');
  });
});

describe('MessagesSink: what reaches the front', () => {
  it('passed through: a reply and a stream\'s bytes as they came', () => {
    const { sink, calls } = recorder();
    const messages = new MessagesSink(sink, request, options());
    messages.attempt(ANTHROPIC);
    const message = '{"id":"msg_1","type":"message"}';
    messages.reply(200, 'application/json', [], bytes(message), null, 3);
    messages.head([]);
    messages.data(bytes('event: message_start\ndata: {}\n\n'));
    messages.end({ prompt: 1, completion: 2 }, 4);
    expect(calls).toEqual([['reply', 200, 'application/json', message, null], ['head'], ['data', 'event: message_start\ndata: {}\n\n'], ['end', { prompt: 1, completion: 2 }]]);
  });

  it('translated: a chat completion becomes a Message (tool call id, stop reason, usage)', () => {
    const { sink, calls } = recorder();
    const messages = new MessagesSink(sink, request, options());
    messages.attempt(OPENAI);
    const completion = { id: 'chatcmpl-1', object: 'chat.completion', created: 5, model: 'gpt-up', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 } };
    messages.reply(200, 'application/json', [], bytes(JSON.stringify(completion)), null, 3);
    const [kind, status, contentType, body] = calls[0]!;
    expect([kind, status, contentType]).toEqual(['reply', 200, 'application/json']);
    expect(JSON.parse(body as string)).toMatchObject({ type: 'message', role: 'assistant', model: 'gpt-up', content: [{ type: 'tool_use', id: 'call_1', name: 'f', input: { a: 1 } }], stop_reason: 'tool_use', usage: { input_tokens: 10, output_tokens: 4 } });
  });

  it('translated: a reply that is not JSON fails as upstream_invalid_response', () => {
    const { sink, calls } = recorder();
    const messages = new MessagesSink(sink, request, options());
    messages.attempt(OPENAI);
    messages.reply(200, 'application/json', [], bytes('<html>'), null, 3);
    expect(calls).toEqual([['fail', { code: 'upstream_invalid_response', message: 'the provider response is not JSON' }]]);
  });

  it("a provider 4xx: Anthropic's own error as sent; the compatible envelope rewritten into Anthropic's shape with the request id", () => {
    const { sink, calls } = recorder();
    const messages = new MessagesSink(sink, request, options());
    messages.attempt(ANTHROPIC);
    const own = '{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}';
    messages.reply(429, 'application/json', [], bytes(own), null, 1);
    messages.attempt(OPENAI);
    messages.reply(400, 'application/json', [], bytes('{"error":{"message":"bad thing","type":"invalid_request_error"}}'), null, 1);
    expect(calls[0]).toEqual(['reply', 429, 'application/json', own, null]);
    expect(JSON.parse(calls[1]![3] as string)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'bad thing' }, request_id: 'req_1' });
  });

  it('translated stream in pieces that split events: one clean Anthropic event sequence, the usage from the stream', () => {
    const { sink, calls, sse } = recorder();
    const messages = new MessagesSink(sink, { ...request, stream: true }, options());
    messages.attempt(OPENAI);
    messages.head([]);
    const whole = chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Hel' }) + chunk({ content: 'lo' }) + chunk({}, 'stop') + `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 5, model: 'gpt-up', choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } })}\n\ndata: [DONE]\n\n`;
    const cut = [17, 60, 200, whole.length - 3];
    let at = 0;
    for (const end of [...cut, whole.length]) {
      messages.data([bytes(whole.slice(at, end))]);
      at = end;
    }
    messages.end(null, 5);
    const events = parseSse(sse());
    expect(events.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(events.filter((e) => e.event === 'content_block_delta').map((e) => (e.data as { delta: { text: string } }).delta.text).join('')).toBe('Hello');
    expect(events.at(-2)!.data).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } });
    expect(calls.at(-1)).toEqual(['end', { prompt: 7, completion: 2 }]);
  });

  it('translated stream in whole reads, ASCII or not (a batch decoded once, or event by event): the same text, each character whole', () => {
    for (const texts of [['Hel', 'lo'], ['Hé', 'llo ✓ ', '😀', '\u2028']]) {
      const { sink, sse } = recorder();
      const messages = new MessagesSink(sink, { ...request, stream: true }, options());
      messages.attempt(OPENAI);
      messages.head([]);
      messages.data(bytes(chunk({ role: 'assistant', content: '' }) + texts.map((t) => chunk({ content: t })).join('')));
      messages.data([bytes(chunk({}, 'stop')), bytes('data: [DONE]\n\n')]);
      messages.end(null, 5);
      const events = parseSse(sse());
      expect(events.filter((e) => e.event === 'content_block_delta').map((e) => (e.data as { delta: { text: string } }).delta.text)).toEqual(texts);
      expect(events.at(-1)!.event).toBe('message_stop');
    }
  });

  it('fail before the commit is the HTTP error as it is; after it, one event: error (Anthropic\'s type for the code) on either path', () => {
    const before = recorder();
    const early = new MessagesSink(before.sink, request, options());
    early.attempt(ANTHROPIC);
    early.fail({ code: 'upstream_timeout', message: 'slow' }, []);
    expect(before.calls).toEqual([['fail', { code: 'upstream_timeout', message: 'slow' }]]);

    const passed = recorder();
    const late = new MessagesSink(passed.sink, request, options());
    late.attempt(ANTHROPIC);
    late.head([]);
    late.fail({ code: 'upstream_reset', message: 'gone' }, []);
    expect(passed.calls.at(-1)).toEqual(['fail', { code: 'upstream_reset', message: 'gone', events: 'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"gone"}}\n\n' }]);

    const translated = recorder();
    const chat = new MessagesSink(translated.sink, { ...request, stream: true }, options());
    chat.attempt(OPENAI);
    chat.head([]);
    chat.data(bytes(chunk({ role: 'assistant', content: 'Hi' })));
    chat.fail({ code: 'upstream_reset', message: 'gone' }, []);
    const failed = translated.calls.at(-1)!;
    expect(failed[0]).toBe('fail');
    const events = parseSse((failed[1] as { events: string }).events);
    expect(events.at(-1)).toMatchObject({ event: 'error' });
    expect(events.at(-1)!.data).toEqual({ type: 'error', error: { type: 'api_error', message: 'gone' } });
  });
});
