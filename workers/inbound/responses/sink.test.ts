import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../../protocol/config.js';
import type { ClientSink } from '../../routing/attempts.js';
import { countingIds, parseSse } from './golden.js';
import { ResponsesSink } from './sink.js';

const upstream = (responsesApi: boolean): Upstream =>
  ({ provider: 'openai', upstreamModel: 'gpt-up', apiBase: 'http://127.0.0.1:1/v1', apiKey: null, credentials: 'present', credentialsSource: null, responsesApi }) as unknown as Upstream;

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

const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 5, model: 'gpt-up', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const bytes = (s: string) => new TextEncoder().encode(s);

describe('ResponsesSink', () => {
  it('attempt: a responses_api deployment gets the body itself with store false; any other its chat translation, made once', () => {
    const { sink } = recorder();
    const replies = new ResponsesSink(sink, { model: 'alias', input: 'hi', store: true }, countingIds());
    expect(replies.attempt(upstream(true))).toEqual({ op: 'responses', body: { model: 'gpt-up', input: 'hi', store: false } });
    const first = replies.attempt(upstream(false));
    expect(first).toEqual({ op: 'chat', body: { model: 'gpt-up', messages: [{ role: 'user', content: 'hi' }] } });
    expect(replies.attempt(upstream(false)).body).toBe(first.body);
  });

  it('a chat stream in pieces that split events (as a thread hop delivers them) is translated whole, and [DONE] dropped', () => {
    const { sink, calls, sse } = recorder();
    const replies = new ResponsesSink(sink, { model: 'alias', input: 'hi', stream: true }, countingIds());
    replies.attempt(upstream(false));
    replies.head([]);
    const wire = chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Hel' }) + chunk({ content: 'lo' }) + chunk({}, 'stop') + 'data: [DONE]\n\n';
    const cut = wire.indexOf('Hel') + 2;
    replies.data([bytes(wire.slice(0, cut)), bytes(wire.slice(cut))]);
    replies.end({ prompt: 1, completion: 2 }, 3);
    const events = parseSse(sse());
    expect(events.map((e) => e.event)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events.at(-1)?.data.response).toMatchObject({ model: 'gpt-up', output: [{ content: [{ text: 'Hello' }] }] });
    expect(calls.at(-1)).toEqual(['end', { prompt: 1, completion: 2 }]);
  });

  it("a provider's in-band error event fails the stream: error and response.failed go out at once, the front is told at the end and adds nothing", () => {
    const { sink, calls, sse } = recorder();
    const replies = new ResponsesSink(sink, { model: 'alias', input: 'hi', stream: true }, countingIds());
    replies.attempt(upstream(false));
    replies.head([]);
    replies.data(bytes(chunk({ content: 'par' }) + `data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error', code: 'server_error' } })}\n\n` + chunk({ content: 'ignored' })));
    replies.end(null, 1);
    expect(parseSse(sse()).slice(-2).map((e) => [e.event, e.data.type === 'error' ? e.data.code : (e.data.response as { error: unknown }).error])).toEqual([
      ['error', 'server_error'],
      ['response.failed', { code: 'server_error', message: 'overloaded' }],
    ]);
    expect(sse()).not.toContain('ignored');
    expect(calls.at(-1)).toEqual(['fail', { code: 'upstream_error', message: 'overloaded', events: '' }]);
  });

  it('a failure after the head carries its Responses events; before the head it is the plain error answer', () => {
    const early = recorder();
    new ResponsesSink(early.sink, { model: 'alias', input: 'hi' }, countingIds()).fail({ code: 'upstream_timeout', message: 'late' });
    expect(early.calls).toEqual([['fail', { code: 'upstream_timeout', message: 'late' }]]);

    const late = recorder();
    const replies = new ResponsesSink(late.sink, { model: 'alias', input: 'hi', stream: true }, countingIds());
    replies.attempt(upstream(false));
    replies.head([]);
    replies.data(bytes(chunk({ content: 'x' })));
    replies.fail({ code: 'upstream_reset', message: 'gone' });
    const [, failure] = late.calls.at(-1) as [string, { events: string }];
    expect(parseSse(failure.events).map((e) => [e.event, e.data.sequence_number])).toEqual([['error', 5], ['response.failed', 6]]);
  });

  it('passed through: bytes go on untouched; a failure is an error event numbered after the events relayed', () => {
    const { sink, calls } = recorder();
    const replies = new ResponsesSink(sink, { model: 'alias', input: 'hi', stream: true }, countingIds());
    replies.attempt(upstream(true));
    replies.head([]);
    const relayed = 'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\nevent: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1}\n\n';
    replies.data([bytes(relayed.slice(0, 40)), bytes(relayed.slice(40))]);
    replies.fail({ code: 'upstream_idle_timeout', message: 'stalled' });
    expect(calls[1]).toEqual(['data', relayed]);
    const [, failure] = calls.at(-1) as [string, { events: string }];
    expect(parseSse(failure.events)).toEqual([{ event: 'error', data: { type: 'error', sequence_number: 2, code: 'upstream_idle_timeout', message: 'stalled', param: null } }]);
  });

  it('a whole answer is translated; a provider 4xx passes as it is', () => {
    const ok = recorder();
    const replies = new ResponsesSink(ok.sink, { model: 'alias', input: 'hi' }, countingIds());
    replies.attempt(upstream(false));
    const chat = { id: 'c', object: 'chat.completion', created: 9, model: 'gpt-up', choices: [{ index: 0, message: { role: 'assistant', content: 'Yo' }, finish_reason: 'stop' }] };
    replies.reply(200, 'application/json', [], bytes(JSON.stringify(chat)), null, 1);
    expect(JSON.parse(ok.calls[0]?.[3] as string)).toMatchObject({ object: 'response', status: 'completed', output: [{ content: [{ text: 'Yo' }] }] });

    const bad = recorder();
    const refused = new ResponsesSink(bad.sink, { model: 'alias', input: 'hi' }, countingIds());
    refused.attempt(upstream(false));
    const body = '{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}';
    refused.reply(400, 'application/json', [], bytes(body), null, 1);
    expect(bad.calls).toEqual([['reply', 400, 'application/json', body, null]]);
  });
});
