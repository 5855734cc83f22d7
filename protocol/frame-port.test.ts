import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
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
