/**
 * Request body collection with the size limit enforced as bytes arrive
 * (spec 000, Rules 3): a declared Content-Length over the limit is refused
 * before any byte is read, and a chunked body is refused at the chunk that
 * crosses it. The result owns its buffer: a worker gets a copy in its ring,
 * and the in-thread session (GATEWAY_WORKERS=0) reads it after this turn.
 */
import type { HttpResponse } from 'uWebSockets.js';

/**
 * `whole`: the refused body was read to its end and dropped, so the client has
 * finished sending and can read the answer; false when a discard bound ended it.
 */
export type BodyOutcome = { ok: true; body: Uint8Array } | { ok: false; reason: 'too_large'; whole: boolean };

/**
 * CONTRACT.md, HTTP: an error answered before the body was read first reads
 * and drops the rest of the body (RFC 9112 §9.6), so a client still sending
 * sees the answer instead of a broken pipe, within these bounds; past either
 * the answer goes out at once and the connection closes.
 */
export const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;
export const DISCARD_WINDOW_MS = 10_000;

/**
 * Counts the body's bytes (`read` of them already read) until its last chunk
 * (`done(true)`) or a bound (`done(false)`), whichever is first; `done` runs once.
 */
function discarding(done: (whole: boolean) => void, read = 0): (bytes: number, isLast: boolean) => void {
  let dropped = read;
  let over = false;
  const finish = (whole: boolean) => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    done(whole);
  };
  const timer = setTimeout(() => finish(false), DISCARD_WINDOW_MS).unref();
  return (bytes, isLast) => {
    dropped += bytes;
    if (isLast) finish(true);
    else if (dropped > DISCARD_LIMIT_BYTES) finish(false);
  };
}

/**
 * Reads and drops a request's body, then `done(whole)` (see `discarding`).
 * A declared length past the bound could never be read whole: `done(false)`
 * at once. Otherwise the caller has registered `res.onAborted`: the answer is
 * written later.
 */
export function discardBody(res: HttpResponse, declared: number | null, done: (whole: boolean) => void): void {
  if (declared !== null && declared > DISCARD_LIMIT_BYTES) {
    done(false);
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
  const refuse = (whole: boolean) => done({ ok: false, reason: 'too_large', whole });
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
      if (isLast) done(offset === -1 ? { ok: false, reason: 'too_large', whole: true } : { ok: true, body });
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
