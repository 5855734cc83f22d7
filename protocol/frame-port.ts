/**
 * A MessagePort that speaks frames. Frames sent in the same turn of the
 * event loop are batched into one postMessage (one wake-up of the other
 * thread instead of many); their metadata is one msgpackr record list and
 * their payloads are transferred, not copied.
 *
 * A worker's port also has a byte ring (byte-ring.ts) shared with the
 * front's: the payloads of frames the protocol lends (frames.ts, `lends`)
 * are copied into it instead of transferred when they fit, and the front's
 * port releases them once its handler has returned.
 *
 * Wire shape of one posted message: `[meta, ...payloads]`, where `meta`
 * packs `[frame, where, frame, where, …]` and `where` is -1 (no payload),
 * a position in `payloads`, or a ring record `[end, length]`.
 */
import type { MessagePort } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import type { RingReader, RingRecord, RingWriter } from './byte-ring.js';
import { joinPieces, type FrameHandler, type FrameSender, type Payload } from './channel.js';

type Where = -1 | number | RingRecord;

/** A worker's port: the ring it writes, and which frames' payloads it may lend through it. */
export interface Lending<Out> {
  readonly writer: RingWriter;
  readonly lends: (frame: Out) => boolean;
}

/** The byte ring a port lends payloads through (a worker's port), or reads lent ones from (the front's). */
export type PortRing<Out> = Lending<Out> | { readonly reader: RingReader };

const packr = new Packr({ useRecords: false, moreTypes: false });

export class FramePort<In, Out> implements FrameSender<Out> {
  readonly #port: MessagePort;
  readonly #lending: Lending<Out> | null;
  #metas: unknown[] = [];
  #payloads: Uint8Array[] = [];
  #scheduled = false;
  #closed = false;

  constructor(port: MessagePort, onFrame: FrameHandler<In>, ring?: PortRing<Out>) {
    this.#port = port;
    this.#lending = ring && 'writer' in ring ? ring : null;
    const reader = ring && 'reader' in ring ? ring.reader : null;
    port.on('message', (message: Uint8Array[]) => {
      const [meta, ...payloads] = message;
      const list = packr.unpack(meta as Uint8Array) as unknown[];
      let lent: RingRecord | null = null;
      try {
        for (let i = 0; i < list.length; i += 2) {
          const where = list[i + 1] as Where;
          let payload: Payload | undefined;
          if (typeof where === 'number') payload = where >= 0 ? payloads[where] : undefined;
          else payload = (reader as RingReader).view((lent = where));
          onFrame(list[i] as In, payload);
        }
      } finally {
        if (lent) (reader as RingReader).release(lent);
      }
    });
  }

  /**
   * Queues a frame. A lent payload is copied into the ring when it fits.
   * Else a single buffer is transferred when the view spans it (else its
   * bytes are copied), and pieces, someone else's, are copied, joined into
   * one buffer: transferring undici's read buffer detaches it under the
   * parser that is still reading it.
   */
  send(frame: Out, payload?: Payload): void {
    if (this.#closed) return;
    let where: Where = -1;
    if (payload !== undefined) {
      const lending = this.#lending;
      const record = lending && lending.lends(frame) ? lending.writer.write(payload) : null;
      if (record) {
        where = record;
      } else {
        where = this.#payloads.length;
        this.#payloads.push(transferable(payload));
      }
    }
    this.#metas.push(frame, where);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    if (this.#closed || this.#metas.length === 0) return;
    // pack() returns a view into msgpackr's shared buffer: copy it out so the transfer owns it.
    const meta = new Uint8Array(packr.pack(this.#metas));
    const payloads = this.#payloads;
    this.#metas = [];
    this.#payloads = [];
    const transfer = [meta.buffer as ArrayBuffer, ...payloads.map((p) => p.buffer as ArrayBuffer)];
    this.#port.postMessage([meta, ...payloads], transfer);
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
