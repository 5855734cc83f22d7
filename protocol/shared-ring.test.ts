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

  it('refuses what does not fit until the reader releases it, and an empty payload or one over a quarter of the ring always', () => {
    const memory = ringMemory(4096);
    const writer = new RingWriter(memory);
    const reader = new RingReader(memory);
    expect(writer.largest).toBe(1024);
    expect(writer.write(new Uint8Array(0))).toBeNull();
    expect(writer.write(bytes(1025, 0))).toBeNull();
    const slices = [1, 2, 3, 4].map((seed) => writer.write(bytes(1024, seed)) as RingSlice);
    expect(slices.every((slice) => slice !== null)).toBe(true);
    // The ring is full: a fifth must start over at 0, where the first still is.
    expect(writer.write(bytes(1024, 5))).toBeNull();
    reader.release(slices[0] as RingSlice);
    const fifth = writer.write(bytes(1024, 5)) as RingSlice;
    expect(fifth).not.toBeNull();
    expect(reader.view(fifth).byteOffset).toBe(reader.view([0, 1]).byteOffset);
    expect(Buffer.from(reader.view(fifth)).equals(Buffer.from(bytes(1024, 5)))).toBe(true);
    expect(Buffer.from(reader.view(slices[3] as RingSlice)).equals(Buffer.from(bytes(1024, 4)))).toBe(true);
  });

  it('keeps every payload intact across many wraps, with the reader a few payloads behind', () => {
    const memory = ringMemory(4096);
    const writer = new RingWriter(memory);
    const reader = new RingReader(memory);
    const unread: Array<{ slice: RingSlice; expected: Uint8Array }> = [];
    let written = 0;
    let refused = 0;
    for (let i = 0; i < 5000; i++) {
      const payload = bytes(1 + ((i * 7919) % 1024), i);
      const slice = writer.write(i % 3 === 0 ? [payload.subarray(0, 1), payload.subarray(1)] : payload);
      if (slice === null) {
        refused++;
      } else {
        written++;
        unread.push({ slice, expected: payload });
      }
      // The reader handles the oldest when six are waiting, or when the writer found no room.
      while (unread.length > 5 || (slice === null && unread.length > 0)) {
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
    const payloads = [bytes(60, 1), bytes(200, 2), bytes(256, 3), bytes(250, 4)];
    for (const payload of payloads) {
      const slice = writer.write(payload) as RingSlice;
      expect(slice).not.toBeNull();
      expect(Buffer.from(reader.view(slice)).equals(Buffer.from(payload))).toBe(true);
      reader.release(slice);
    }
  });
});
