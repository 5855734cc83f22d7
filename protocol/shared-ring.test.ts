import { describe, expect, it } from 'vitest';
import { RingReader, RingWriter, ringMemory, type RingSlice } from './shared-ring.js';

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

describe('shared ring', () => {
  it('a payload written in pieces reads back whole, in place in the shared memory', () => {
    const memory = ringMemory(1024);
    const writer = new RingWriter(memory);
    const reader = new RingReader(memory);
    const a = bytes(100, 1);
    const b = bytes(50, 2);
    const slice = writer.write([a, b]) as RingSlice;
    const view = reader.view(slice);
    expect(view.buffer).toBe(memory);
    expect(Buffer.from(view).equals(Buffer.concat([a, b]))).toBe(true);
  });

  it('refuses what does not fit until the reader releases it, and an empty or oversized payload always', () => {
    const memory = ringMemory(1024);
    const writer = new RingWriter(memory);
    const reader = new RingReader(memory);
    expect(writer.write(new Uint8Array(0))).toBeNull();
    expect(writer.write(bytes(1025, 0))).toBeNull();
    const first = writer.write(bytes(600, 1)) as RingSlice;
    expect(first).not.toBeNull();
    // 600 + 600 > 1024, and the second would have to start over at 0, where the first still is.
    expect(writer.write(bytes(600, 2))).toBeNull();
    reader.release(first);
    const second = writer.write(bytes(600, 3)) as RingSlice;
    expect(second).not.toBeNull();
    // It did not fit after the first: it starts over at the beginning, one run of bytes.
    expect(reader.view(second).byteOffset).toBe(reader.view([0, 1]).byteOffset);
    expect(Buffer.from(reader.view(second)).equals(Buffer.from(bytes(600, 3)))).toBe(true);
  });

  it('keeps every payload intact across many wraps, with the reader a few payloads behind', () => {
    const memory = ringMemory(4096);
    const writer = new RingWriter(memory);
    const reader = new RingReader(memory);
    const unread: Array<{ slice: RingSlice; expected: Uint8Array }> = [];
    let written = 0;
    let refused = 0;
    for (let i = 0; i < 5000; i++) {
      const payload = bytes(1 + ((i * 7919) % 1500), i);
      const slice = writer.write(i % 3 === 0 ? [payload.subarray(0, 1), payload.subarray(1)] : payload);
      if (slice === null) {
        refused++;
      } else {
        written++;
        unread.push({ slice, expected: payload });
      }
      // The reader handles the oldest when three are waiting, or when the writer found no room.
      while (unread.length > 3 || (slice === null && unread.length > 0)) {
        const { slice: oldest, expected } = unread.shift() as { slice: RingSlice; expected: Uint8Array };
        expect(Buffer.from(reader.view(oldest)).equals(Buffer.from(expected))).toBe(true);
        reader.release(oldest);
      }
    }
    expect(written).toBeGreaterThan(4000);
    expect(refused).toBeGreaterThan(0);
  });

  it('places payloads right when the position counter wraps past 2^32', () => {
    const memory = ringMemory(1024);
    const reader = new RingReader(memory);
    // Both ends 100 bytes short of 2^32, as after 4 GiB of replies: a writer starts where the reader is.
    const nearWrap = 2 ** 32 - 100;
    reader.release([nearWrap, 0]);
    const writer = new RingWriter(memory);
    const payloads = [bytes(60, 1), bytes(200, 2), bytes(300, 3), bytes(1000, 4)];
    for (const payload of payloads) {
      const slice = writer.write(payload) as RingSlice;
      expect(slice).not.toBeNull();
      expect(Buffer.from(reader.view(slice)).equals(Buffer.from(payload))).toBe(true);
      reader.release(slice);
    }
  });
});
