import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser, decodedEvents, serializeEvents, Utf8Chunks, type SseBatch } from './sse.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One line of an event's data: any well-formed text without a line break. */
const line = fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !/[\r\n]|\p{Cs}/u.test(s));

/** An event as a provider may write it: the data lines, and how they are spelled. */
const event = fc.record({
  lines: fc.array(line, { minLength: 1, maxLength: 3 }),
  noSpace: fc.boolean(),
  crlf: fc.boolean(),
  comment: fc.boolean(),
  field: fc.boolean(),
});
type Event = typeof event extends fc.Arbitrary<infer T> ? T : never;

const dataOf = (e: Event) => e.lines.join('\n');

function spell(e: Event): string {
  const eol = e.crlf ? '\r\n' : '\n';
  let out = e.comment ? `: ping${eol}` : '';
  if (e.field) out += `event: message${eol}`;
  // `data:x` is only the same as `data: x` when x does not itself start with a space.
  for (const l of e.lines) out += e.noSpace && !l.startsWith(' ') ? `data:${l}${eol}` : `data: ${l}${eol}`;
  return out + eol;
}

/** Splits bytes at the given cut points (any byte, inside a UTF-8 sequence or a CRLF included). */
function split(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    chunks.push(bytes.slice(from, to));
    from = to;
  }
  return chunks;
}

/** The data of a batch's events, decoded from the chunk's bytes when it is verbatim. */
function eventsOf(batch: SseBatch): readonly string[] {
  if (!batch.verbatim) return batch.events;
  const events: string[] = [];
  for (let i = 0; i < batch.bounds.length; i += 2) events.push(decoder.decode(batch.chunk.subarray(batch.bounds[i], batch.bounds[i + 1])));
  return events;
}

function feed(chunks: Uint8Array[]): { batches: Array<{ chunk: Uint8Array; batch: SseBatch }>; rest: string[] } {
  const parser = new SseParser(1 << 20);
  const batches = chunks.map((chunk) => ({ chunk, batch: parser.push(chunk) }));
  return { batches, rest: [...parser.finish().events] };
}

describe('SseParser', () => {
  it('yields every event whatever the spelling and the chunking, and a chunk it calls verbatim is exactly its events re-serialised', () => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 10 }), (events, cuts) => {
        const bytes = encoder.encode(events.map(spell).join(''));
        const { batches, rest } = feed(split(bytes, cuts));
        expect([...batches.flatMap((b) => eventsOf(b.batch)), ...rest]).toEqual(events.map(dataOf));
        for (const { chunk, batch } of batches) {
          if (!batch.verbatim) continue;
          expect(batch.chunk).toBe(chunk);
          expect(Buffer.from(chunk).equals(encoder.encode(serializeEvents(eventsOf(batch))))).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('what the gateway relays (verbatim chunks, else re-serialised events) parses back to the same events', () => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 10 }), (events, cuts) => {
        const { batches, rest } = feed(split(encoder.encode(events.map(spell).join('')), cuts));
        const relayed = batches.map(({ chunk, batch }) => (batch.verbatim ? decoder.decode(chunk) : serializeEvents(batch.events))).join('') + serializeEvents(rest);
        const again = feed([encoder.encode(relayed)]);
        expect([...eventsOf(again.batches[0]!.batch), ...again.rest]).toEqual(events.map(dataOf));
      }),
      { numRuns: 500 },
    );
  });

  it('a chunk of canonical whole events is verbatim; one that is not canonical or not whole is not', () => {
    const verbatim = (...chunks: string[]) => feed(chunks.map((c) => encoder.encode(c))).batches.map((b) => b.batch.verbatim);
    expect(verbatim('data: {"a":1}\n\ndata: [DONE]\n\n')).toEqual([true]);
    expect(verbatim('data: {"a":1}\n\ndata: {"b"', ':2}\n\n', 'data: 3\n\n')).toEqual([false, false, true]);
    expect(verbatim('data:{"a":1}\n\n')).toEqual([false]);
    expect(verbatim('data: {"a":1}\r\n\r\n')).toEqual([false]);
    expect(verbatim(': keep-alive\n\ndata: 1\n\n')).toEqual([false]);
    expect(verbatim('data: 1\n\n\ndata: 2\n\n')).toEqual([false]);
    expect(verbatim('\uFEFFdata: 1\n\n', 'data: 2\n\n')).toEqual([false, true]);
    // A chunk after one that left part of an event behind is never verbatim on its own.
    expect(verbatim('data: 1\n\n\n', 'data: 2\n\n', 'data: 3\n\n')).toEqual([false, false, true]);
    expect(verbatim('data: 1\n\ndata', ': 2\n\n', 'data: 3\n\n')).toEqual([false, false, true]);
  });

  it('a verbatim chunk gives each event as the byte offsets of its data, undecoded', () => {
    const chunk = encoder.encode('data: {"a":1}\n\ndata: \n\ndata: [DONE]\n\n');
    expect(new SseParser(1024).push(chunk)).toEqual({ verbatim: true, chunk, bounds: [6, 13, 21, 21, 29, 35] });
  });

  it('a byte order mark after verbatim chunks is text, as a decoder of the whole stream reads it, not a mark to drop', () => {
    const parser = new SseParser(1024);
    expect(parser.push(encoder.encode('data: 1\n\n')).verbatim).toBe(true);
    expect(() => parser.push(encoder.encode('\uFEFFdata: 2\n\n'))).toThrow(/not a server-sent event field/);
  });

  it('invalid UTF-8 is never relayed verbatim', () => {
    const bytes = Uint8Array.from([...encoder.encode('data: "'), 0xff, ...encoder.encode('"\n\n')]);
    const { batches } = feed([bytes]);
    expect(batches[0]!.batch).toEqual({ events: ['"\uFFFD"'], names: null, verbatim: false });
  });

  it('refuses a line that is no field, and an event that outgrows the limit', () => {
    expect(() => new SseParser(1024).push(encoder.encode('{"a":1}\n\n'))).toThrow(/not a server-sent event field/);
    expect(() => new SseParser(16).push(encoder.encode(`data: ${'x'.repeat(32)}`))).toThrow(/exceeds the configured limit/);
  });
});

describe('serializeEvents', () => {
  it('writes a multi-line data as one data line per line, so clients join it back', () => {
    expect(serializeEvents(['{\n"a": 1}', '[DONE]'])).toBe('data: {\ndata: "a": 1}\n\ndata: [DONE]\n\n');
  });
});

describe('Utf8Chunks', () => {
  /** Bytes rich in UTF-8 edge cases: lead bytes, continuations, a byte order mark, bytes never valid. */
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 24 }),
    fc.array(fc.constantFrom(0x41, 0x0a, 0xef, 0xbb, 0xbf, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0xc0, 0xed, 0xa0, 0xf4, 0x90, 0xff), { maxLength: 24 }).map((a) => Uint8Array.from(a)),
    fc.string({ unit: 'binary', maxLength: 12 }).map((t) => encoder.encode(`\uFEFF${t}`)),
  );

  it('decodes any bytes, cut anywhere, exactly as one streaming TextDecoder does', () => {
    fc.assert(
      fc.property(bytes, fc.array(fc.nat(), { maxLength: 8 }), (all, cuts) => {
        const utf8 = new Utf8Chunks();
        const reference = new TextDecoder('utf-8');
        let ours = '';
        let theirs = '';
        for (const chunk of split(all, cuts)) {
          ours += utf8.decode(chunk);
          theirs += reference.decode(chunk, { stream: true });
        }
        theirs += reference.decode();
        expect(ours + utf8.end()).toBe(theirs);
        // Streaming or not, the reference decodes the same: the cuts are no excuse.
        expect(theirs).toBe(new TextDecoder('utf-8').decode(all));
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps its own copy of a cut sequence: the chunk it came in may be reused once decoded', () => {
    const utf8 = new Utf8Chunks();
    const euro = Buffer.from('€', 'utf8');
    const first = Buffer.from([0x41, euro[0] as number, euro[1] as number]);
    expect(utf8.decode(first)).toBe('A');
    first.fill(0x5a); // the read buffer, reused for the next read
    expect(utf8.decode(Buffer.from([euro[2] as number]))).toBe('€');
    const bomStart = Buffer.from([0xef, 0xbb]);
    const fresh = new Utf8Chunks();
    expect(fresh.decode(bomStart)).toBe('');
    bomStart.fill(0x5a);
    expect(fresh.decode(Buffer.from([0xbf, 0x42]))).toBe('B');
  });
});

describe('event names', () => {
  it('keeps each event\'s `event:` name beside its data (Anthropic names every event), and none for unnamed events', () => {
    const parser = new SseParser(1024);
    const batch = parser.push(encoder.encode('event: message_start\ndata: {"a":1}\n\ndata: {"b":2}\n\n: comment\n\nevent: ping\ndata: {"type": "ping"}\n\nevent: message_stop\ndata: {"c"'));
    expect(batch).toEqual({ verbatim: false, events: ['{"a":1}', '{"b":2}', '{"type": "ping"}'], names: ['message_start', null, 'ping'] });
    expect(parser.push(encoder.encode(':3}'))).toEqual({ verbatim: false, events: [], names: null });
    expect(parser.finish()).toEqual({ verbatim: false, events: ['{"c":3}'], names: ['message_stop'] });
  });

  it('gives no names array for a stream that never names its events', () => {
    const batch = new SseParser(1024).push(encoder.encode('data: {"a":1}\r\n\r\ndata: {"b":2}\n\n'));
    expect(batch).toEqual({ verbatim: false, events: ['{"a":1}', '{"b":2}'], names: null });
  });

  it('decodedEvents reads a verbatim chunk\'s events off its bounds', () => {
    const batch = new SseParser(1024).push(encoder.encode('data: {"a":1}\n\ndata: [DONE]\n\n'));
    expect(batch.verbatim).toBe(true);
    expect(decodedEvents(batch)).toEqual({ events: ['{"a":1}', '[DONE]'], names: null });
  });
});
