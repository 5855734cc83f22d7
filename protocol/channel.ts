/**
 * The one interface both ends of the protocol send through. Two
 * implementations: `FramePort` (a MessagePort to a worker thread, frames
 * msgpackr-encoded and payloads transferred) and `localChannel` (front and
 * worker session in the same thread, for GATEWAY_WORKERS=0: frames handed
 * over as objects, batched per turn, no copy, no thread wake-up).
 */
import { setFlagsFromString } from 'node:v8';

/**
 * A frame's bytes: one buffer, handed over (the sender must not use it
 * again), or the pieces of one, only read (an upstream body as undici read
 * it, in buffers that are not ours to hand over). In-thread the pieces pass
 * as they are; across threads they are joined into a buffer of their own.
 */
export type Payload = Uint8Array | readonly Uint8Array[];

export type FrameHandler<F> = (frame: F, payload: Payload | undefined) => void;

export interface FrameSender<Out> {
  /** Queues a frame with its payload (see Payload for who owns it). */
  send(frame: Out, payload?: Payload): void;
  /**
   * Queues a frame whose payload the receiver reads only while it handles
   * the frame (a reply body, written out before its handler returns; a
   * request body, parsed before it returns): across threads it is copied
   * into shared memory that is reused once the handler returns, and the
   * sender's buffers are then freed at once (`freeNow`), so only buffers
   * the sender owns outright are lent. In-thread the payload itself is
   * handed over.
   */
  lend(frame: Out, payload: Payload): void;
  /**
   * Sends a frame that holds shared memory (a SharedArrayBuffer, which msgpackr cannot carry: the
   * prefix indexes a config needs), in order with the frames around it: across threads the
   * frames queued before it go first, then it, whole, by structured clone (the memory is shared,
   * not copied). In-thread it is a frame like any other.
   */
  share(frame: Out): void;
  close(): void;
}

/** The payload in one buffer: pieces joined into a new one (the one case a receiver needs it whole). */
export function wholePayload(payload: Payload | undefined): Uint8Array {
  if (payload === undefined) return EMPTY;
  if (payload instanceof Uint8Array) return payload;
  if (payload.length === 1) return payload[0] as Uint8Array;
  return joinPieces(payload);
}

export function payloadLength(payload: Payload): number {
  return payload instanceof Uint8Array ? payload.byteLength : piecesLength(payload);
}

/** The pieces copied into one new buffer of exactly their length (not zero-filled: every byte is written). */
export function joinPieces(pieces: readonly Uint8Array[]): Uint8Array {
  return copyPieces(pieces, Buffer.allocUnsafeSlow(piecesLength(pieces)));
}

/** Pieces up to this size are joined by `joinForNow` in one buffer per thread, reused by every call. */
export const REUSED_JOIN_BYTES = 1024 * 1024;
let reusedJoin: Buffer | null = null;

/**
 * The pieces in one run of bytes, valid only until the next call on this
 * thread: one piece as it is; up to 1 MiB copied into a buffer reused by
 * every call (no buffer the size of the body per request); more, into a new
 * one. For a caller that is done with the bytes before it returns: a body
 * check, or uWS's `end`, which sends or copies every byte before returning.
 */
export function joinForNow(pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 1) return pieces[0] as Uint8Array;
  if (pieces.length === 0) return EMPTY;
  const total = piecesLength(pieces);
  if (total > REUSED_JOIN_BYTES) return joinPieces(pieces);
  return copyPieces(pieces, (reusedJoin ??= Buffer.allocUnsafeSlow(REUSED_JOIN_BYTES)));
}

function piecesLength(pieces: readonly Uint8Array[]): number {
  let total = 0;
  for (const piece of pieces) total += piece.byteLength;
  return total;
}

/** Copies the pieces, in order, to the start of `into` (which must hold them all); returns the part they fill. */
function copyPieces(pieces: readonly Uint8Array[], into: Uint8Array): Uint8Array {
  let offset = 0;
  for (const piece of pieces) {
    into.set(piece, offset);
    offset += piece.byteLength;
  }
  return into.subarray(0, offset);
}

const EMPTY = new Uint8Array(0);

/**
 * Pieces at most this long are left to the collector: Buffer's small allocations share
 * slabs of this size (Buffer.poolSize), which must not be freed under their other users.
 */
const FREE_ABOVE_BYTES = 8 * 1024;

/** ArrayBuffer.prototype.transfer: built in from Node 21; in Node 20 only in isolates made after `enableTransferInNewIsolates`. */
const transfer = (ArrayBuffer.prototype as { transfer?: (this: ArrayBuffer, length: number) => ArrayBuffer }).transfer;

/**
 * Gives isolates made from now on (the worker threads) ArrayBuffer.prototype.transfer, which
 * `freeNow` needs: Node 20's V8 (11.3) has it behind a flag, set here at run time rather than on
 * the command line, where a later Node that has dropped the flag would refuse to start. The
 * calling isolate itself is unchanged. Nothing to do where it is built in.
 */
export function enableTransferInNewIsolates(): void {
  if (transfer === undefined) setFlagsFromString('--harmony-rab-gsab-transfer');
}

/**
 * Frees the memory of a payload's large pieces now rather than at V8's next
 * collection, by detaching each piece's ArrayBuffer (`transfer(0)`; a no-op
 * in an isolate without it, such as a Node 20 front thread). Why:
 * Node reads every socket into a buffer of its own, and V8 collects young
 * buffers only once they add up to 32 MB, so a worker reading embeddings
 * answers held up to 64 MB of them in its malloc arena (docs/PERFORMANCE.md).
 * Only for buffers the caller owns outright and no one reads again: undici's
 * reads of an upstream body, the front's collected request body.
 */
export function freeNow(payload: Payload): void {
  if (transfer === undefined) return;
  if (payload instanceof Uint8Array) freePiece(payload, transfer);
  else for (const piece of payload) freePiece(piece, transfer);
}

function freePiece(piece: Uint8Array, detach: (this: ArrayBuffer, length: number) => ArrayBuffer): void {
  if (piece.byteLength <= FREE_ABOVE_BYTES) return; // before .buffer, which would move a small on-heap array off the heap
  const buffer = piece.buffer;
  if (buffer instanceof ArrayBuffer && buffer.byteLength > 0) detach.call(buffer, 0);
}

/** Opens one end of a channel with the handler for the frames that arrive at it. */
export type ChannelEnd<In, Out> = (onFrame: FrameHandler<In>) => FrameSender<Out>;

/**
 * An in-thread channel: frames sent on one end reach the other end's
 * handler in order, in one batch after this turn's I/O callbacks
 * (setImmediate), never re-entrantly inside `send`.
 *
 * Why a batch per turn and not a microtask per frame: the front's work for
 * every request that arrived in a turn runs first, then the worker
 * session's for all of them, then the front's for every answer: each
 * stage's code runs many times in a row. Handing each frame over on a
 * microtask interleaved front, session and undici code request by request
 * (perf showed every part a little slower, as when caches are cold), and the
 * one thread needed 103 µs of CPU per chat request at concurrency 64
 * against 74 µs batched (13,651 against 9,770 req/s; streams 12,407
 * against 9,202/s). The price is one trip through the check phase: about
 * 12 µs more at concurrency 1. This is also what a worker thread's
 * FramePort does, which is why one worker had been the faster mode.
 *
 * A batch is handed over early, on a microtask, once it holds BATCH_FRAMES.
 * Unbounded, the batches of a burst held 5,000 slow streams in 231 MB of RSS
 * instead of 159 (smaps: V8's heap +59 MB, malloc +32 MB); 32 frames keep
 * the chat throughput (15,041 against 15,222 req/s unbounded), 8 cost 7 %.
 */
const BATCH_FRAMES = 32;

/** `then` on a settled promise queues a plain V8 microtask; Node's queueMicrotask wraps each in an AsyncResource. */
const settled = Promise.resolve();

export function localChannel<A, B>(): { a: ChannelEnd<A, B>; b: ChannelEnd<B, A> } {
  const handlers: { a: FrameHandler<A> | null; b: FrameHandler<B> | null } = { a: null, b: null };
  const end = <In, Out>(self: 'a' | 'b', peer: 'a' | 'b'): ChannelEnd<In, Out> =>
    (onFrame) => {
      (handlers as Record<'a' | 'b', FrameHandler<unknown> | null>)[self] = onFrame as FrameHandler<unknown>;
      let queue: Array<[Out, Payload | undefined]> = [];
      let closed = false;
      const flush = () => {
        const batch = queue;
        queue = [];
        const deliver = (handlers as Record<'a' | 'b', FrameHandler<unknown> | null>)[peer];
        if (deliver) for (const [frame, payload] of batch) deliver(frame, payload);
      };
      const send = (frame: Out, payload?: Payload): void => {
        if (closed) return;
        if (queue.length === 0) setImmediate(flush);
        queue.push([frame, payload]);
        if (queue.length === BATCH_FRAMES) void settled.then(flush);
      };
      // In-thread nothing is copied: a lent payload is handed over as it is (the front may
      // keep a large reply's pieces to write them as a slow client drains), so lending is sending.
      return {
        send,
        lend: send,
        share: (frame: Out) => send(frame),
        close() {
          closed = true;
        },
      };
    };
  return { a: end<A, B>('a', 'b'), b: end<B, A>('b', 'a') };
}
