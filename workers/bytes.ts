/** Reading bytes in place, without decoding them: for checks on the hot path of streams and bodies. */

/** Buffer's `indexOf` for one byte (a memchr), on any Uint8Array: the typed array's own took 3× as long. */
export const indexOfByte = (bytes: Uint8Array, byte: number, from: number): number => Buffer.prototype.indexOf.call(bytes, byte, from);

/** Whether `bytes` holds `expected` at `at` (false where it runs past the end). */
export function bytesAt(bytes: Uint8Array, at: number, expected: readonly number[]): boolean {
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}
