/**
 * Request body collection with the size limit enforced as bytes arrive
 * (spec 000, Rules 3): a declared Content-Length over the limit is refused
 * before any byte is read, and a chunked body is refused at the chunk that
 * crosses it. The result owns its buffer: a worker gets a copy in its ring,
 * and the in-thread session (GATEWAY_WORKERS=0) reads it after this turn.
 */
import type { HttpResponse } from 'uWebSockets.js';

/**
 * `cut`: null when the refused body was read to its end and dropped, so the
 * client has finished sending and can read the answer; else a discard bound
 * ended the read and the client may still be sending.
 */
export type BodyOutcome = { ok: true; body: Uint8Array } | { ok: false; reason: 'too_large'; cut: CutBody | null };

/**
 * CONTRACT.md, HTTP: an error answered before the body was read first reads
 * and drops the rest of the body (RFC 9112 §9.6), so a client still sending
 * sees the answer instead of a broken pipe, within these bounds; past either
 * the answer goes out at once and the connection closes (`CutBody`).
 */
export const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;
export const DISCARD_WINDOW_MS = 10_000;

/** A cut body's connection closes once no byte came for this long, */
export const LINGER_QUIET_MS = 200;
/** or, cut off, once the client kept sending for this long or this much after the answer. */
export const LINGER_MAX_MS = 2_000;
export const LINGER_MAX_BYTES = DISCARD_LIMIT_BYTES;

/**
 * The rest of a body a discard bound stopped reading. Its answer goes out at
 * once, but the connection must not close while the client is still sending:
 * the kernel answers bytes that reach a closed socket (or are left unread in
 * it) with a reset, and a reset can make the client's kernel drop the answer
 * before the client reads it. So the rest is read and dropped until the
 * client is quiet (it read the answer and stopped) or the body ends: `done(true)`;
 * a client that keeps sending past the linger bounds: `done(false)`, and it
 * is cut off. (What the answer waits on, by request: http.ts, `sendLingering`.)
 */
export class CutBody {
  #bytes = 0;
  #quietly: boolean | null = null;
  #done: ((quietly: boolean) => void) | null = null;
  readonly #quiet = setTimeout(() => this.#end(true), LINGER_QUIET_MS).unref();
  readonly #limit = setTimeout(() => this.#end(false), LINGER_MAX_MS).unref();

  /** A chunk of the rest arrived; `isLast`: the body ended. */
  take(bytes: number, isLast: boolean): void {
    if (this.#quietly !== null) return;
    this.#bytes += bytes;
    if (isLast) this.#end(true);
    else if (this.#bytes > LINGER_MAX_BYTES) this.#end(false);
    else this.#quiet.refresh();
  }

  /** `then(quietly)` once the linger is over (at once if it is). */
  whenOver(then: (quietly: boolean) => void): void {
    if (this.#quietly === null) this.#done = then;
    else then(this.#quietly);
  }

  #end(quietly: boolean): void {
    if (this.#quietly !== null) return;
    this.#quietly = quietly;
    clearTimeout(this.#quiet);
    clearTimeout(this.#limit);
    const done = this.#done;
    this.#done = null;
    done?.(quietly);
  }
}

/**
 * Counts the body's bytes (`read` of them already read) until its last chunk
 * (`done(null)`) or a bound (`done(cut)`, the chunks after it go to the cut),
 * whichever is first; `done` runs once.
 */
function discarding(done: (cut: CutBody | null) => void, read = 0): (bytes: number, isLast: boolean) => void {
  let dropped = read;
  let cut: CutBody | null = null;
  let over = false;
  const finish = (whole: boolean) => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    if (!whole) cut = new CutBody();
    done(cut);
  };
  const timer = setTimeout(() => finish(false), DISCARD_WINDOW_MS).unref();
  return (bytes, isLast) => {
    if (cut !== null) return cut.take(bytes, isLast);
    if (over) return;
    dropped += bytes;
    if (isLast) finish(true);
    else if (dropped > DISCARD_LIMIT_BYTES) finish(false);
  };
}

/**
 * Reads and drops a request's body, then `done(cut)` (see `discarding`).
 * A declared length past the bound could never be read whole: `done(cut)`
 * at once. The caller has registered `res.onAborted`: the answer may be
 * written later.
 */
export function discardBody(res: HttpResponse, declared: number | null, done: (cut: CutBody | null) => void): void {
  if (declared !== null && declared > DISCARD_LIMIT_BYTES) {
    const cut = new CutBody();
    res.onData((chunk, isLast) => cut.take(chunk.byteLength, isLast));
    done(cut);
    return;
  }
  const drop = discarding(done);
  res.onData((chunk, isLast) => drop(chunk.byteLength, isLast));
}

/**
 * `declared` is the Content-Length, or null for a chunked body. uWS frames
 * the body by Content-Length itself, so a body can be neither longer nor
 * shorter than declared by the time `done` is called.
 */
export function collectBody(res: HttpResponse, declared: number | null, limit: number, done: (outcome: BodyOutcome) => void): void {
  const refuse = (cut: CutBody | null) => done({ ok: false, reason: 'too_large', cut });
  if (declared !== null && declared > limit) {
    discardBody(res, declared, refuse);
    return;
  }
  if (declared !== null) {
    const body = new Uint8Array(declared);
    let offset = 0;
    // uWS calls onData once with isLast even for an empty body.
    res.onData((chunk, isLast) => {
      const bytes = new Uint8Array(chunk);
      if (offset + bytes.length > declared) {
        offset = -1; // cannot happen with uWS framing; treat as oversized rather than overflow
      } else if (offset >= 0) {
        body.set(bytes, offset);
        offset += bytes.length;
      }
      if (isLast) done(offset === -1 ? { ok: false, reason: 'too_large', cut: null } : { ok: true, body });
    });
    return;
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  let drop: ((bytes: number, isLast: boolean) => void) | null = null;
  res.onData((chunk, isLast) => {
    if (drop) return drop(chunk.byteLength, isLast);
    total += chunk.byteLength;
    if (total > limit) {
      // The chunk that crossed the limit is the first one dropped.
      chunks.length = 0;
      drop = discarding(refuse, total - chunk.byteLength);
      drop(chunk.byteLength, isLast);
      return;
    }
    chunks.push(new Uint8Array(chunk.slice(0)));
    if (!isLast) return;
    const body = new Uint8Array(total);
    let offset = 0;
    for (const c of chunks) {
      body.set(c, offset);
      offset += c.length;
    }
    done({ ok: true, body });
  });
}
