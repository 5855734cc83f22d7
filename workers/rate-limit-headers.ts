/**
 * The provider response headers a caller may see (CONTRACT.md, rate-limit
 * allowlist). Every other provider header (hop-by-hop, set-cookie,
 * authorization, server, …) is dropped here, in the worker, so it never
 * reaches the front.
 */

export const RATE_LIMIT_HEADERS: ReadonlySet<string> = new Set([
  'x-ratelimit-limit-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-requests',
  'x-ratelimit-reset-tokens',
  'retry-after',
  'retry-after-ms',
]);

const SAFE_VALUE = /^[\x20-\x7e]{0,256}$/;

/** Printable ASCII, at most 256 characters: a header value that may go to the caller. */
export const safeHeaderValue = (value: string): boolean => SAFE_VALUE.test(value);

/** A new list each call, which a caller may add its own to (anthropic/errors.ts). */
export function allowlistedHeaders(headers: Record<string, string | string[] | undefined>): string[] {
  const out: string[] = [];
  for (const name in headers) {
    if (!RATE_LIMIT_HEADERS.has(name)) continue;
    const value = headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined && safeHeaderValue(first)) out.push(name, first);
  }
  return out;
}
