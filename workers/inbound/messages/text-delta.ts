/**
 * A chat chunk read without parsing it, for the one shape most chunks of a
 * stream have: a text delta of choice 0 and nothing else that counts (no
 * finish reason, tool call, refusal, reasoning, usage or error). The
 * translated stream (stream.ts) takes such a chunk's content as the JSON
 * text it already is and writes its `text_delta` around it. Parsing each
 * chunk and serialising each event was most of what a translated stream of
 * 20 chunks cost over a passed-through one (JSON.parse 28 µs, JSON.stringify
 * 18 µs and their garbage 24 µs of 190 µs under the profiler).
 *
 * The scan is one pass over the text that checks it is JSON as it goes (a
 * chunk JSON.parse refuses is never read here: the stream fails on it as
 * before), with the values of other keys skipped. Anything it does not
 * take is left to the parse: null. A stream's chunks differ only in their
 * text, so after one scan the rest are matched against it (TextDeltas):
 * then only the text is checked.
 *
 * Beside workers/providers/json-in-place.ts, which reads one provider's
 * exact spelling of its own event: chat chunks come from every upstream
 * the chat path relays, in any key order and spacing, so this reads JSON's
 * grammar rather than one spelling. What a scan found is kept in module
 * variables, not an object per chunk: it runs on every chunk of a stream.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;
const ZERO = 0x30;
const NINE = 0x39;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
/** Nesting the skipping of a value follows (the parse takes deeper chunks). */
const MAX_DEPTH = 32;

/** A key of a chunk that matters here, by where it is. */
const TOP_KEYS = ['choices', 'usage', 'error', 'id', 'model'] as const;
const CHOICE_KEYS = ['index', 'delta', 'finish_reason'] as const;
const DELTA_KEYS = ['content', 'refusal', 'reasoning_content', 'reasoning', 'tool_calls'] as const;

/** What the last string scanned held besides plain text: an escape, or a surrogate (JSON.stringify may write either otherwise). */
let escaped = false;
/** The content string found in the delta: its quotes' offsets, and whether JSON.stringify writes it as it is. */
let contentStart = -1;
let contentEnd = -1;
let contentPlain = true;

/** The chunk's `id` and `model`, when they are strings (undefined when it has none). */
let chunkId: string | undefined;
let chunkModel: string | undefined;

/** The last string value of the chunk's own keys (id, model, OpenAI's obfuscation…) after the content: its quotes' offsets, or -1. */
let tailStart = -1;
let tailEnd = -1;

/**
 * plainTextDelta for the chunks of one stream, which an upstream writes alike but for their text
 * (the same id, model and keys in the same order): once a chunk was read, a chunk with the same
 * text around its content string is the same JSON with another string there, so only that string
 * is checked. One more string may differ from chunk to chunk, the chunk's own last string value
 * after the content: OpenAI's `obfuscation`, a random padding in every chunk.
 */
export class TextDeltas {
  /** The last chunk read, up to its content's opening quote; '' before one. */
  #before = '';
  /** From the content's closing quote: to the padding's opening quote when it has one (then `#end` from its closing quote), else to the end. */
  #middle = '';
  #end: string | null = null;

  read(data: string): string | null {
    const text = this.#templated(data);
    return text !== null ? text : this.#scanned(data);
  }

  /**
   * A stream's first chunk (no template yet), which names the message: its text as read() gives it,
   * with its `id` and `model` (undefined where it has none), or null for a chunk of another shape.
   */
  first(data: string): { readonly text: string; readonly id: string | undefined; readonly model: string | undefined } | null {
    const text = this.#scanned(data);
    return text === null ? null : { text, id: chunkId, model: chunkModel };
  }

  #scanned(data: string): string | null {
    const read = plainTextDelta(data);
    if (read !== null && contentStart !== -1) {
      this.#before = data.slice(0, contentStart + 1);
      const padded = tailStart > contentEnd;
      this.#middle = data.slice(contentEnd, padded ? tailStart + 1 : data.length);
      this.#end = padded ? data.slice(tailEnd) : null;
    }
    return read;
  }

  /** The chunk's text when it is the last one's but for its strings (the content and the padding), else null. */
  #templated(data: string): string | null {
    const before = this.#before;
    const middle = this.#middle;
    const end = this.#end;
    // substring and ===, not startsWith: V8 (Node 20) took 1.1 µs for startsWith and endsWith of a chunk's length, and 0.2 µs so.
    if (before.length === 0 || data.substring(0, before.length) !== before) return null;
    // The template's own quotes: `before` ends with the content's opening one, `middle` starts with its closing one.
    const close = stringEnd(data, before.length - 1);
    if (close === -1) return null;
    const plain = !escaped;
    const afterContent = close + middle.length;
    if (end === null) {
      if (afterContent !== data.length || data.substring(close) !== middle) return null;
    } else {
      if (data.substring(close, afterContent) !== middle) return null;
      const padding = stringEnd(data, afterContent - 1);
      if (padding === -1 || padding + end.length !== data.length || data.substring(padding) !== end) return null;
    }
    return close === before.length ? '' : written(data.slice(before.length - 1, close + 1), plain);
  }
}

/** A JSON string's text as JSON.stringify writes it. */
const written = (token: string, plain: boolean): string => (plain ? token : JSON.stringify(JSON.parse(token)));

/**
 * The text of a chunk that is only a text delta of choice 0, as JSON.stringify writes it (quotes
 * included); '' for a chunk of that shape with no text (an empty or null content, no choice); null
 * for any other chunk, or text that is not JSON: the caller parses those.
 */
export function plainTextDelta(data: string): string | null {
  contentStart = -1;
  tailStart = -1;
  chunkId = undefined;
  chunkModel = undefined;
  const end = objectEnd(data, space(data, 0), TOP_KEYS, topValue);
  if (end === -1 || space(data, end) !== data.length) return null;
  if (contentStart === -1 || contentEnd === contentStart + 1) return '';
  return written(data.slice(contentStart, contentEnd + 1), contentPlain);
}

/** A key's value, read by the key's index in its list; returns the offset just past it, or -1 (not taken). */
type ValueReader = (data: string, at: number, key: number, depth: number) => number;

const topValue: ValueReader = (data, at, key) => {
  if (key === 0) return listOfOneChoice(data, at);
  // usage: only null here (a usage chunk is parsed); error: any.
  if (key === 1) return literalEnd(data, at, 'null');
  if (key === 2) return -1;
  // id and model: strings (what the first chunk's message_start takes); anything else is parsed.
  const close = data.charCodeAt(at) === QUOTE ? stringEnd(data, at) : -1;
  if (close === -1) return -1;
  const value = escaped ? (JSON.parse(data.slice(at, close + 1)) as string) : data.slice(at + 1, close);
  if (key === 3) chunkId = value;
  else chunkModel = value;
  return close + 1;
};

const choiceValue: ValueReader = (data, at, key, depth) => {
  if (key === 0) return data.charCodeAt(at) === ZERO && !isDigit(data.charCodeAt(at + 1)) && data.charCodeAt(at + 1) !== DOT ? numberEnd(data, at) : -1;
  if (key === 1) return data.charCodeAt(at) === OPEN_OBJECT ? objectEnd(data, at, DELTA_KEYS, deltaValue, depth + 1) : literalEnd(data, at, 'null');
  return literalEnd(data, at, 'null');
};

const deltaValue: ValueReader = (data, at, key) => {
  if (key !== 0 || data.charCodeAt(at) !== QUOTE) return literalEnd(data, at, 'null');
  const close = stringEnd(data, at);
  if (close === -1) return -1;
  contentStart = at;
  contentEnd = close;
  contentPlain = !escaped;
  return close + 1;
};

/** `[` one choice object `]`, or `[]`. */
function listOfOneChoice(data: string, at: number): number {
  if (data.charCodeAt(at) !== OPEN_LIST) return -1;
  at = space(data, at + 1);
  if (data.charCodeAt(at) === CLOSE_LIST) return at + 1;
  at = objectEnd(data, at, CHOICE_KEYS, choiceValue, 2);
  if (at === -1) return -1;
  at = space(data, at);
  return data.charCodeAt(at) === CLOSE_LIST ? at + 1 : -1;
}

/**
 * The object at `at`, checked: the keys in `keys` read by `read` (each at most once), any other
 * key's value skipped. Just past its `}`, or -1.
 */
function objectEnd(data: string, at: number, keys: readonly string[], read: ValueReader, depth = 1): number {
  if (data.charCodeAt(at) !== OPEN_OBJECT) return -1;
  at = space(data, at + 1);
  if (data.charCodeAt(at) === CLOSE_OBJECT) return at + 1;
  let seen = 0;
  for (;;) {
    if (data.charCodeAt(at) !== QUOTE) return -1;
    const keyEnd = stringEnd(data, at);
    if (keyEnd === -1) return -1;
    // A key spelled with escapes may still be one of ours: the parse reads it.
    if (escaped && keys.length > 0) return -1;
    const key = keys.length === 0 ? -1 : keyIndex(data, at + 1, keyEnd, keys);
    at = space(data, keyEnd + 1);
    if (data.charCodeAt(at) !== COLON) return -1;
    at = space(data, at + 1);
    if (key === -1) {
      const value = at;
      at = valueEnd(data, at, depth);
      if (depth === 1 && at !== -1 && data.charCodeAt(value) === QUOTE) {
        tailStart = value;
        tailEnd = at - 1;
      }
    } else {
      // The parse keeps a repeated key's last value.
      if ((seen & (1 << key)) !== 0) return -1;
      seen |= 1 << key;
      at = read(data, at, key, depth);
    }
    if (at === -1) return -1;
    at = space(data, at);
    const next = data.charCodeAt(at);
    if (next === CLOSE_OBJECT) return at + 1;
    if (next !== COMMA) return -1;
    at = space(data, at + 1);
  }
}

function keyIndex(data: string, start: number, end: number, keys: readonly string[]): number {
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (key.length === end - start && data.startsWith(key, start)) return i;
  }
  return -1;
}

/** Just past any JSON value at `at`, checked, or -1. */
function valueEnd(data: string, at: number, depth: number): number {
  const c = data.charCodeAt(at);
  if (c === QUOTE) {
    const close = stringEnd(data, at);
    return close === -1 ? -1 : close + 1;
  }
  if (c === OPEN_OBJECT) return depth >= MAX_DEPTH ? -1 : objectEnd(data, at, NO_KEYS, skipNothing, depth + 1);
  if (c === OPEN_LIST) {
    if (depth >= MAX_DEPTH) return -1;
    at = space(data, at + 1);
    if (data.charCodeAt(at) === CLOSE_LIST) return at + 1;
    for (;;) {
      at = valueEnd(data, at, depth + 1);
      if (at === -1) return -1;
      at = space(data, at);
      const next = data.charCodeAt(at);
      if (next === CLOSE_LIST) return at + 1;
      if (next !== COMMA) return -1;
      at = space(data, at + 1);
    }
  }
  if (c === MINUS || isDigit(c)) return numberEnd(data, at);
  return literalEnd(data, at, c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null');
}

const NO_KEYS: readonly string[] = [];
const skipNothing: ValueReader = () => -1;

/** The closing quote of the string opening at `at`, its escapes checked; sets `escaped`. -1 for a string JSON refuses or one not closed. */
function stringEnd(data: string, at: number): number {
  escaped = false;
  for (let i = at + 1; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (c === QUOTE) return i;
    if (c < 0x20) return -1;
    if (c === BACKSLASH) {
      escaped = true;
      const e = data.charCodeAt(++i);
      if (e === 0x75 /* u */) {
        for (let h = 1; h <= 4; h++) if (!isHex(data.charCodeAt(i + h))) return -1;
        i += 4;
      } else if (!(e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74)) return -1;
    } else if (c >= 0xd800 && c <= 0xdfff) escaped = true;
  }
  return -1;
}

/** Just past a JSON number at `at`, or -1. */
function numberEnd(data: string, at: number): number {
  if (data.charCodeAt(at) === MINUS) at++;
  if (data.charCodeAt(at) === ZERO) at++;
  else if (isDigit(data.charCodeAt(at))) while (isDigit(data.charCodeAt(at))) at++;
  else return -1;
  if (data.charCodeAt(at) === DOT) {
    if (!isDigit(data.charCodeAt(++at))) return -1;
    while (isDigit(data.charCodeAt(at))) at++;
  }
  const e = data.charCodeAt(at);
  if (e === 0x65 || e === 0x45) {
    const sign = data.charCodeAt(++at);
    if (sign === PLUS || sign === MINUS) at++;
    if (!isDigit(data.charCodeAt(at))) return -1;
    while (isDigit(data.charCodeAt(at))) at++;
  }
  return at;
}

const literalEnd = (data: string, at: number, literal: string): number => (data.startsWith(literal, at) ? at + literal.length : -1);

function space(data: string, at: number): number {
  for (let c = data.charCodeAt(at); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = data.charCodeAt(++at));
  return at;
}

const isDigit = (c: number): boolean => c >= ZERO && c <= NINE;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
