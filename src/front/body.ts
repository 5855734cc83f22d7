/**
 * Request body collection with the size limit enforced as bytes arrive
 * (spec 000, Rules 3): a declared Content-Length over the limit is refused
 * before any byte is read, and a chunked body is refused at the chunk that
 * crosses it. The result owns its buffer: a worker gets a copy in its ring,
 * and the in-thread session (GATEWAY_WORKERS=0) reads it after this turn.
 */
import type { HttpResponse } from 'uWebSockets.js';

export type BodyOutcome = { ok: true; body: Uint8Array } | { ok: false; reason: 'too_large' };

/**
 * `declared` is the Content-Length, or null for a chunked body. uWS frames
 * the body by Content-Length itself, so a body can be neither longer nor
 * shorter than declared by the time `done` is called.
 */
export function collectBody(res: HttpResponse, declared: number | null, limit: number, done: (outcome: BodyOutcome) => void): void {
  if (declared !== null && declared > limit) {
    done({ ok: false, reason: 'too_large' });
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
      if (isLast) done(offset === -1 ? { ok: false, reason: 'too_large' } : { ok: true, body });
    });
    return;
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  let refused = false;
  res.onData((chunk, isLast) => {
    if (refused) return;
    total += chunk.byteLength;
    if (total > limit) {
      refused = true;
      done({ ok: false, reason: 'too_large' });
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
