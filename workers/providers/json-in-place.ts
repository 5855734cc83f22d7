/**
 * Reading a provider's most common stream event in place, on its text:
 * a translator that knows the exact spelling of a text delta takes its
 * index and its still-escaped text without a JSON.parse (about 1.5 µs an
 * event, most of what translating a stream cost). Anything spelled
 * otherwise is left to the parse, which judges it whole.
 */

/** The value of the decimal digits from `start` to `end` (no sign, no leading zero but "0"), -1 if they are not that. */
export function digitsValue(text: string, start: number, end: number): number {
  if (end <= start || end - start > 9 || (text.charCodeAt(start) === 0x30 && end - start > 1)) return -1;
  let value = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i) - 0x30;
    if (c < 0 || c > 9) return -1;
    value = value * 10 + c;
  }
  return value;
}

/** Whether `start` to `end` is the inside of a JSON string: no bare quote or control character, every escape valid. */
export function isStringBody(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c < 0x20) return false;
    if (c !== 0x5c) continue;
    const e = text.charCodeAt(++i);
    if (e === 0x75) {
      if (i + 4 >= end || !/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) return false;
      i += 4;
    } else if (!SIMPLE_ESCAPES.has(e) || i >= end) return false;
  }
  return true;
}

/** The characters after a backslash that JSON allows, besides `u`: " \ / b f n r t. */
const SIMPLE_ESCAPES: ReadonlySet<number> = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

/** A text delta read in place: the index of its block and its text, still JSON-escaped (non-empty). */
export interface TextInPlace {
  readonly index: number;
  readonly escaped: string;
}
