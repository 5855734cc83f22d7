import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { carriesContent } from '../../routing/commit-gate.js';
import { countingIds, goldenFiles, parseSse, sdkAnswering, type SseEvent } from './golden.js';
import { toMessage } from './reply.js';
import { MessagesEventStream, ping, PING_EVENT } from './stream.js';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

interface StreamGolden {
  about: string;
  options: { thinking: boolean; model: string };
  chunks: Array<Json | string>;
  /** The session's failure of the call after the chunks (stream.fail); absent: the upstream ended (stream.end). */
  failure?: { code: string; message: string };
  /** What the translator reports as the stream's own failure (an in-band error, a stream it cannot carry). */
  reported: unknown;
  events: SseEvent[];
}

const encoder = new TextEncoder();

/** Content as the commit gate means it, read off Anthropic's events: a delta, a tool call's start, the stop reason, the end. */
function anthropicContent(sse: string): boolean {
  return parseSse(sse).some(({ data }) => {
    if (data.type === 'content_block_delta' || data.type === 'message_delta' || data.type === 'message_stop') return true;
    return data.type === 'content_block_start' && (data.content_block as Json).type === 'tool_use';
  });
}

/** Feeds the chunks one by one, checking the translator's word on content after each; then its end or the session's failure. */
function translate(golden: StreamGolden): { sse: string; stream: MessagesEventStream } {
  const stream = new MessagesEventStream({ ...golden.options, ids: countingIds() });
  let sse = '';
  let input = '';
  const judged = () => {
    expect(stream.contentSent, `contentSent after: ${sse}`).toBe(anthropicContent(sse));
    // Never a word of content the gate would not find in the chat chunks themselves (an in-band error it would throw on).
    if (stream.contentSent && !input.includes('"error"')) expect(carriesContent(encoder.encode(input))).toBe(true);
  };
  for (const chunk of golden.chunks) {
    const data = typeof chunk === 'string' ? chunk : JSON.stringify(chunk);
    input += `data: ${data}\n\n`;
    sse += stream.chunk(data);
    judged();
  }
  sse += golden.failure ? stream.fail(golden.failure) : stream.end();
  judged();
  return { sse, stream };
}

/** The chat chunks as one chat.completion, as the chat path would have answered without `stream`. */
function assemble(chunks: Array<Json | string>): Json {
  const out: Json = {};
  let content = '';
  let reasoning = '';
  let finish: unknown = null;
  const calls: Json[] = [];
  for (const chunk of chunks) {
    if (typeof chunk === 'string') continue;
    out.id ??= chunk.id;
    out.model ??= chunk.model;
    if (isRecord(chunk.usage)) out.usage = chunk.usage;
    const choice = (chunk.choices as Json[] | undefined)?.[0];
    if (choice === undefined) continue;
    const delta = choice.delta as Json;
    if (typeof delta.content === 'string') content += delta.content;
    if (typeof delta.reasoning_content === 'string') reasoning += delta.reasoning_content;
    for (const call of (delta.tool_calls as Json[] | undefined) ?? []) {
      const fn = call.function as Json;
      const at = call.index as number;
      calls[at] ??= { id: call.id, type: 'function', function: { name: fn.name, arguments: '' } };
      ((calls[at] as Json).function as Json).arguments += (fn.arguments as string | undefined) ?? '';
    }
    finish = choice.finish_reason ?? finish;
  }
  out.choices = [{ index: 0, message: { role: 'assistant', content, reasoning_content: reasoning, ...(calls.length > 0 ? { tool_calls: calls } : {}) }, finish_reason: finish }];
  return out;
}

/** The events through the official SDK's stream helper (what Claude Code's SDK runs): its final message, or its error. */
function sdkStream(sse: string) {
  const client = sdkAnswering(() => new Response(sse, { headers: { 'content-type': 'text/event-stream' } }));
  return client.messages.stream({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
}

describe('chat chunks → Anthropic stream events (golden files)', () => {
  for (const golden of goldenFiles<StreamGolden>('stream-')) {
    it(`${golden.name}: ${golden.case.about}`, async () => {
      const { sse, stream } = translate(golden.case);
      const events = parseSse(sse);
      golden.expectAt('events', events);
      golden.expectAt('reported', stream.failure);
      // Anthropic's habit: `event:` names every event, and its data leads with the same type.
      for (const { event, data } of events) {
        expect(event).toBe(data.type);
        expect(Object.keys(data)[0]).toBe('type');
      }
      // Block indexes count from 0 in order; each block is started, then stopped, one open at a time.
      let open: number | null = null;
      let next = 0;
      for (const { data } of events) {
        if (data.type === 'content_block_start') {
          expect([open, data.index]).toEqual([null, next++]);
          open = data.index as number;
        } else if (data.type === 'content_block_delta') expect(data.index).toBe(open);
        else if (data.type === 'content_block_stop') {
          expect(data.index).toBe(open);
          open = null;
        }
      }
      const error = events.find((e) => e.event === 'error');
      if (error !== undefined) {
        expect(events.at(-1)).toBe(error);
        await expect(sdkStream(sse)).rejects.toMatchObject({ error: { type: 'error', error: (error.data as { error: Json }).error } });
        return;
      }
      expect(events.map((e) => e.event).slice(-2)).toEqual(['message_delta', 'message_stop']);
      // The stream says what the reply translator says of the same answer whole (blocks in the stream's order).
      // The SDK adds parsed_output (structured outputs) of its own.
      const { parsed_output: _, ...final } = await sdkStream(sse);
      const whole = toMessage(assemble(golden.case.chunks), { ...golden.case.options, ids: countingIds() });
      expect({ ...final, content: [] }).toEqual({ ...whole, content: [] });
      expect(final.content).toHaveLength(whole.content.length);
      expect(final.content).toEqual(expect.arrayContaining(whole.content));
    });
  }
});

describe('the stream translator', () => {
  const options = { thinking: false, model: 'm', ids: countingIds() };
  const chunk = (delta: Json, finish: string | null = null) => JSON.stringify({ id: 'c1', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });

  it('nothing after the end: later chunks, a second end or a failure add no event', () => {
    const stream = new MessagesEventStream(options);
    stream.chunk(chunk({ content: 'a' }, 'stop'));
    expect(parseSse(stream.chunk('[DONE]')).map((e) => e.event)).toEqual(['message_delta', 'message_stop']);
    expect(stream.finished).toBe(true);
    expect(stream.chunk(chunk({ content: 'b' })) + stream.end() + stream.fail({ code: 'upstream_reset', message: 'x' })).toBe('');
  });

  it('an upstream that ends before any chunk still gives a whole message, named by the requested model', () => {
    const events = parseSse(new MessagesEventStream({ ...options, model: 'fallback-model' }).end());
    expect(events.map((e) => e.event)).toEqual(['message_start', 'message_delta', 'message_stop']);
    expect(events[0]?.data.message).toMatchObject({ model: 'fallback-model', content: [], usage: { input_tokens: 0, output_tokens: 0 } });
  });

  it('a failure before any chunk is the error event alone (the SDK raises it without a message_start)', () => {
    const stream = new MessagesEventStream(options);
    expect(stream.fail({ code: 'no_deployment_available', message: 'busy' })).toBe('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n');
    expect(stream.contentSent).toBe(false);
  });

  it('message_start carries the input count when the first chunk has the usage; a tool call with no id gets one of the gateway', () => {
    const stream = new MessagesEventStream({ ...options, ids: countingIds() });
    const first = parseSse(stream.chunk(JSON.stringify({ id: 'c', model: 'm', choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, function: { name: 'f', arguments: '{}' } }] } }], usage: { prompt_tokens: 12, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 4 } } })));
    expect(first[0]?.data.message).toMatchObject({ usage: { input_tokens: 8, cache_creation_input_tokens: 0, cache_read_input_tokens: 4, output_tokens: 0 } });
    expect(first[1]?.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} } });
  });

  it("usage: the gateway's count (every prompt token, as chat counts them) once the usage chunk came; null before", () => {
    const stream = new MessagesEventStream(options);
    stream.chunk(chunk({ content: 'a' }, 'stop'));
    expect(stream.usage).toBeNull();
    stream.chunk(JSON.stringify({ id: 'c1', model: 'm', choices: [], usage: { prompt_tokens: 2006, completion_tokens: 6, prompt_tokens_details: { cached_tokens: 1920 } } }));
    expect(stream.usage).toEqual({ prompt: 2006, completion: 6 });
  });

  it('a new id at an index already used is a new call (some upstreams number every call 0)', () => {
    const stream = new MessagesEventStream(options);
    let sse = stream.chunk(chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'f', arguments: '{"a":1}' } }] }));
    sse += stream.chunk(chunk({ tool_calls: [{ index: 0, id: 'call_b', function: { name: 'g', arguments: '{"b":2}' } }] }, 'tool_calls'));
    sse += stream.chunk('[DONE]');
    const starts = parseSse(sse).filter((e) => e.event === 'content_block_start');
    expect(starts.map((e) => (e.data.content_block as Json).id)).toEqual(['call_a', 'call_b']);
    expect(stream.failure).toBeNull();
  });

  it('a chunk that is not JSON ends the stream with an error event and reports it', () => {
    const stream = new MessagesEventStream(options);
    stream.chunk(chunk({ content: 'a' }));
    expect(parseSse(stream.chunk('{oops')).map((e) => e.data)).toEqual([{ type: 'error', error: { type: 'api_error', message: 'the provider stream carried an event that is not a JSON object' } }]);
    expect(stream.failure).toEqual({ code: 'upstream_invalid_response', message: 'the provider stream carried an event that is not a JSON object' });
  });

  it("ping is Anthropic's keepalive, spelled as Anthropic spells it", () => {
    expect(ping()).toBe('event: ping\ndata: {"type": "ping"}\n\n');
    expect(PING_EVENT).toBe(ping());
  });
});

describe('a tool call streamed in fragments (fast-check)', () => {
  /** The chat chunks of one tool call whose arguments come as `fragments`, the first with the call's id and name. */
  function streamed(fragments: string[]): { sse: string; perChunk: string[] } {
    const stream = new MessagesEventStream({ thinking: false, model: 'm', ids: countingIds() });
    const perChunk: string[] = [];
    const feed = (data: string) => {
      const out = stream.chunk(data);
      perChunk.push(out);
      return out;
    };
    let sse = feed(JSON.stringify({ id: 'c', model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: null } }] }));
    fragments.forEach((fragment, i) => {
      const call = i === 0 ? { index: 0, id: 'call_1__thought__c2ln+/=', type: 'function', function: { name: 'f', arguments: fragment } } : { index: 0, function: { arguments: fragment } };
      sse += feed(JSON.stringify({ id: 'c', model: 'm', choices: [{ index: 0, delta: { tool_calls: [call] } }] }));
    });
    sse += feed(JSON.stringify({ id: 'c', model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }));
    sse += feed('[DONE]');
    return { sse, perChunk };
  }

  const partialJsonOf = (sse: string): string[] =>
    parseSse(sse)
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => ((e.data.delta as Json).partial_json as string));

  const unsplitInput = (args: string) =>
    toMessage({ id: 'c', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: args } }] }, finish_reason: 'tool_calls' }] }, { thinking: false, model: 'm', ids: countingIds() }).content[0]?.input;

  // Objects of any JSON, keys and strings of any text (surrogate pairs and escapes included), sometimes with a model's spacing.
  const args = fc
    .tuple(fc.dictionary(fc.string({ unit: 'binary', maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }), fc.constantFrom(undefined, 1, '\t'))
    .map(([input, space]) => JSON.stringify(input, null, space));

  it('split at every code unit, the concatenated input_json_delta fragments parse to the unsplit reply\'s input; each fragment goes out with its own chunk, as it came', () => {
    fc.assert(
      fc.property(args, (json) => {
        const fragments = [...Array(json.length).keys()].map((i) => json.slice(i, i + 1));
        const { sse, perChunk } = streamed(fragments);
        const sent = partialJsonOf(sse);
        expect(sent).toEqual(fragments.filter((f) => f.length > 0));
        fragments.forEach((fragment, i) => expect(partialJsonOf(perChunk[i + 1] as string)).toEqual(fragment.length > 0 ? [fragment] : []));
        expect(JSON.parse(sent.join(''))).toEqual(unsplitInput(json));
      }),
      { numRuns: 300 },
    );
  });

  it('split at any set of positions, the same', () => {
    fc.assert(
      fc.property(
        args.chain((json) => fc.tuple(fc.constant(json), fc.uniqueArray(fc.nat({ max: json.length }), { maxLength: json.length + 1 }))),
        ([json, cuts]) => {
          const at = [0, ...cuts.sort((a, b) => a - b), json.length];
          const fragments = at.slice(1).map((end, i) => json.slice(at[i], end));
          const sent = partialJsonOf(streamed(fragments).sse);
          expect(sent).toEqual(fragments.filter((f) => f.length > 0));
          expect(JSON.parse(sent.join(''))).toEqual(unsplitInput(json));
        },
      ),
      { numRuns: 500 },
    );
  });
});
