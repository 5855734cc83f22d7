/**
 * X-Request-ID (CONTRACT.md): a caller's value is kept when it is 1–128
 * visible ASCII characters; anything else (empty, too long, spaces, CR/LF,
 * non-ASCII) is replaced, never reflected.
 */
import { randomUUID } from 'node:crypto';

const VISIBLE_ASCII = /^[\x21-\x7e]{1,128}$/;

export function requestIdFrom(header: string): string {
  return VISIBLE_ASCII.test(header) ? header : randomUUID();
}
