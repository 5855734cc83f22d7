import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRing, RingReader, RingWriter, type RingRecord } from './byte-ring.js';

const RING = 4096;

/** `n` bytes from a seed, as pieces cut at `cuts` (fractions), each piece a view at an odd offset into a larger buffer. */
function pieces(n: number, seed: number, cuts: readonly number[]): Uint8Array[] {
  const whole = Buffer.allocUnsafe(n + 3);
  for (let i = 0; i < whole.length; i++) whole[i] = (i * 131 + seed * 7) & 0xff;
  const bytes = whole.subarray(3);
  const at = [...new Set(cuts.map((c) => Math.floor(c * n)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const cut of [...at, n]) {
    out.push(bytes.subarray(from, cut));
    from = cut;
  }
  return out;
}

const step = fc.oneof(
  fc.record({ write: fc.integer({ min: 0, max: RING / 2 }), seed: fc.nat(255), cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }) }),
  fc.record({ release: fc.nat(8) }),
);

/** Runs steps against a ring whose counters start at `start`; checks every held record after every step. */
function run(steps: ReadonlyArray<{ write: number; seed: number; cuts: number[] } | { release: number }>, start: number): void {
  const shared = createRing(RING);
  const reader = new RingReader(shared);
  if (start !== 0) reader.release([start, 0]);
  const writer = new RingWriter(shared);
  const held: Array<{ record: RingRecord; bytes: Buffer }> = [];
  for (const s of steps) {
    if ('write' in s) {
      const parts = pieces(s.write, s.seed, s.cuts);
      const record = writer.write(parts);
      const heldBytes = held.reduce((n, h) => n + h.bytes.length, 0);
      if (s.write === 0 || s.write > writer.maxRecord) expect(record).toBeNull();
      // Room is never refused while nothing is held (the skipped tail is released with the rest).
      else if (held.length === 0) expect(record).not.toBeNull();
      if (record) {
        expect(record[1]).toBe(s.write);
        held.push({ record, bytes: Buffer.concat(parts) });
        expect(heldBytes + s.write).toBeLessThanOrEqual(RING);
      }
    } else if (held.length > 0) {
      const upTo = Math.min(s.release, held.length - 1);
      reader.release(held[upTo]!.record);
      held.splice(0, upTo + 1);
    }
    for (const h of held) expect(Buffer.from(reader.view(h.record)).equals(h.bytes)).toBe(true);
  }
}

describe('byte ring', () => {
  it('every record reads back as written until released, whatever the sizes, pieces and release pattern', () => {
    fc.assert(fc.property(fc.array(step, { maxLength: 60 }), (steps) => run(steps, 0)), { numRuns: 300 });
  });

  it('the same when the uint32 counters wrap past 2^32 mid-run', () => {
    fc.assert(fc.property(fc.array(step, { maxLength: 60 }), fc.integer({ min: 1, max: 3 * RING }), (steps, before) => run(steps, (2 ** 32 - before) >>> 0)), { numRuns: 300 });
  });

  it('refuses a record while the reader holds the room it needs, and takes it once released', () => {
    const shared = createRing(RING);
    const writer = new RingWriter(shared);
    const reader = new RingReader(shared);
    const quarter = writer.maxRecord;
    const records = [0, 1, 2, 3].map((seed) => writer.write(pieces(quarter, seed, [])));
    expect(records.every((r) => r !== null)).toBe(true);
    expect(writer.write(pieces(1, 9, []))).toBeNull();
    reader.release(records[0]!);
    const next = writer.write(pieces(quarter, 5, [0.5]));
    expect(next).not.toBeNull();
    expect(Buffer.from(reader.view(next!)).equals(Buffer.concat(pieces(quarter, 5, [])))).toBe(true);
    // The ones still held were not touched.
    expect(Buffer.from(reader.view(records[1]!)).equals(Buffer.concat(pieces(quarter, 1, [])))).toBe(true);
  });

  it('is shared memory: the reader sees the writer through another view of the same buffer', () => {
    const shared = createRing(RING);
    const record = new RingWriter(shared).write([Buffer.from('hello'), Buffer.from(' ring')]);
    const view = new RingReader(shared).view(record!);
    expect(view.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(Buffer.from(view).toString()).toBe('hello ring');
  });

  it('wants a power of two of at least 1 KiB', () => {
    expect(() => createRing(3000)).toThrow(/power of two/);
    expect(() => createRing(512)).toThrow(/power of two/);
  });
});
