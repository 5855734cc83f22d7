/**
 * The commit point of a stream (CONTRACT.md, Streams and the commit
 * point): one gate per attempt, between the adapter and the client. A
 * stream's head and its first events are held until an event with content
 * (text, a tool call, a finish reason; a role-only or empty chunk is held)
 * or until `stream_commit_timeout`; an error event before then fails the
 * attempt, which the loop can still retry or fall back from, invisibly:
 * the held events of a failed attempt are dropped, so the client sees one
 * clean stream with one role chunk. From the commit on, events pass as
 * they come (the verbatim path) and a failure is the client's. An answer
 * that is not a stream passes at once: it is whole, so it is committed.
 *
 * Events are parsed only until the commit: usually the first one or two;
 * a translated stream's are not read at all (its translator says whether
 * they carry content).
 */
import { joinPieces, type Payload } from '../../protocol/channel.js';
import type { HeaderList, Usage } from '../../protocol/frames.js';
import { asBuffer, bytesAt, indexOfByte, utf8Text } from '../bytes.js';
import type { AttemptSink } from '../providers/adapter.js';
import { AttemptFailure } from './failure.js';

/** Where a gate's committed answer goes, and who hears that it committed. */
export interface GateOwner {
  /** Called once, just before the attempt's first byte goes to the client. */
  committing(gate: CommitGate): void;
  /** The answer is whole: its provider's usage (null when it reported none), which settles the call's tokens. */
  used(usage: Usage | null): void;
  readonly client: AttemptSink;
}

export class CommitGate implements AttemptSink {
  /** Something of this attempt went to the client: it can no longer be retried. */
  committed = false;
  /** performance.now() of the commit (the latency sample of a stream: time to first token). */
  committedAt = 0;
  /** performance.now() of a stream's first event with content, when it came before the commit timeout; 0 otherwise. */
  firstContentAt = 0;
  /** The status of the answer that passed: a reply's, or 200 for a stream. */
  status = 0;
  readonly #owner: GateOwner;
  readonly #holdMs: number;
  #head: HeaderList | null = null;
  #held: Uint8Array[] | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(owner: GateOwner, holdMs: number) {
    this.#owner = owner;
    this.#holdMs = holdMs;
  }

  reply(status: number, contentType: string, headers: HeaderList, body: Payload, usage: Usage | null, upstreamMs: number): void {
    this.status = status;
    this.#mark();
    this.#owner.used(usage);
    this.#owner.client.reply(status, contentType, headers, body, usage, upstreamMs);
  }

  head(headers: HeaderList): void {
    this.status = 200;
    this.#head = headers;
    this.#timer = setTimeout(() => this.#commit(), this.#holdMs);
  }

  data(bytes: Payload, content?: boolean): void {
    if (this.committed) {
      this.#owner.client.data(bytes);
      return;
    }
    if (content ?? carriesContent(bytes)) {
      // Usually the first events: they pass on as lent, with whatever was held before them.
      this.firstContentAt = performance.now();
      this.#commit();
      this.#owner.client.data(bytes);
      return;
    }
    // The adapter's pieces are only lent (undici's read buffers): a held event is a copy.
    (this.#held ??= []).push(bytes instanceof Uint8Array ? bytes : joinPieces(bytes));
  }

  end(usage: Usage | null, upstreamMs: number): void {
    // A stream that ended with no content at all (only a role chunk and [DONE]) is still the answer.
    if (!this.committed) this.#commit();
    this.#owner.used(usage);
    this.#owner.client.end(usage, upstreamMs);
  }

  /** The attempt is over: a held head that never committed is dropped with it. */
  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #mark(): void {
    this.committed = true;
    this.committedAt = performance.now();
    this.#owner.committing(this);
  }

  #commit(): void {
    if (this.committed || this.#head === null) return;
    this.close();
    this.#mark();
    const { client } = this.#owner;
    client.head(this.#head);
    const held = this.#held;
    this.#held = null;
    if (held !== null) client.data(held.length === 1 ? (held[0] as Uint8Array) : joinPieces(held));
  }
}

/**
 * Whether whole SSE events carry content; throws the attempt's failure on
 * an error event (`data: {"error":…}`, or a Responses API `error` /
 * `response.failed`). `[DONE]` counts: the stream ends. A Responses API
 * stream (a deployment with responses_api) commits at its first event past
 * the preamble (`response.created`, `response.in_progress`, an item or a
 * content part added).
 */
export function carriesContent(bytes: Payload): boolean {
  const whole = asBuffer(bytes instanceof Uint8Array ? bytes : bytes.length === 1 ? (bytes[0] as Uint8Array) : joinPieces(bytes));
  // Event by event, each decoded only when reached: a whole stream in one read commits at its first content event.
  for (let start = 0; start < whole.length; ) {
    const end = eventEnd(whole, start);
    const inPlace = judgeInPlace(whole, start, end);
    if (inPlace === COMMIT) return true;
    if (inPlace === HOLD) {
      start = end + 2;
      continue;
    }
    const data = dataOf(utf8Text(whole, start, end));
    start = end + 2;
    if (data === null) continue;
    if (data === '[DONE]') return true;
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      // The adapter checked each event's shape; what it let through is passed on, not judged here.
      return true;
    }
    if (typeof event !== 'object' || event === null) return true;
    const type = (event as { type?: unknown }).type;
    if ('error' in event || type === 'error' || type === 'response.failed') {
      throw new AttemptFailure('transient', 'upstream_error', 'the provider stream reported an error before its first content', 200);
    }
    // A passed-through Responses API stream names its events; a chat chunk has none.
    if (typeof type === 'string' ? !RESPONSES_PREAMBLE.has(type) : hasContent(event as ChunkShape)) return true;
  }
  return false;
}

interface ChunkShape {
  readonly choices?: ReadonlyArray<{ readonly finish_reason?: unknown; readonly delta?: Record<string, unknown> }>;
}

/** judgeInPlace's verdicts: the event carries content, carries none (and is no error), or needs the parse. */
const HOLD = 0;
const COMMIT = 1;
const PARSE = 2;
type InPlace = typeof HOLD | typeof COMMIT | typeof PARSE;

/** How a key's value weighs (hasContent below): a text, a list, a value that counts unless null; the chunk's list of choices; a word that needs the parse. */
const TEXT = 0;
const LIST = 1;
const NULLABLE = 2;
const CHOICES = 3;
const ASK = 4;
interface Key {
  /** The string's text and closing quote. */
  readonly bytes: readonly number[];
  readonly kind: number;
}
const keyOf = (name: string, kind: number): Key => ({ bytes: [...Buffer.from(`${name}"`)], kind });
/** `error` and `type` count as any string, key or value, as the parse's checks would. */
const KEYS: readonly Key[] = [
  keyOf('content', TEXT), keyOf('reasoning_content', TEXT), keyOf('reasoning', TEXT), keyOf('refusal', TEXT),
  keyOf('tool_calls', LIST), keyOf('function_call', NULLABLE), keyOf('finish_reason', NULLABLE), keyOf('choices', CHOICES),
  keyOf('error', ASK), keyOf('type', ASK),
];
/** Whether any key starts with a byte: most strings start like no key. */
const KEY_START = new Uint8Array(256);
for (const key of KEYS) KEY_START[key.bytes[0] as number] = 1;

/**
 * A chat chunk judged on its bytes, without decoding or parsing it: the role
 * chunk that opens a stream, and its first text, which would otherwise cost
 * a JSON.parse each (about 1.5 µs). One pass over the event, strings skipped
 * by their escapes, so a key is only ever found where JSON has one. COMMIT
 * when a content key (hasContent's) has a value that counts; HOLD when the
 * chunk has choices and an empty text (`""` or null) and nothing that
 * counts; PARSE for anything else: an event that names an error or a type,
 * or a value of another shape (logprobs' `content` list).
 */
function judgeInPlace(bytes: Uint8Array, start: number, end: number): InPlace {
  let content = false;
  let emptyText = false;
  let choices = false;
  for (let at = start; at < end; at++) {
    if (bytes[at] !== QUOTE) continue;
    // A string opens at `at`: a key of ours, or skipped to its closing quote.
    const key = KEY_START[bytes[at + 1] as number] === 1 ? keyAt(bytes, at + 1) : null;
    if (key === null) {
      for (at++; at < end && bytes[at] !== QUOTE; at++) if (bytes[at] === BACKSLASH) at++;
      continue;
    }
    if (key.kind === ASK) return PARSE;
    let v = skipSpace(bytes, at + 1 + key.bytes.length);
    if (bytes[v] !== COLON) {
      at = v - 1; // a value that reads like a key's name
      continue;
    }
    v = skipSpace(bytes, v + 1);
    const value = bytes[v];
    if (key.kind === CHOICES) choices = true;
    else if (value === N) emptyText ||= key.kind === TEXT;
    else if (key.kind === NULLABLE) content = true;
    else if (key.kind === TEXT && value === QUOTE) {
      if (bytes[v + 1] === QUOTE) emptyText = true;
      else content = true;
    } else if (key.kind === LIST && value === OPEN_LIST) content ||= bytes[skipSpace(bytes, v + 1)] !== CLOSE_LIST;
    else return PARSE;
    at = v - 1; // the value itself is read on: a string in it is skipped as any other
  }
  return content ? COMMIT : choices && emptyText ? HOLD : PARSE;
}

function keyAt(bytes: Uint8Array, at: number): Key | null {
  for (let i = 0; i < KEYS.length; i++) {
    const key = KEYS[i] as Key;
    if (bytesAt(bytes, at, key.bytes)) return key;
  }
  return null;
}

function skipSpace(bytes: Uint8Array, at: number): number {
  for (let b = bytes[at]; b === SPACE || b === TAB || b === LF || b === CR; b = bytes[++at]);
  return at;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const SPACE = 0x20;
const TAB = 0x09;
const CR = 0x0d;
const N = 0x6e;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;

/** Text, reasoning text, a refusal, a tool or function call, or a finish reason. */
function hasContent(chunk: ChunkShape): boolean {
  if (!Array.isArray(chunk.choices)) return false;
  for (const choice of chunk.choices) {
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) return true;
    const delta = choice.delta;
    if (!delta) continue;
    for (const key of TEXT_KEYS) if (typeof delta[key] === 'string' && (delta[key] as string).length > 0) return true;
    if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) return true;
    if (delta.function_call !== null && delta.function_call !== undefined) return true;
  }
  return false;
}

const TEXT_KEYS = ['content', 'reasoning_content', 'reasoning', 'refusal'] as const;

/** The Responses API events that open a stream before any content: held like a chat stream's role chunk. */
const RESPONSES_PREAMBLE: ReadonlySet<string> = new Set(['response.created', 'response.in_progress', 'response.queued', 'response.output_item.added', 'response.content_part.added']);

/** Where the event from `start` ends: its blank line's first LF, or the end of the bytes. */
function eventEnd(bytes: Uint8Array, start: number): number {
  for (let at = indexOfByte(bytes, LF, start); at !== -1; at = indexOfByte(bytes, LF, at + 1)) {
    if (bytes[at + 1] === LF) return at;
  }
  return bytes.length;
}

const LF = 0x0a;

/** The joined `data` lines of one event; null for one without (a comment). */
function dataOf(raw: string): string | null {
  let data: string | null = null;
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const value = line.charCodeAt(5) === 0x20 ? line.slice(6) : line.slice(5);
    data = data === null ? value : `${data}\n${value}`;
  }
  return data;
}
