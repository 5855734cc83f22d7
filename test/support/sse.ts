/**
 * Reading an SSE body in a test (issue 34, point 6): the one parser every test uses, built on
 * eventsource-parser, a maintained parser of the WHATWG rules that shares no code with the
 * gateway's own (workers/sse.ts), so a test never reads the gateway's output with the gateway's
 * reading of it. It takes what the rules allow and a `split('\n\n')` does not: `\r\n` and `\r`
 * line ends, an event's several `data:` lines, `data:` without its space, comments, `event:`
 * names and ids; and it tells what a naive reader would drop silently: a line that is no field,
 * and an event the text ended inside of.
 *
 * @example
 * const { events, comments } = parseSse(await res.text());
 * expect(sseData(text).at(-1)).toBe('[DONE]');
 */
import { createParser } from 'eventsource-parser';

export interface SseEvent {
  /** The `event:` name, or undefined when it had none. */
  readonly event: string | undefined;
  /** Its `data:` lines, joined with `\n`. */
  readonly data: string;
  readonly id: string | undefined;
}

export interface ParsedSse {
  /** The complete events (each ended by a blank line), in order. */
  readonly events: SseEvent[];
  /** The comment lines (`: keepalive` is `keepalive`), in order. */
  readonly comments: string[];
  /** Lines that are no SSE field (`{"id":…}` without `data:`, say), which a reader ignores. */
  readonly invalid: string[];
  /** The event the text ended inside of (no blank line after it): a reader drops it. */
  readonly cut: SseEvent | null;
  /** The events and comments together, in the order they came (where keep-alives fell between events). */
  readonly items: ReadonlyArray<{ readonly kind: 'event'; readonly event: SseEvent } | { readonly kind: 'comment'; readonly comment: string }>;
}

/** Every event, comment and stray line of an SSE body. */
export function parseSse(text: string): ParsedSse {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const invalid: string[] = [];
  const items: Array<{ kind: 'event'; event: SseEvent } | { kind: 'comment'; comment: string }> = [];
  let ended = false;
  let cut: SseEvent | null = null;
  const parser = createParser({
    onEvent: ({ event, data, id }) => {
      if (ended) return void (cut = { event, data, id });
      events.push({ event, data, id });
      items.push({ kind: 'event', event: { event, data, id } });
    },
    onComment: (comment) => {
      comments.push(comment);
      items.push({ kind: 'comment', comment });
    },
    onError: (error) => invalid.push(error.line ?? error.message),
  });
  parser.feed(text);
  // Two more line ends complete whatever the text left open: an event that comes out now was cut off.
  ended = true;
  parser.feed('\n\n');
  return { events, comments, invalid, cut, items };
}

/** The events of a well-formed SSE body; throws on a line that is no field or an event cut off, which a naive reader would drop. */
export function sseEvents(text: string): SseEvent[] {
  const { events, invalid, cut } = parseSse(text);
  if (invalid.length > 0) throw new Error(`not SSE: ${JSON.stringify(invalid.slice(0, 3))} in ${JSON.stringify(text.slice(0, 500))}`);
  if (cut !== null) throw new Error(`the SSE body ends inside an event: ${JSON.stringify(cut).slice(0, 300)}`);
  return events;
}

/** The data of each event of a well-formed SSE body (`[DONE]` included), in order. */
export function sseData(text: string): string[] {
  return sseEvents(text).map((e) => e.data);
}

/** The content a chat stream's chunks carry, joined (its `[DONE]` and error events carry none). */
export function streamedContent(text: string): string {
  let out = '';
  for (const data of sseData(text)) {
    if (data === '[DONE]') continue;
    const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> };
    out += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return out;
}
