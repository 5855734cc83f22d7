import { ResponseStream } from 'openai/lib/responses/ResponseStream';
import { describe, expect, it } from 'vitest';
import { countingIds, goldenFiles, parseSse } from './golden.js';
import { echoOf, type Json } from './response.js';
import { ResponsesStream } from './stream.js';

interface StreamGolden {
  about: string;
  request: Json;
  chunks: Array<Json | '[DONE]'>;
  failure?: { code: string; message: string };
  events: Array<{ event: string; data: Json }>;
}

function translate(golden: StreamGolden): string {
  const stream = new ResponsesStream(echoOf(golden.request), countingIds(), 'fallback-model');
  let sse = '';
  for (const chunk of golden.chunks) if (chunk !== '[DONE]') sse += stream.chunk(chunk);
  sse += golden.failure ? stream.fail(golden.failure.code, golden.failure.message) : stream.end();
  return sse;
}

/** The events through the openai SDK's own accumulator (what `responses.stream()` runs): it throws on an event out of order. */
async function accumulate(events: Json[]) {
  const body = new ReadableStream({
    start(controller) {
      for (const event of events) controller.enqueue(new TextEncoder().encode(`${JSON.stringify(event)}\n`));
      controller.close();
    },
  });
  return ResponseStream.fromReadableStream(body as never).finalResponse();
}

describe('chat chunks → Responses stream events (golden files)', () => {
  for (const [name, golden] of goldenFiles<StreamGolden>('stream-')) {
    it(`${name}: ${golden.about}`, async () => {
      const events = parseSse(translate(golden));
      expect(events).toEqual(golden.events);
      // The wire's habit: type and sequence number lead every event.
      for (const { data } of events) expect(Object.keys(data).slice(0, 2)).toEqual(['type', 'sequence_number']);
      const last = golden.events[golden.events.length - 1]?.data.response as Json;
      if (golden.failure) {
        // The SDK's ResponseStream rejects on the `error` event, with its message: the caller learns of the failure.
        await expect(accumulate(events.map((e) => e.data))).rejects.toMatchObject({ message: golden.failure.message });
        return;
      }
      const final = await accumulate(events.map((e) => e.data));
      expect(final.status).toBe(last.status);
      // The SDK adds `parsed` fields of its own.
      expect(final.output).toMatchObject(last.output as object);
    });
  }

  it('nothing after the end: later chunks, a second end or a failure add no event', () => {
    const stream = new ResponsesStream(echoOf({}), countingIds(), 'm');
    stream.chunk({ model: 'm', created: 1, choices: [{ index: 0, delta: { content: 'a' }, finish_reason: 'stop' }] });
    expect(parseSse(stream.end()).map((e) => e.event)).toEqual(['response.completed']);
    expect(stream.chunk({ choices: [{ index: 0, delta: { content: 'b' } }] }) + stream.end() + stream.fail('x', 'y')).toBe('');
  });

  it('an upstream that ends before any chunk still gives a whole response, named by the requested model', () => {
    const events = parseSse(new ResponsesStream(echoOf({}), countingIds(), 'fallback-model').end());
    expect(events.map((e) => e.event)).toEqual(['response.created', 'response.in_progress', 'response.completed']);
    expect(events[2]?.data.response).toMatchObject({ status: 'completed', model: 'fallback-model', output: [] });
  });

  it('finish_reason length: the items and the response are incomplete, and the terminal event says so', () => {
    const stream = new ResponsesStream(echoOf({}), countingIds(), 'm');
    const sse = stream.chunk({ model: 'm', created: 1, choices: [{ index: 0, delta: { content: 'Once' }, finish_reason: 'length' }] }) + stream.end();
    const events = parseSse(sse);
    expect(events.find((e) => e.event === 'response.output_item.done')?.data.item).toMatchObject({ status: 'incomplete' });
    expect(events.at(-1)).toMatchObject({ event: 'response.incomplete', data: { response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } } });
  });

  it('a refusal is a refusal part with its own delta and done events', async () => {
    const stream = new ResponsesStream(echoOf({}), countingIds(), 'm');
    const sse = stream.chunk({ model: 'm', created: 1, choices: [{ index: 0, delta: { refusal: "I can't" } }] }) + stream.chunk({ choices: [{ index: 0, delta: { refusal: ' help.' }, finish_reason: 'stop' }] }) + stream.end();
    const events = parseSse(sse);
    expect(events.map((e) => e.event)).toContain('response.refusal.delta');
    expect(events.find((e) => e.event === 'response.refusal.done')?.data).toMatchObject({ refusal: "I can't help." });
    expect((await accumulate(events.map((e) => e.data))).output).toMatchObject([{ type: 'message', content: [{ type: 'refusal', refusal: "I can't help." }] }]);
  });
});
