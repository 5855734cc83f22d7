/**
 * Bytes a worker lends the front without a new buffer per message: one
 * SharedArrayBuffer both threads map, written by the worker in order and
 * released by the front in the same order, once it is done with them.
 *
 * Why: an ArrayBuffer transferred to the front is new external memory to
 * the front's V8, which counts it against the old generation's limit until
 * a GC frees it. The front allocates little else, so scavenges are rare,
 * and ~12 MB of adopted answers started a mark-compact every ~30 ms under
 * embeddings load (trace: "Start (allocation limit)" at 11 MB of a 23 MB
 * limit). Bytes in the ring are nobody's allocation.
 *
 * One writer, one reader, records in order: the only shared state is the
 * reader's release mark. Positions are uint32 counters that wrap; the ring's
 * size is a power of two, so a counter maps to an offset with a mask. A
 * record never straddles the end: the writer skips to the start instead,
 * and the skipped tail is released with the record after it.
 */

/** One record as the reader finds it: where it ends (a counter) and how long it is. */
export type RingRecord = readonly [end: number, length: number];

/** Room for the release mark, on its own cache line. */
const HEADER_BYTES = 64;

/** A ring of `bytes` (a power of two) for one worker → front port. */
export function createRing(bytes: number): SharedArrayBuffer {
  if (bytes < 1024 || (bytes & (bytes - 1)) !== 0) throw new Error(`ring size ${bytes} is not a power of two ≥ 1 KiB`);
  return new SharedArrayBuffer(HEADER_BYTES + bytes);
}

class RingView {
  /** [0]: the counter up to which the reader has released. */
  protected readonly mark: Uint32Array;
  protected readonly bytes: Buffer;
  protected readonly mask: number;

  constructor(shared: SharedArrayBuffer) {
    this.mark = new Uint32Array(shared, 0, 1);
    this.bytes = Buffer.from(shared, HEADER_BYTES);
    this.mask = this.bytes.byteLength - 1;
  }
}

export class RingWriter extends RingView {
  /** The counter up to which this side has written: it starts where the reader has released. */
  #written = Atomics.load(this.mark, 0);

  /** The largest record: a quarter of the ring, so a few answers fit side by side. */
  get maxRecord(): number {
    return this.bytes.byteLength >>> 2;
  }

  /**
   * Copies the bytes (one buffer, or its pieces) into the ring as one
   * record and returns it; null when they are more than `maxRecord` or the
   * reader has not yet released enough room (the caller sends them another
   * way).
   */
  write(bytes: Uint8Array | readonly Uint8Array[]): RingRecord | null {
    const pieces = bytes instanceof Uint8Array ? [bytes] : bytes;
    let length = 0;
    for (const piece of pieces) length += piece.byteLength;
    if (length === 0 || length > this.maxRecord) return null;
    const size = this.bytes.byteLength;
    let start = this.#written;
    let offset = start & this.mask;
    if (offset + length > size) {
      start = (start + size - offset) >>> 0;
      offset = 0;
    }
    const end = (start + length) >>> 0;
    if (((end - Atomics.load(this.mark, 0)) >>> 0) > size) return null;
    for (const piece of pieces) {
      // Not set() (nor Buffer's copy(), which is set()): into shared memory V8 copies with
      // relaxed atomics, byte by byte for an unaligned source: 1.5-3 GB/s, ~18 % of the
      // process's CPU under embeddings load. fill() with a buffer of exactly the span's
      // length is one native memcpy (18-23 GB/s).
      if (piece.byteLength > 0) this.bytes.fill(piece, offset, offset + piece.byteLength);
      offset += piece.byteLength;
    }
    this.#written = end;
    return [end, length];
  }
}

export class RingReader extends RingView {
  /** The record's bytes, valid until it is released. */
  view([end, length]: RingRecord): Uint8Array {
    const offset = ((end - length) >>> 0) & this.mask;
    return this.bytes.subarray(offset, offset + length);
  }

  /** Gives back every record up to and including this one (and any skipped tail before it). */
  release([end]: RingRecord): void {
    Atomics.store(this.mark, 0, end);
  }
}
