import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { wholePayload, type Payload } from './channel.js';
import { FramePort } from './frame-port.js';
import { RingReader, RingWriter, ringMemory } from './shared-ring.js';

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

describe('FramePort lent payloads', () => {
  /** Lends each payload in one turn from a port with a ring of `ringBytes`; resolves with what the handler saw. */
  function lendAll(payloads: Payload[], ringBytes: number | null) {
    const { port1, port2 } = new MessageChannel();
    const memory = ringBytes === null ? null : ringMemory(ringBytes);
    const seen: Array<{ bytes: Buffer; shared: boolean }> = [];
    return new Promise<typeof seen>((resolve) => {
      const receiver = new FramePort<{ t: string }, never>(
        port2,
        (_frame, received) => {
          const whole = wholePayload(received);
          // Copied here: a lent payload is only the handler's to read.
          seen.push({ bytes: Buffer.from(whole), shared: whole.buffer instanceof SharedArrayBuffer });
          if (seen.length === payloads.length) {
            sender.close();
            receiver.close();
            resolve(seen);
          }
        },
        memory ? { borrowFrom: new RingReader(memory) } : {},
      );
      const sender = new FramePort<never, { t: string }>(port1, () => {}, memory ? { lendInto: new RingWriter(memory) } : {});
      for (const payload of payloads) sender.lend({ t: 'reply' }, payload);
    });
  }

  it('arrive in place in the shared ring, whole and in order, pieces joined; the sender\'s large buffers are freed once copied', async () => {
    const a = bytes(70_000, 1);
    const b = bytes(300, 2);
    const c = bytes(5, 3);
    const d = bytes(20_000, 4);
    const pooled = Buffer.from('a short string, in one of Buffer\'s shared slabs');
    const expected = [Buffer.concat([a, b]), Buffer.from(c), Buffer.from(d), Buffer.from(pooled)];
    const seen = await lendAll([[a, b], c, d, pooled], 1 << 20);
    expect(seen.map((s) => s.shared)).toEqual([true, true, true, true]);
    expect(seen.every((s, i) => s.bytes.equals(expected[i] as Buffer))).toBe(true);
    // Over 8 KiB: detached at once (freed, not left for V8's next scavenge). Small ones, and a
    // slab other Buffers share, are left to the collector.
    expect([a.buffer.byteLength, d.buffer.byteLength]).toEqual([0, 0]);
    expect([b.buffer.byteLength, c.buffer.byteLength]).toEqual([300, 5]);
    expect(pooled.toString()).toBe("a short string, in one of Buffer's shared slabs");
  });

  it('go as buffers of their own when the ring has no room, is too small, or is missing', async () => {
    const big = bytes(4000, 4);
    const small = bytes(100, 5);
    // A 16 KiB ring takes four of 4000 bytes; the fifth waits on the first, which the receiver has not read
    // yet (all five go in one turn); 100 bytes still fit before the end; 5000 is over a quarter of the ring.
    const seen = await lendAll([big, big, big, big, big, small, bytes(5000, 6)], 16384);
    expect(seen.map((s) => s.shared)).toEqual([true, true, true, true, false, true, false]);
    expect(seen.every((s, i) => s.bytes.equals(Buffer.from(i < 5 ? big : i === 5 ? small : bytes(5000, 6))))).toBe(true);
    const without = await lendAll([small], null);
    expect(without[0]).toEqual({ bytes: Buffer.from(small), shared: false });
  });

  it('hands the ring back as each frame is handled, so a long run of replies reuses it', async () => {
    const payloads = Array.from({ length: 200 }, (_, i) => bytes(1000 + i, i));
    const seen = await lendAll(payloads, 1 << 16);
    // 200 kB lent through a 64 KiB ring in one turn: the first ones fit, the rest wait for room.
    expect(seen.every((s, i) => s.bytes.equals(Buffer.from(payloads[i] as Uint8Array)))).toBe(true);
    expect(seen.filter((s) => s.shared).length).toBeGreaterThan(50);

    const memory = ringMemory(1 << 12);
    const writer = new RingWriter(memory);
    const { port1, port2 } = new MessageChannel();
    const rounds: number[] = [];
    await new Promise<void>((resolve) => {
      let sent = 0;
      const receiver = new FramePort<{ t: string }, never>(
        port2,
        (_frame, received) => {
          rounds.push((received as Uint8Array).buffer instanceof SharedArrayBuffer ? 1 : 0);
          if (++sent === 20) {
            sender.close();
            receiver.close();
            resolve();
          } else setImmediate(() => sender.lend({ t: 'reply' }, bytes(1000, sent)));
        },
        { borrowFrom: new RingReader(memory) },
      );
      const sender = new FramePort<never, { t: string }>(port1, () => {}, { lendInto: writer });
      sender.lend({ t: 'reply' }, bytes(1000, 0));
    });
    // One at a time, each after the last was handled: all 20 × 1000 bytes went through a 4 KiB ring.
    expect(rounds).toEqual(Array.from({ length: 20 }, () => 1));
  });
});

describe('FramePort records', () => {
  /** Sends `lends` (lent payloads) and one frame without a payload in one turn; resolves with what arrived and each message's shape. */
  function batch(lends: Uint8Array[], ringBytes: number) {
    const { port1, port2 } = new MessageChannel();
    const memory = ringMemory(ringBytes);
    const frames: Array<{ t: string; n: number; bytes: Buffer | null }> = [];
    const shapes: string[] = [];
    // Beside the FramePort's own listener: what crossed the thread boundary, before decoding.
    port2.on('message', (message: unknown[]) => shapes.push(message[0] instanceof Uint8Array ? 'buffer' : 'ring'));
    return new Promise<{ frames: typeof frames; shapes: string[]; readerAt: number; writer: RingWriter }>((resolve) => {
      const writer = new RingWriter(memory);
      const receiver = new FramePort<{ t: string; n: number }, never>(
        port2,
        (frame, received) => {
          frames.push({ ...frame, bytes: received === undefined ? null : Buffer.from(wholePayload(received)) });
          if (frame.t !== 'end') return;
          setImmediate(() => {
            sender.close();
            receiver.close();
            resolve({ frames, shapes, readerAt: new Int32Array(memory, 0, 1)[0] as number, writer });
          });
        },
        { borrowFrom: new RingReader(memory) },
      );
      const sender = new FramePort<never, { t: string; n: number }>(port1, () => {}, { lendInto: writer });
      lends.forEach((payload, n) => sender.lend({ t: 'reply', n }, payload));
      sender.send({ t: 'end', n: lends.length });
    });
  }

  it('go through the ring with the lent payloads: a message then carries no buffer, and the ring is handed back after it', async () => {
    const payloads = [bytes(300, 1), bytes(2000, 2)];
    const { frames, shapes, readerAt } = await batch(payloads, 1 << 16);
    expect(shapes).toEqual(['ring']);
    expect(frames.map((f) => [f.t, f.n])).toEqual([['reply', 0], ['reply', 1], ['end', 2]]);
    expect(frames[0]?.bytes?.equals(Buffer.from(payloads[0] as Uint8Array))).toBe(true);
    expect(frames[1]?.bytes?.equals(Buffer.from(payloads[1] as Uint8Array))).toBe(true);
    expect(frames[2]?.bytes).toBeNull();
    // Handed back past the payloads (2,300 bytes) to the end of the records written after them.
    expect(readerAt).toBeGreaterThan(2300);
    expect(readerAt).toBeLessThan(2400);
  });

  it('go in a buffer of their own when the lent payloads left no room for them', async () => {
    // Four quarters fill a 4 KiB ring: the records cannot follow.
    const quarters = [1, 2, 3, 4].map((seed) => bytes(1024, seed));
    const { frames, shapes, writer } = await batch(quarters, 4096);
    expect(shapes).toEqual(['buffer']);
    expect(frames.map((f) => f.t)).toEqual(['reply', 'reply', 'reply', 'reply', 'end']);
    expect(frames.slice(0, 4).every((f, i) => f.bytes?.equals(Buffer.from(quarters[i] as Uint8Array)))).toBe(true);
    // Handed back all the same: the whole ring takes a payload again.
    expect(writer.write(bytes(1024, 9))).not.toBeNull();
  });
});
