/**
 * A MessagePort that speaks frames. Frames sent in the same turn of the
 * event loop are batched into one postMessage (one wake-up of the other
 * thread instead of many); their metadata is one msgpackr record list.
 * A sent payload is transferred, not copied; a lent one (read only while
 * its frame is handled) is copied into a shared ring, when the port has
 * one, and read there in place (protocol/shared-ring.ts says why), and the
 * sender's buffers are freed at once (channel.ts, `freeNow`). The
 * record list goes through the ring too: a message then carries no buffer
 * of its own, and neither thread allocates or sweeps one per batch.
 *
 * Wire shape of one posted message: `[meta, ...payloads]`, where `meta` is
 * the packed record list `[frame, where, frame, where, …]`, in a buffer of
 * its own or as a `[start, length]` slice of the ring, and `where` is the
 * position in `payloads`, -1 for no payload, or a slice of the ring. A
 * frame that holds shared memory (`share`) is posted on its own, unpacked,
 * as `{ shared: frame }`, after the batch queued before it.
 */
import type { MessagePort } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import { freeNow, joinPieces, type FrameHandler, type FrameSender, type Payload } from './channel.js';
import type { RingReader, RingSlice, RingWriter } from './shared-ring.js';

const packr = new Packr({ useRecords: false, moreTypes: false });

/** The rings of a port: the one its lent payloads go into, the one it reads the other end's from. */
export interface PortRings {
  readonly lendInto?: RingWriter;
  readonly borrowFrom?: RingReader;
}

type Where = number | RingSlice;

export class FramePort<In, Out> implements FrameSender<Out> {
  readonly #port: MessagePort;
  readonly #lendInto: RingWriter | null;
  #metas: unknown[] = [];
  #payloads: Uint8Array[] = [];
  #scheduled = false;
  #closed = false;

  constructor(port: MessagePort, onFrame: FrameHandler<In>, rings: PortRings = {}) {
    this.#port = port;
    this.#lendInto = rings.lendInto ?? null;
    const borrowFrom = rings.borrowFrom ?? null;
    const ring = (): RingReader => {
      if (borrowFrom === null) throw new Error('bytes lent through a ring this port does not have');
      return borrowFrom;
    };
    port.on('message', (message: [Uint8Array | RingSlice, ...Uint8Array[]] | { shared: In }) => {
      if (!Array.isArray(message)) return onFrame(message.shared, undefined);
      const [meta, ...payloads] = message;
      const list = packr.unpack(meta instanceof Uint8Array ? meta : ring().view(meta)) as unknown[];
      try {
        for (let i = 0; i < list.length; i += 2) {
          const where = list[i + 1] as Where;
          if (typeof where === 'number') {
            onFrame(list[i] as In, where >= 0 ? payloads[where] : undefined);
            continue;
          }
          try {
            onFrame(list[i] as In, ring().view(where));
          } finally {
            ring().release(where);
          }
        }
      } finally {
        // The record list was written after every payload lent in its batch, so it is released last.
        if (!(meta instanceof Uint8Array)) ring().release(meta);
      }
    });
  }

  /**
   * Queues a frame. A single buffer is transferred when the view spans it
   * (else its bytes are copied); pieces are someone else's and are always
   * copied, joined into one buffer: transferring undici's read buffer
   * detaches it under the parser that is still reading it.
   */
  send(frame: Out, payload?: Payload): void {
    if (this.#closed) return;
    let index = -1;
    if (payload !== undefined) {
      index = this.#payloads.length;
      this.#payloads.push(transferable(payload));
    }
    this.#queue(frame, index);
  }

  /**
   * Queues a frame whose payload the other end reads only while it handles
   * the frame. Into the ring when there is room, else copied into a buffer
   * of its own (as pieces are by `send`); then the payload's own buffers
   * are freed (FrameSender.lend).
   */
  lend(frame: Out, payload: Payload): void {
    if (this.#closed) return;
    const slice = this.#lendInto?.write(payload);
    if (slice) this.#queue(frame, slice);
    else this.send(frame, payload instanceof Uint8Array ? [payload] : payload);
    // Copied either way: the sender's own buffers can go now (FrameSender.lend).
    freeNow(payload);
  }

  /** FrameSender.share: the batch so far goes first, then this frame alone, by structured clone. */
  share(frame: Out): void {
    if (this.#closed) return;
    this.#flush();
    this.#port.postMessage({ shared: frame });
  }

  #queue(frame: Out, where: Where): void {
    this.#metas.push(frame, where);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    if (this.#closed || this.#metas.length === 0) return;
    // pack() returns a view into msgpackr's reused buffer: the ring copies it, or it is copied out to be transferred.
    const packed = packr.pack(this.#metas);
    const slice = this.#lendInto?.write(packed) ?? null;
    const payloads = this.#payloads;
    this.#metas = [];
    this.#payloads = [];
    const transfer = payloads.map((p) => p.buffer as ArrayBuffer);
    if (slice !== null) {
      this.#port.postMessage([slice, ...payloads], transfer);
      return;
    }
    const meta = new Uint8Array(packed);
    this.#port.postMessage([meta, ...payloads], [meta.buffer, ...transfer]);
  };

  /** Lets the thread exit while the port is open (the pool owns the lifetime). */
  unref(): void {
    this.#port.unref();
  }

  close(): void {
    if (this.#closed) return;
    this.#flush();
    this.#closed = true;
    this.#port.close();
  }
}

/** Bytes this port may transfer: the payload's own buffer when it spans it, else a copy. */
function transferable(payload: Payload): Uint8Array {
  if (!(payload instanceof Uint8Array)) return joinPieces(payload);
  // Uint8Array's slice copies; a Buffer's own slice() would only make another view.
  return ownsItsBuffer(payload) ? payload : Uint8Array.prototype.slice.call(payload);
}

/** True when the view spans its whole ArrayBuffer, so transferring it moves exactly these bytes. */
function ownsItsBuffer(view: Uint8Array): boolean {
  return view.byteOffset === 0 && view.byteLength === view.buffer.byteLength && view.buffer instanceof ArrayBuffer;
}
