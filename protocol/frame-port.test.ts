import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createRing, RingReader, RingWriter } from './byte-ring.js';
import { wholePayload, type Payload } from './channel.js';
import { FramePort } from './frame-port.js';

/** Sends one frame from one end of a real MessageChannel and resolves with what the other end received. */
function roundTrip(payload: Payload): Promise<Uint8Array | undefined> {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    const receiver = new FramePort<{ t: string }, never>(port2, (_frame, received) => {
      resolve(received === undefined ? undefined : wholePayload(received));
      sender.close();
      receiver.close();
    });
    const sender = new FramePort<never, { t: string }>(port1, () => {});
    sender.send({ t: 'reply' }, payload);
  });
}

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

describe('FramePort payloads', () => {
  it('pieces arrive joined and stay whole on the sending side, even one that spans its buffer (never transferred)', async () => {
    const a = bytes(70_000, 1);
    const b = bytes(5, 2);
    const received = await roundTrip([a, b]);
    expect(a.byteLength).toBe(70_000);
    expect(a.buffer.byteLength).toBe(70_000);
    expect(Buffer.from(received as Uint8Array).equals(Buffer.concat([a, b]))).toBe(true);

    const only = bytes(1000, 3);
    const one = await roundTrip([only]);
    expect(only.buffer.byteLength).toBe(1000);
    expect(Buffer.from(one as Uint8Array).equals(Buffer.from(only))).toBe(true);
  });

  it('a buffer handed over whole is transferred; a view into a larger buffer (a Buffer too) is copied', async () => {
    const owned = bytes(4096, 4);
    const copyOfOwned = Buffer.from(owned);
    const received = await roundTrip(owned);
    expect(owned.buffer.byteLength).toBe(0); // detached: moved, not copied
    expect(Buffer.from(received as Uint8Array).equals(copyOfOwned)).toBe(true);

    const backing = Buffer.from(bytes(10_000, 5));
    const view = backing.subarray(100, 200);
    const got = await roundTrip(view);
    expect(backing.buffer.byteLength).toBeGreaterThanOrEqual(10_000);
    expect(Buffer.from(got as Uint8Array).equals(Buffer.from(view))).toBe(true);
  });
});

describe('FramePort with a byte ring', () => {
  type Frame = { t: 'reply' | 'data'; n: number };
  const RING = 64 * 1024;

  /** A worker-like sender lending `reply` payloads through a ring, and a front-like receiver that records what arrived. */
  function pair() {
    const { port1, port2 } = new MessageChannel();
    const ring = createRing(RING);
    const arrived: Array<{ frame: Frame; shared: boolean; bytes: Buffer }> = [];
    let waiting: { count: number; resolve: () => void } | null = null;
    const receiver = new FramePort<Frame, never>(
      port2,
      (frame, payload) => {
        const view = wholePayload(payload);
        arrived.push({ frame, shared: view.buffer instanceof SharedArrayBuffer, bytes: Buffer.from(view) });
        if (waiting && arrived.length >= waiting.count) waiting.resolve();
      },
      { reader: new RingReader(ring) },
    );
    const sender = new FramePort<never, Frame>(port1, () => {}, { writer: new RingWriter(ring), lends: (f) => f.t === 'reply' });
    const until = (count: number) => new Promise<void>((resolve) => (arrived.length >= count ? resolve() : (waiting = { count, resolve })));
    const close = () => {
      sender.close();
      receiver.close();
    };
    return { sender, arrived, until, close };
  }

  it('a lent payload arrives in the shared ring, a payload not lent is handed over, and the bytes are the same', async () => {
    const { sender, arrived, until, close } = pair();
    const a = bytes(3000, 6);
    const b = bytes(17, 7);
    sender.send({ t: 'reply', n: 1 }, [a, b]);
    sender.send({ t: 'data', n: 2 }, [b]);
    await until(2);
    close();
    expect(arrived.map((x) => [x.frame.n, x.shared])).toEqual([[1, true], [2, false]]);
    expect(arrived[0]?.bytes.equals(Buffer.concat([a, b]))).toBe(true);
    expect(arrived[1]?.bytes.equals(Buffer.from(b))).toBe(true);
    expect(a.buffer.byteLength).toBe(3000); // still the sender's
  });

  it('the receiver releases the ring once its handler returns, so it never fills up', async () => {
    const { sender, arrived, until, close } = pair();
    // Eight rings' worth, a quarter of the ring at a time, one message each: every one fits only if the earlier ones were released.
    for (let n = 0; n < 32; n++) {
      sender.send({ t: 'reply', n }, [bytes(RING / 4, n)]);
      await until(n + 1);
    }
    close();
    expect(arrived.every((x) => x.shared)).toBe(true);
    arrived.forEach((x, n) => expect(x.bytes.equals(Buffer.from(bytes(RING / 4, n)))).toBe(true));
  });

  it('a payload larger than a quarter of the ring, or one the ring has no room for yet, is handed over instead', async () => {
    const { sender, arrived, until, close } = pair();
    sender.send({ t: 'reply', n: 0 }, [bytes(RING / 4 + 1, 1)]);
    // Five quarters in one turn: the fifth finds the ring full (nothing released before the batch is read).
    for (let n = 1; n <= 5; n++) sender.send({ t: 'reply', n }, [bytes(RING / 4, n)]);
    await until(6);
    close();
    expect(arrived.map((x) => x.shared)).toEqual([false, true, true, true, true, false]);
    expect(arrived[0]?.bytes.equals(Buffer.from(bytes(RING / 4 + 1, 1)))).toBe(true);
    arrived.slice(1).forEach((x, i) => expect(x.bytes.equals(Buffer.from(bytes(RING / 4, i + 1)))).toBe(true));
  });
});
