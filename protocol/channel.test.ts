import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { localChannel } from './channel.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('localChannel', () => {
  it('hands over the frames of a whole turn together, in order, after its callbacks and their microtasks', async () => {
    const { a, b } = localChannel<number, string>();
    const seen: number[] = [];
    const sender = b(() => {});
    a((frame) => seen.push(frame));
    sender.send(1);
    // Later callbacks of the same turn (here: microtasks) add to the batch instead of receiving the first frame
    // on their own; a frame per microtask interleaved the two ends' work request by request.
    await Promise.resolve();
    await Promise.resolve();
    expect(seen).toEqual([]);
    sender.send(2);
    sender.lend(3, new Uint8Array([1]));
    await nextTurn();
    expect(seen).toEqual([1, 2, 3]);
  });

  it('hands a batch over early, on a microtask, once it reaches 32 frames; what comes after waits for the turn', async () => {
    const { a, b } = localChannel<number, string>();
    const seen: number[] = [];
    const sender = b(() => {});
    a((frame) => seen.push(frame));
    for (let i = 0; i < 31; i++) sender.send(i);
    await Promise.resolve();
    expect(seen).toEqual([]);
    sender.send(31);
    sender.send(32);
    expect(seen).toEqual([]);
    await Promise.resolve();
    expect(seen).toEqual(Array.from({ length: 33 }, (_, i) => i));
    sender.send(33);
    await Promise.resolve();
    expect(seen).toHaveLength(33);
    await nextTurn();
    expect(seen).toEqual(Array.from({ length: 34 }, (_, i) => i));
  });

  it('never delivers inside send, and delivers nothing once closed', async () => {
    const { a, b } = localChannel<string, string>();
    const seen: string[] = [];
    const sender = b(() => {});
    a((frame) => seen.push(frame));
    sender.send('before');
    expect(seen).toEqual([]);
    await nextTurn();
    expect(seen).toEqual(['before']);
    sender.close();
    sender.send('after');
    await nextTurn();
    expect(seen).toEqual(['before']);
  });
});

describe('enableTransferInNewIsolates', () => {
  it('in a node started with no flags, gives worker threads started afterwards what freeNow frees with', () => {
    const channel = pathToFileURL(resolve(import.meta.dirname, '../dist/protocol/channel.js')).href;
    const script = `
      import { Worker } from 'node:worker_threads';
      import { enableTransferInNewIsolates } from ${JSON.stringify(channel)};
      enableTransferInNewIsolates();
      // The worker's eval code is a module too: --input-type passes on to worker threads.
      const worker = new Worker(\`
        import { parentPort } from 'node:worker_threads';
        import { freeNow } from ${JSON.stringify(channel)};
        const read = new Uint8Array(64 * 1024);
        freeNow([read.subarray(0, 40000), read.subarray(40000)]);
        parentPort.postMessage(read.buffer.byteLength);
      \`, { eval: true });
      worker.once('message', (length) => { console.log('freed to', length); process.exit(0); });
    `;
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8', timeout: 15_000 });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('freed to 0');
  });
});
