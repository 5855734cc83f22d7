/** Reading bytes in place, without decoding them: for checks on the hot path of streams and bodies. */

/** Buffer's `indexOf` for one byte (a memchr), on any Uint8Array: the typed array's own took 3× as long. */
export const indexOfByte = (bytes: Uint8Array, byte: number, from: number): number => Buffer.prototype.indexOf.call(bytes, byte, from);

/** Whether `bytes` holds `expected` at `at` (false where it runs past the end). */
export function bytesAt(bytes: Uint8Array, at: number, expected: readonly number[]): boolean {
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}

/** The same memory as a Buffer, for Buffer's methods (a Uint8Array has no `toString('utf8')` or string `indexOf`). */
export const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** Bytes `start` to `end` as text, invalid sequences replaced by U+FFFD (Buffer's decoder). */
export const utf8Text = (bytes: Uint8Array, start = 0, end = bytes.byteLength): string => asBuffer(bytes).toString('utf8', start, end);
