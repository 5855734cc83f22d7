/**
 * The commit point's judgement of a stream's events (carriesContent): the
 * byte-level shortcut for a chat chunk's text must agree with a judgement
 * of the parsed events, whatever the text holds (quotes, backslashes, the
 * words `"content":"` themselves) and wherever an error hides.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { CommitGate, carriesContent } from './commit-gate.js';
import { AttemptFailure } from './failure.js';

const sse = (...events: unknown[]): Uint8Array => Buffer.from(events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join(''));
/** JSON as Python's json.dumps writes it by default: a space after every colon and comma. */
const spaced = (value: unknown): string =>
  Array.isArray(value) ? `[${value.map(spaced).join(', ')}]`
    : value !== null && typeof value === 'object' ? `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${spaced(v)}`).join(', ')}}`
      : JSON.stringify(value);
const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra,
});

/** The judgement from the parsed events: what the shortcut must agree with. */
function judged(events: readonly unknown[]): boolean | 'error' {
  for (const event of events) {
    if (event === '[DONE]') return true;
    const e = event as { error?: unknown; type?: unknown; choices?: Array<{ finish_reason: unknown; delta?: Record<string, unknown> }> };
    if ('error' in e || e.type === 'error' || e.type === 'response.failed') return 'error';
    for (const c of e.choices ?? []) {
      if (c.finish_reason !== null && c.finish_reason !== undefined) return true;
      const d = c.delta ?? {};
      if (['content', 'reasoning_content', 'reasoning', 'refusal'].some((k) => typeof d[k] === 'string' && (d[k] as string).length > 0)) return true;
      if (Array.isArray(d.tool_calls) && d.tool_calls.length > 0) return true;
      if (d.function_call !== null && d.function_call !== undefined) return true;
    }
  }
  return false;
}

function verdict(bytes: Uint8Array): boolean | 'error' {
  try {
    return carriesContent(bytes);
  } catch (err) {
    expect(err).toBeInstanceOf(AttemptFailure);
    return 'error';
  }
}

describe('carriesContent', () => {
  it('a role chunk is held; the first text, a finish reason, a tool call or [DONE] commits', () => {
    expect(carriesContent(sse(chunk({ role: 'assistant', content: '' })))).toBe(false);
    expect(carriesContent(sse(chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hi' })))).toBe(true);
    expect(carriesContent(sse(chunk({}, 'stop')))).toBe(true);
    expect(carriesContent(sse(chunk({ tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'f', arguments: '' } }] })))).toBe(true);
    expect(carriesContent(sse('[DONE]'))).toBe(true);
  });

  it('text that only looks like a content key inside another string does not commit', () => {
    // In another field's string the words are escaped (\"content\":\"x): no key.
    const tricky = chunk({ role: 'assistant', content: '' }, null, { system_fingerprint: '"content":"x' });
    expect(carriesContent(sse(tricky))).toBe(false);
    expect(carriesContent(sse(chunk({ role: 'assistant', content: '' }), chunk({ content: '' }, null, { note: 'a "content":"b' })))).toBe(false);
  });

  it("OpenAI's role chunk and its first text are judged on their bytes, with no JSON.parse (about 1.5 µs each)", () => {
    const role = { ...chunk({ role: 'assistant', content: '', refusal: null }), service_tier: 'default', system_fingerprint: 'fp_1', usage: null, obfuscation: 'x' };
    const text = { ...chunk({ content: ' Hello' }), service_tier: 'default', system_fingerprint: 'fp_1', usage: null, obfuscation: 'x' };
    const parse = vi.spyOn(JSON, 'parse');
    try {
      expect(carriesContent(sse(role))).toBe(false);
      expect(carriesContent(Buffer.from(`data: ${spaced(role)}\n\n`))).toBe(false);
      expect(carriesContent(sse(text))).toBe(true);
      expect(carriesContent(sse(role, text))).toBe(true);
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  it('an error event fails the attempt, even one that carries text beside it', () => {
    expect(() => carriesContent(sse({ error: { message: 'overloaded' }, choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }] }))).toThrow(AttemptFailure);
    expect(() => carriesContent(sse(chunk({ role: 'assistant', content: '' }), { error: { message: 'boom' } }))).toThrow(AttemptFailure);
  });

  it('agrees with the parsed judgement on random streams', () => {
    const text = fc.oneof(fc.constantFrom('', 'x', '"content":"', '\\', '\\"', '"error"', '"type"', 'tok "q" \\n'), fc.string());
    const event = fc.oneof(
      text.map((t) => chunk({ role: 'assistant', content: t })),
      text.map((t) => chunk({ content: t })),
      text.map((t) => chunk({ reasoning_content: t })),
      fc.constant(chunk({}, 'stop')),
      fc.constant(chunk({ content: null })),
      text.map((t) => chunk({ role: 'assistant', content: '' }, null, { system_fingerprint: t })),
      text.map((t) => ({ error: { message: t } })),
      text.map((t) => ({ error: { message: t }, choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }] })),
      text.map((t) => ({ type: 'response.output_text.delta', delta: t })),
      text.map((t) => ({ choices: [{ index: 0, delta: { content: t }, logprobs: { content: [{ token: t }] }, finish_reason: null }] })),
      // OpenAI's role chunk, and the fields beside the text that must not count.
      text.map((t) => chunk({ role: 'assistant', content: t, refusal: null }, null, { service_tier: 'default', usage: null, obfuscation: t })),
      text.map((t) => chunk({ refusal: t })),
      text.map((t) => chunk({ reasoning: t, content: null })),
      fc.constantFrom([], [{ index: 0, id: 'c', function: { name: 'f', arguments: '' } }]).map((calls) => chunk({ content: '', tool_calls: calls })),
      fc.constantFrom(null, { name: 'f', arguments: '' }).map((call) => chunk({ content: '', function_call: call })),
      fc.constantFrom('stop', 'length', null).map((finish) => chunk({ content: '' }, finish)),
      fc.constant({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
      fc.constant('[DONE]'),
    );
    const asSent = fc.constantFrom(JSON.stringify, spaced);
    fc.assert(fc.property(fc.array(fc.tuple(event, asSent), { minLength: 1, maxLength: 4 }), (sent) => {
      const events = sent.map(([e]) => e);
      const bytes = Buffer.from(sent.map(([e, write]) => `data: ${typeof e === 'string' ? e : write(e)}\n\n`).join(''));
      const expected = judged(events);
      // Responses API events commit unless they are its preamble: none of these is, so a typed event commits.
      const typed = events.findIndex((e) => typeof (e as { type?: unknown }).type === 'string');
      const upTo = typed === -1 ? events : events.slice(0, typed);
      const wanted = typed === -1 ? expected : (judged(upTo) === false ? true : judged(upTo));
      expect(verdict(bytes)).toBe(wanted);
    }), { numRuns: 2000 });
  });
});

describe('CommitGate with the adapter\'s word on content', () => {
  /** A gate over a client that records what reached it. */
  const gate = () => {
    const seen: string[] = [];
    const client = {
      reply: () => seen.push('reply'),
      head: () => seen.push('head'),
      data: (bytes: Uint8Array) => seen.push(`data ${Buffer.from(bytes).toString()}`),
      end: () => seen.push('end'),
    };
    const g = new CommitGate({ committing: () => seen.push('commit'), used: () => undefined, client }, 60_000);
    g.head([]);
    return { g, seen };
  };

  it('a translated stream is taken at its word: content commits, no content is held, whatever the bytes', () => {
    const role = sse(chunk({ role: 'assistant', content: '' }));
    const { g, seen } = gate();
    // Read by the gate, a role chunk is held; said to carry content, it commits.
    g.data(role, false);
    expect(g.committed).toBe(false);
    g.data(role, true);
    expect(g.committed).toBe(true);
    expect(seen).toEqual(['commit', 'head', `data ${Buffer.from(role).toString()}`, `data ${Buffer.from(role).toString()}`]);
    g.close();
    // Said to carry none, text is held (and not read: an error event in it would not throw either).
    const other = gate();
    other.g.data(sse(chunk({ content: 'Hi' }), { error: { message: 'x' } }), false);
    expect(other.g.committed).toBe(false);
    expect(other.seen).toEqual([]);
    other.g.close();
  });

  it('events passed on as the provider sent them are read: an error event before content fails the attempt', () => {
    const { g } = gate();
    expect(() => g.data(sse({ error: { message: 'overloaded' } }))).toThrow(AttemptFailure);
    g.data(sse(chunk({ content: 'Hi' })));
    expect(g.committed).toBe(true);
    g.close();
  });
});
