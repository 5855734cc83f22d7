/**
 * Gemini's stream framing. `streamGenerateContent?alt=sse` writes SSE
 * events, one `data:` line each, but an error that happens once the stream
 * is under way (a quota running out, an internal error) comes as a JSON
 * error body written straight into the stream after the events, outside
 * any SSE framing (@google/genai reads it so: each chunk that parses as JSON
 * with an `error` is thrown; its own test writes `data: …\n\n` then
 * `{"error": {...}}`). The SSE parser would refuse those lines as no SSE
 * field, and the error's kind (a 429 with its retry delay) would be lost;
 * this parser hands such a body on as one more event instead, so the
 * stream translator makes it the attempt's failure (errors.ts).
 *
 * A body outside the framing begins with `{` where an event would begin:
 * at the start of the stream, or after a blank line. Everything before it
 * goes through the SSE parser; from it on, text is collected (bounded)
 * until it parses as JSON, or the stream ends.
 */
import { GatewayError } from '../../../protocol/errors.js';
import { decodedEvents, SseParser, Utf8Chunks, type SseBatch } from '../../sse.js';
import { tryParse } from '../compatible.js';
import type { StreamParser } from '../http-attempt.js';

const LF = 0x0a;
const CR = 0x0d;
const BRACE = 0x7b;
const NOTHING: SseBatch = { verbatim: false, events: [], names: null };

export class GeminiStreamParser implements StreamParser {
  readonly #sse: SseParser;
  readonly #maxChars: number;
  readonly #utf8 = new Utf8Chunks();
  /** The body outside the framing read so far; null while the stream is framed. */
  #unframed: string | null = null;
  /** The last bytes pushed (at most 3), to see whether a chunk starts right after a blank line. */
  #tail: number[] = [];
  #fresh = true;

  constructor(maxEventBytes: number) {
    this.#sse = new SseParser(maxEventBytes);
    this.#maxChars = maxEventBytes;
  }

  push(chunk: Uint8Array): SseBatch {
    if (chunk.length === 0) return NOTHING;
    if (this.#unframed !== null) return this.#collect(chunk);
    const at = this.#unframedStart(chunk);
    this.#remember(chunk);
    if (at === -1) return this.#sse.push(chunk);
    const before = at === 0 ? NOTHING : this.#sse.push(chunk.subarray(0, at));
    this.#unframed = '';
    const body = this.#collect(chunk.subarray(at));
    if (body.verbatim || body.events.length === 0) return before;
    const { events, names } = decodedEvents(before);
    return { verbatim: false, events: [...events, ...body.events], names: names === null ? null : [...names, null] };
  }

  finish(): { readonly verbatim: false; readonly events: readonly string[]; readonly names: readonly (string | null)[] | null } {
    if (this.#unframed === null) return this.#sse.finish();
    const text = this.#unframed + this.#utf8.end();
    this.#unframed = null;
    return { verbatim: false, events: text.trim().length === 0 ? [] : [text], names: null };
  }

  /** Adds bytes to the unframed body: the body as one event once it is whole JSON. */
  #collect(bytes: Uint8Array): SseBatch {
    const text = (this.#unframed as string) + this.#utf8.decode(bytes);
    if (text.length > this.#maxChars) throw new GatewayError('upstream_response_too_large', 'a provider stream event exceeds the configured limit');
    if (tryParse(text) === undefined) {
      this.#unframed = text;
      return NOTHING;
    }
    // Whole: what follows is framed again (a blank line before the next event, if any).
    this.#unframed = null;
    this.#tail = [LF, LF];
    return { verbatim: false, events: [text], names: null };
  }

  /** Where in `chunk` a body outside the framing begins: a `{` at the start of the stream or right after a blank line; -1 for none. */
  #unframedStart(chunk: Uint8Array): number {
    const tail = this.#tail;
    const byte = (i: number): number | undefined => (i >= 0 ? chunk[i] : tail[tail.length + i]);
    for (let i = chunk.indexOf(BRACE); i !== -1; i = chunk.indexOf(BRACE, i + 1)) {
      if (i === 0 && this.#fresh) return 0;
      // One line end (CRLF, LF or CR) before the brace, and another before that: a blank line.
      let k = i - 1;
      const last = byte(k);
      if (last === LF) k -= byte(k - 1) === CR ? 2 : 1;
      else if (last === CR) k -= 1;
      else continue;
      const before = byte(k);
      if (before === LF || before === CR) return i;
    }
    return -1;
  }

  #remember(chunk: Uint8Array): void {
    this.#fresh = false;
    const keep = Array.from(chunk.subarray(Math.max(0, chunk.length - 3)));
    this.#tail = [...this.#tail, ...keep].slice(-3);
  }
}
