/**
 * Bearer-token check for protected routes (spec 000, Authentication). Keys
 * are compared as SHA-256 digests with timingSafeEqual, against every
 * accepted key without stopping early, so neither the length nor the
 * content of a key leaks through timing. Several keys allow rotation.
 */
import { hash, timingSafeEqual } from 'node:crypto';

export class BearerAuth {
  readonly #digests: Buffer[];

  constructor(keys: readonly string[]) {
    if (keys.length === 0) throw new Error('BearerAuth needs at least one key');
    this.#digests = keys.map(digest);
  }

  /**
   * Anthropic's way (CONTRACT.md, Anthropic Messages API (inbound), Auth): the key in `x-api-key`
   * (`apiKey`, '' when absent) or as `Authorization: Bearer`.
   */
  acceptsEither(authorization: string, apiKey: string): boolean {
    if (apiKey.length > 0 && apiKey.length <= 4096) {
      const presented = digest(apiKey.trim());
      let ok = false;
      for (const key of this.#digests) ok = timingSafeEqual(key, presented) || ok;
      if (ok) return true;
    }
    return this.accepts(authorization);
  }

  /** `header` is the raw Authorization header value ('' when absent). */
  accepts(header: string): boolean {
    if (header.length < 8 || header.length > 4096) return false;
    const scheme = header.slice(0, 7);
    if (scheme.toLowerCase() !== 'bearer ') return false;
    const presented = digest(header.slice(7).trim());
    let ok = false;
    for (const key of this.#digests) ok = timingSafeEqual(key, presented) || ok;
    return ok;
  }
}

/** One-shot `hash`: a third of the cost of a Hash object, on every authenticated request. */
function digest(value: string): Buffer {
  return hash('sha256', value, 'buffer') as unknown as Buffer;
}
