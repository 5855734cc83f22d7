/**
 * A byte ring in shared memory, one way between two threads: the writer
 * copies a payload in and names its place in a frame, the reader reads it
 * in place during the frame's handler and hands the space back.
 *
 * Why not transfer an ArrayBuffer per payload: each one is a fresh
 * off-heap allocation on both threads, and V8 counts it as external memory
 * that forces full collections. With embeddings answers (300 KB each) the
 * front ran a mark-compact every 50–150 ms (`--trace-gc`: "GC in old space
 * requested" at an 11 MB heap), half of its CPU. Views on one shared buffer
 * allocate nothing off-heap.
 *
 * Frames are handled in the order they were written, so the space is handed
 * back in order too: one shared counter says how far the reader has read.
 * Positions count bytes modulo 2^32; the ring's size is a power of two, so
 * a position's place in the ring survives the wrap of the counter.
 */
import { payloadLength, type Payload } from './channel.js';

/** Where a payload lies: its position (modulo 2^32) and length. */
export type RingSlice = readonly [start: number, length: number];

/** Bytes of the ring's head: the reader's position, alone on its cache line. */
const CONTROL_BYTES = 64;

/** The shared memory of a ring of `bytes` (a power of two) for the two ends to be built on. */
export function ringMemory(bytes: number): SharedArrayBuffer {
  if (!Number.isInteger(Math.log2(bytes))) throw new Error(`a ring's size must be a power of two, not ${bytes}`);
  return new SharedArrayBuffer(CONTROL_BYTES + bytes);
}

abstract class RingEnd {
  /** [0]: how far the reader has read (a position modulo 2^32, stored as int32). */
  protected readonly control: Int32Array;
  protected readonly data: Buffer;
  protected readonly mask: number;

  constructor(memory: SharedArrayBuffer) {
    this.control = new Int32Array(memory, 0, 1);
    this.data = Buffer.from(memory, CONTROL_BYTES);
    this.mask = this.data.byteLength - 1;
  }
}

export class RingWriter extends RingEnd {
  /** Where the next payload may start (modulo 2^32): at first, where the reader has read to. */
  #head = Atomics.load(this.control, 0) >>> 0;

  /** The largest payload the ring takes: a quarter of it, so one large reply leaves room for others. */
  get largest(): number {
    return this.data.byteLength >>> 2;
  }

  /**
   * Copies the payload into the ring; null when it does not fit now (the
   * reader is behind), is larger than `largest`, or is empty: the caller
   * sends it another way.
   */
  write(payload: Payload): RingSlice | null {
    const length = payloadLength(payload);
    const size = this.data.byteLength;
    if (length === 0 || length > this.largest) return null;
    let start = this.#head;
    const at = start & this.mask;
    // A payload is one run of bytes: one that would cross the end starts over at the beginning.
    if (at + length > size) start = (start + size - at) >>> 0;
    // Unread bytes lie in [read, head); the payload must not lap them (none to lap when all is read).
    const read = Atomics.load(this.control, 0) >>> 0;
    if (read !== this.#head && ((start + length - read) >>> 0) > size) return null;
    let offset = start & this.mask;
    for (const piece of payload instanceof Uint8Array ? [payload] : payload) {
      // fill(), not set(): into shared memory V8's set() copies with relaxed atomics, about
      // 3 GB/s, where fill() with a source as long as the span is one memcpy (about 23 GB/s).
      if (piece.byteLength > 0) this.data.fill(piece, offset, offset + piece.byteLength);
      offset += piece.byteLength;
    }
    this.#head = (start + length) >>> 0;
    return [start, length];
  }
}

export class RingReader extends RingEnd {
  /** The payload's bytes, in place: valid until `release`. */
  view([start, length]: RingSlice): Uint8Array {
    return new Uint8Array(this.data.buffer, this.data.byteOffset + (start & this.mask), length);
  }

  /** Done with this slice and every one before it: the writer may reuse their space. */
  release([start, length]: RingSlice): void {
    Atomics.store(this.control, 0, (start + length) | 0);
  }
}
