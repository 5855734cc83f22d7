/**
 * The stream of a Messages call passed through to an `anthropic`
 * deployment, relayed as Anthropic's own bytes (CONTRACT.md, Anthropic
 * Messages API (inbound): "the answer, stream events and usage come back as
 * sent"). Anthropic writes every event as `event: <type>\ndata: <one
 * line>\n\n`; a run of whole events in that form goes on as it came, as a
 * piece of the read (the chat passthrough's way, openai/stream.ts), each
 * event judged on its bytes: only its name is read, and the data of the
 * two events that carry usage (message_start, message_delta) and of an
 * error before content. Decoding every event and writing it again cost a
 * passed-through stream of 20 deltas about a fifth more CPU than a chat
 * stream's.
 *
 * The events' judgement is MessagesEvents' (messages-passthrough.ts): the
 * commit point, the usage, an `event: error` before content failing the
 * attempt, a stream cut short before message_stop. An event split between
 * reads waits for its end (bounded like any event), so what goes on is
 * always whole events: an `event: error` the gateway appends later cannot
 * land inside one. Anything else (a CR, a comment, an event of several
 * lines or without a name, bytes that are not UTF-8) sends the rest of the
 * stream through the SSE parser and MessagesEvents, re-serialised as before.
 */
import { isUtf8 } from 'node:buffer';
import type { Payload } from '../../../protocol/channel.js';
import type { Usage } from '../../../protocol/frames.js';
import { GatewayError } from '../../../protocol/errors.js';
import { bytesAt, indexOfByte, utf8Text } from '../../bytes.js';
import { SseParser, type SseBatch } from '../../sse.js';
import type { StreamRelay } from '../http-attempt.js';
import { MessagesEvents } from '../messages-passthrough.js';
import { TranslatingRelay } from '../translating-relay.js';

const LF = 0x0a;
const CR = 0x0d;
const ascii = (text: string): readonly number[] => [...Buffer.from(text, 'latin1')];
const EVENT_PREFIX = ascii('event: ');
const DATA_PREFIX = ascii('data: ');
/** Anthropic's event names, matched on their bytes: a name not among them is decoded. */
const NAMES: ReadonlyArray<{ readonly name: string; readonly bytes: readonly number[] }> = [
  'content_block_delta', 'content_block_start', 'content_block_stop', 'message_start', 'message_delta', 'message_stop', 'ping', 'error',
].map((name) => ({ name, bytes: ascii(name) }));
/** NAMES by length, the most frequent first: a name is compared with the few of its length alone. */
const NAMES_BY_LENGTH: ReadonlyArray<typeof NAMES | undefined> = NAMES.reduce<Array<Array<(typeof NAMES)[number]> | undefined>>((byLength, entry) => {
  (byLength[entry.bytes.length] ??= []).push(entry);
  return byLength;
}, []);
/** A delta's `event:` line and the start of its `data:` line. */
const DELTA_HEAD = ascii('event: content_block_delta\ndata: ');

export class MessagesPassthroughRelay implements StreamRelay {
  readonly #events = new MessagesEvents();
  readonly #limit: number;
  /** The start of an event the last reads ended inside of, in pieces (copies: a read is undici's), and their length. */
  #carry: Uint8Array[] | null = null;
  #carried = 0;
  /** Once the stream left Anthropic's form: the rest parsed and re-serialised. */
  #parser: SseParser | null = null;
  #reserialised: TranslatingRelay | null = null;
  #failure: unknown = null;

  /** `limit`: the bound on one event (http-attempt.ts, streamEventLimit). */
  constructor(limit: number) {
    this.#limit = limit;
  }

  batch(batch: SseBatch): Payload | null {
    // Only end() is given a batch (an empty one): this relay reads the bytes itself (push).
    return this.#reserialised === null ? null : this.#reserialised.batch(batch);
  }

  push(chunk: Uint8Array): Payload | null {
    if (this.#failure !== null) throw this.#failure;
    if (this.#parser !== null) return this.#parsed(chunk);
    let bytes = chunk;
    if (this.#carry !== null) {
      // An event that goes on over many reads is joined once, when a read ends it (not once a read).
      const last = this.#carry[this.#carry.length - 1] as Uint8Array;
      if (!endsEvent(chunk, last[last.length - 1] === LF) && indexOfByte(chunk, CR, 0) === -1) {
        this.#carried += chunk.length;
        if (this.#carried > this.#limit) throw new GatewayError('upstream_response_too_large', 'a provider stream event exceeds the configured limit');
        this.#carry.push(copyOf(chunk));
        return null;
      }
      this.#carry.push(chunk);
      bytes = Buffer.concat(this.#carry);
      this.#carry = null;
    }
    // CRs end lines too: such a stream is the parser's from here on.
    if (indexOfByte(bytes, CR, 0) !== -1) return this.#reserialise(bytes);
    const whole = wholeEventsEnd(bytes);
    if (whole < bytes.length) {
      if (bytes.length - whole > this.#limit) throw new GatewayError('upstream_response_too_large', 'a provider stream event exceeds the configured limit');
      this.#carry = [copyOf(bytes.subarray(whole))];
      this.#carried = bytes.length - whole;
    }
    if (whole === 0) return null;
    const events = whole === bytes.length ? bytes : bytes.subarray(0, whole);
    if (!isUtf8(events)) return this.#reserialise(bytes);
    let at = 0;
    try {
      for (let next = this.#judge(events, 0); next !== -1; next = next === whole ? -1 : this.#judge(events, next)) at = next;
    } catch (err) {
      // An error event before content: the events before it still go, then the attempt fails with it (failure()).
      this.#failure = err;
      return at === 0 ? null : [events.subarray(0, at)];
    }
    if (at === whole) return [events];
    // Out of Anthropic's form from `at` on: that event and all after it go through the parser.
    return pieces(at === 0 ? null : events.subarray(0, at), this.#reserialise(bytes.subarray(at)));
  }

  end(rest: SseBatch): Payload | null {
    if (this.#parser === null && this.#carry === null) {
      try {
        this.#events.end();
      } catch (err) {
        this.#failure = err;
      }
      return null;
    }
    // A last event without its blank line is still an event, as the parser's finish() has it.
    const parser = (this.#parser ??= new SseParser(this.#limit));
    const reserialised = (this.#reserialised ??= new TranslatingRelay(this.#events));
    const carried = this.#carry;
    this.#carry = null;
    const last = carried === null ? null : this.#parsed(Buffer.concat(carried));
    if (this.failure() !== null) return last;
    return pieces(last, reserialised.batch(rest), reserialised.end(parser.finish()));
  }

  failure(): unknown {
    return this.#failure ?? this.#reserialised?.failure() ?? null;
  }

  contentSent(): boolean {
    return this.#events.contentSent;
  }

  usage(): Usage | null {
    return this.#events.usage;
  }

  /** From `bytes` on (the start of an event), the stream goes through the parser; what it completed now. */
  #reserialise(bytes: Uint8Array): Payload | null {
    this.#carry = null;
    this.#parser = new SseParser(this.#limit);
    this.#reserialised = new TranslatingRelay(this.#events);
    return this.#parsed(bytes);
  }

  #parsed(bytes: Uint8Array): Payload | null {
    return (this.#reserialised as TranslatingRelay).batch((this.#parser as SseParser).push(bytes));
  }

  /**
   * The event from `at` (whole events, no CR), judged: where the next one starts, or -1 when it is
   * not `event: <name>\ndata: <one line>\n\n`.
   */
  #judge(bytes: Uint8Array, at: number): number {
    if (this.#events.contentSent && bytesAt(bytes, at, DELTA_HEAD)) {
      // Most events are deltas, and once content has gone one tells MessagesEvents nothing new (note() would
      // only set what is set): its head is matched in one go, and its data only for where it ends.
      const dataEnd = indexOfByte(bytes, LF, at + DELTA_HEAD.length);
      return bytes[dataEnd + 1] === LF ? dataEnd + 2 : -1;
    }
    if (!bytesAt(bytes, at, EVENT_PREFIX)) return -1;
    const nameStart = at + EVENT_PREFIX.length;
    // A name is a few bytes: looked for here rather than through Buffer's indexOf, a call into C++.
    let nameEnd = nameStart;
    while (bytes[nameEnd] !== LF) nameEnd++;
    if (nameEnd === nameStart || !bytesAt(bytes, nameEnd + 1, DATA_PREFIX)) return -1;
    const dataStart = nameEnd + 1 + DATA_PREFIX.length;
    const dataEnd = indexOfByte(bytes, LF, dataStart);
    if (bytes[dataEnd + 1] !== LF) return -1;
    const type = nameAt(bytes, nameStart, nameEnd);
    const usage = type === 'message_start' ? usageOf(bytes, dataStart, dataEnd, true) : type === 'message_delta' ? usageOf(bytes, dataStart, dataEnd, false) : NOT_READ;
    if (usage !== NOT_READ) this.#events.count(usage);
    // The whole data where this could not read the usage on its own (note() parses it), or where note() needs it.
    this.#events.note(type, usage === UNREAD || this.#events.readsData(type) ? utf8Text(bytes, dataStart, dataEnd) : null);
    return dataEnd + 2;
  }
}

/** usageOf's answers besides the usage: the event is not one that carries usage; its usage was not read (the whole event is parsed instead). */
const NOT_READ = Symbol('not read');
const UNREAD = Symbol('unread');
const MESSAGE_KEY = ascii('message');
const USAGE_KEY = ascii('usage');

/**
 * The `usage` object of a message_start's `message` (`inMessage`) or of a message_delta, read
 * without parsing the rest of the event (a message_start is mostly the message's fields), nor the
 * object itself when it is plain (countsAt). UNREAD for an event of any other shape, which note()
 * parses whole.
 */
function usageOf(bytes: Uint8Array, start: number, end: number, inMessage: boolean): unknown {
  let at = skipSpace(bytes, start, end);
  if (inMessage) at = memberValue(bytes, at, end, MESSAGE_KEY);
  if (at !== -1) at = memberValue(bytes, at, end, USAGE_KEY);
  if (at === -1) return UNREAD;
  const counts = countsAt(bytes, at, end);
  if (counts !== UNREAD) return counts;
  // Not plain (a number in another notation, an escape, a list): its text is parsed as JSON, as before.
  const close = valueEnd(bytes, at, end);
  if (close === -1) return UNREAD;
  try {
    return JSON.parse(utf8Text(bytes, at, close)) as unknown;
  } catch {
    return UNREAD;
  }
}

/** The usage members messagesUsage reads, by their bytes. */
const COUNTED: ReadonlyArray<{ readonly name: 'input_tokens' | 'output_tokens' | 'cache_read_input_tokens' | 'cache_creation_input_tokens'; readonly bytes: readonly number[] }> = (
  ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const
).map((name) => ({ name, bytes: ascii(name) }));
type Counts = { -readonly [K in (typeof COUNTED)[number]['name']]?: number | null };

/**
 * The usage object at `at` read on its bytes, when it is plain: its members' values integers
 * (digits alone), `null`, `true`, `false`, strings of printable ASCII without escapes, or objects
 * of those (Anthropic's `cache_creation`, `server_tool_use`). What messagesUsage reads of it (the
 * counted members, an integer as its number, any other value as null, which it counts as 0 as it
 * does a string or an object) is then exactly what JSON.parse would give it; UNREAD for anything
 * else, which is parsed.
 */
function countsAt(bytes: Uint8Array, at: number, end: number): Counts | typeof UNREAD {
  const counts: Counts = {};
  return plainObjectEnd(bytes, at, end, counts) === -1 ? UNREAD : counts;
}

/** Just past the plain object at `at` (countsAt), or -1; its counted members go into `counts` (null: a nested object, counted by no one). */
function plainObjectEnd(bytes: Uint8Array, at: number, end: number, counts: Counts | null): number {
  if (bytes[at] !== OPEN_OBJECT) return -1;
  at = skipSpace(bytes, at + 1, end);
  if (bytes[at] === CLOSE_OBJECT) return at + 1;
  for (;;) {
    if (bytes[at] !== QUOTE) return -1;
    const keyEnd = plainStringEnd(bytes, at, end);
    if (keyEnd === -1) return -1;
    let value = skipSpace(bytes, keyEnd + 1, end);
    if (bytes[value] !== COLON) return -1;
    value = skipSpace(bytes, value + 1, end);
    const first = bytes[value] as number;
    const integer = first >= ZERO && first <= NINE;
    const after = integer ? integerEnd(bytes, value, end) : first === OPEN_OBJECT ? plainObjectEnd(bytes, value, end, null) : plainScalarEnd(bytes, value, end);
    if (after === -1) return -1;
    if (counts !== null) {
      const keyLength = keyEnd - at - 1;
      for (const { name, bytes: expected } of COUNTED) {
        if (expected.length === keyLength && bytesAt(bytes, at + 1, expected)) {
          counts[name] = integer ? integerAt(bytes, value, after) : null;
          break;
        }
      }
    }
    at = skipSpace(bytes, after, end);
    if (bytes[at] === CLOSE_OBJECT) return at + 1;
    if (bytes[at] !== COMMA) return -1;
    at = skipSpace(bytes, at + 1, end);
  }
}

/** Just past the integer at `at` (digits, no leading zero, at most 15 of them: exact as a double), or -1 for any other number. */
function integerEnd(bytes: Uint8Array, at: number, end: number): number {
  let i = at;
  while (i < end && (bytes[i] as number) >= ZERO && (bytes[i] as number) <= NINE) i++;
  if (i - at > 15 || (bytes[at] === ZERO && i - at > 1)) return -1;
  const next = bytes[i];
  return next === COMMA || next === CLOSE_OBJECT || next === SPACE || next === TAB ? i : -1;
}

function integerAt(bytes: Uint8Array, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) n = n * 10 + ((bytes[i] as number) - ZERO);
  return n;
}

/** Just past a string of printable ASCII without escapes, `null`, `true` or `false` at `at`; -1 for anything else. */
function plainScalarEnd(bytes: Uint8Array, at: number, end: number): number {
  if (bytes[at] === QUOTE) {
    const close = plainStringEnd(bytes, at, end);
    return close === -1 ? -1 : close + 1;
  }
  for (const literal of LITERALS) if (bytesAt(bytes, at, literal)) return at + literal.length;
  return -1;
}

/** The closing quote of a string of printable ASCII without escapes (what JSON.parse reads as written), or -1. */
function plainStringEnd(bytes: Uint8Array, at: number, end: number): number {
  for (let i = at + 1; i < end; i++) {
    const b = bytes[i] as number;
    if (b === QUOTE) return i;
    if (b === BACKSLASH || b < SPACE || b > TILDE) return -1;
  }
  return -1;
}

const LITERALS = ['null', 'true', 'false'].map(ascii);

/** Where the value of `key` starts in the JSON object at `at` (its `{`), or -1: not an object, no such key, or text that is not JSON. */
function memberValue(bytes: Uint8Array, at: number, end: number, key: readonly number[]): number {
  if (bytes[at] !== OPEN_OBJECT) return -1;
  for (at = skipSpace(bytes, at + 1, end); bytes[at] === QUOTE; ) {
    const keyEnd = stringEnd(bytes, at, end);
    if (keyEnd === -1) return -1;
    let value = skipSpace(bytes, keyEnd + 1, end);
    if (bytes[value] !== COLON) return -1;
    value = skipSpace(bytes, value + 1, end);
    if (keyEnd - at - 1 === key.length && bytesAt(bytes, at + 1, key)) return value;
    const after = valueEnd(bytes, value, end);
    if (after === -1) return -1;
    at = skipSpace(bytes, after, end);
    if (bytes[at] !== COMMA) return -1;
    at = skipSpace(bytes, at + 1, end);
  }
  return -1;
}

/** Just past the JSON value at `at` (a string, an object or a list whole, or a scalar's text), or -1 when it does not end before `end`. */
function valueEnd(bytes: Uint8Array, at: number, end: number): number {
  const first = bytes[at];
  if (first === QUOTE) {
    const close = stringEnd(bytes, at, end);
    return close === -1 ? -1 : close + 1;
  }
  if (first === OPEN_OBJECT || first === OPEN_LIST) {
    let depth = 0;
    for (let i = at; i < end; i++) {
      const b = bytes[i];
      if (b === QUOTE) {
        i = stringEnd(bytes, i, end);
        if (i === -1) return -1;
      } else if (b === OPEN_OBJECT || b === OPEN_LIST) depth++;
      else if ((b === CLOSE_OBJECT || b === CLOSE_LIST) && --depth === 0) return i + 1;
    }
    return -1;
  }
  let i = at;
  while (i < end && bytes[i] !== COMMA && bytes[i] !== CLOSE_OBJECT && bytes[i] !== CLOSE_LIST && bytes[i] !== SPACE) i++;
  return i === at ? -1 : i;
}

/** The closing quote of the string whose opening quote is at `at`, or -1. */
function stringEnd(bytes: Uint8Array, at: number, end: number): number {
  for (let i = at + 1; i < end; i++) {
    if (bytes[i] === BACKSLASH) i++;
    else if (bytes[i] === QUOTE) return i;
  }
  return -1;
}

function skipSpace(bytes: Uint8Array, at: number, end: number): number {
  while (at < end && (bytes[at] === SPACE || bytes[at] === TAB)) at++;
  return at;
}

const QUOTE = 0x22;
const ZERO = 0x30;
const NINE = 0x39;
const TILDE = 0x7e;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const SPACE = 0x20;
const TAB = 0x09;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;

/** A copy, never a view: a read's memory is undici's. */
const copyOf = (bytes: Uint8Array): Uint8Array => Uint8Array.prototype.slice.call(bytes);

/** Whether `chunk` ends an event begun before it: it holds a blank line, or starts one after a line's LF (`afterLf`). */
const endsEvent = (chunk: Uint8Array, afterLf: boolean): boolean => (afterLf && chunk[0] === LF) || Buffer.prototype.indexOf.call(chunk, LF_LF) !== -1;
const LF_LF = Buffer.from('\n\n');

/** The end of the last whole event (just past its blank line), 0 when there is none. */
function wholeEventsEnd(bytes: Uint8Array): number {
  for (let at = bytes.length - 1; at > 0; at = Buffer.prototype.lastIndexOf.call(bytes, LF, at - 1)) {
    if (at === -1) return 0;
    if (bytes[at] === LF && bytes[at - 1] === LF) return at + 1;
  }
  return 0;
}

function nameAt(bytes: Uint8Array, start: number, end: number): string {
  const known = NAMES_BY_LENGTH[end - start];
  if (known !== undefined) for (const { name, bytes: expected } of known) if (bytesAt(bytes, start, expected)) return name;
  return utf8Text(bytes, start, end);
}

/** The non-empty outputs as the pieces of one frame, or null. */
function pieces(...parts: ReadonlyArray<Payload | null>): Payload | null {
  const out: Uint8Array[] = [];
  for (const part of parts) {
    if (part === null) continue;
    if (part instanceof Uint8Array) {
      if (part.length > 0) out.push(part);
    } else for (const piece of part) if (piece.length > 0) out.push(piece);
  }
  return out.length === 0 ? null : out;
}
