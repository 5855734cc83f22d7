/**
 * The one interface both ends of the protocol send through. Two
 * implementations: `FramePort` (a MessagePort to a worker thread, frames
 * msgpackr-encoded and payloads transferred) and `localChannel` (front and
 * worker session in the same thread, for GATEWAY_WORKERS=0: frames handed
 * over as objects on a microtask, no copy, no thread wake-up).
 */
export type FrameHandler<F> = (frame: F, payload: Uint8Array | undefined) => void;

export interface FrameSender<Out> {
  /** Queues a frame; a payload's buffer is handed over and must not be used again by the sender. */
  send(frame: Out, payload?: Uint8Array): void;
  close(): void;
}

/** Opens one end of a channel with the handler for the frames that arrive at it. */
export type ChannelEnd<In, Out> = (onFrame: FrameHandler<In>) => FrameSender<Out>;

/**
 * An in-thread channel: frames sent on one end reach the other end's
 * handler in order, on a microtask (never re-entrantly inside `send`).
 */
/** `then` on a settled promise queues a plain V8 microtask; Node's queueMicrotask wraps each in an AsyncResource. */
const settled = Promise.resolve();

export function localChannel<A, B>(): { a: ChannelEnd<A, B>; b: ChannelEnd<B, A> } {
  const handlers: { a: FrameHandler<A> | null; b: FrameHandler<B> | null } = { a: null, b: null };
  const end = <In, Out>(self: 'a' | 'b', peer: 'a' | 'b'): ChannelEnd<In, Out> =>
    (onFrame) => {
      (handlers as Record<'a' | 'b', FrameHandler<unknown> | null>)[self] = onFrame as FrameHandler<unknown>;
      let queue: Array<[Out, Uint8Array | undefined]> = [];
      let closed = false;
      const flush = () => {
        const batch = queue;
        queue = [];
        const deliver = (handlers as Record<'a' | 'b', FrameHandler<unknown> | null>)[peer];
        if (deliver) for (const [frame, payload] of batch) deliver(frame, payload);
      };
      return {
        send(frame, payload) {
          if (closed) return;
          if (queue.length === 0) void settled.then(flush);
          queue.push([frame, payload]);
        },
        close() {
          closed = true;
        },
      };
    };
  return { a: end<A, B>('a', 'b'), b: end<B, A>('b', 'a') };
}
