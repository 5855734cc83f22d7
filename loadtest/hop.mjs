// The thread hop alone, no HTTP: what one round trip front → worker → front costs, by the ways
// the gateway could make it. A round trip carries a 300-byte payload each way (a chat body);
// the worker echoes it. Run pinned to one core, as the bench pins the gateway:
//
//   npm run build && taskset -c 1 node loadtest/hop.mjs
//
// Ways measured:
//   piscina task       piscina.run() per call, payload transferred (piscina's default task path)
//   port, per post     a persistent MessagePort, one postMessage per frame (msgpackr meta + payload)
//   FramePort          the gateway's own protocol/frame-port.js: frames sent in one turn go in one post
// Each at concurrency 1 (round-trip time p50/p99) and 64 (round trips/s and CPU per round trip,
// all threads of the process). Env: HOP_SECONDS (default 2 per measurement).
//
// Measured here 2026-11-23 (taskset -c 1, Node 20.20.2, shared 2-core EPYC VM):
//   piscina task         c1 p50 38.2 µs, p99 91.8 µs;  c64  26,139 round trips/s, 38.2 µs CPU each
//   port, per post       c1 p50 30.4 µs, p99 71.6 µs;  c64  73,709 round trips/s, 13.6 µs CPU each
//   FramePort (batched)  c1 p50 40.9 µs, p99 91.3 µs;  c64 192,303 round trips/s,  5.2 µs CPU each
// So under load the batched port costs a seventh of piscina's task path per call; alone (c1) its
// setImmediate flush costs ~10 µs more than posting at once, and every way costs ~30–40 µs of
// wake-ups. In the gateway at c1 the worker adds ~100–130 µs over inline (loadtest/RESULTS.md):
// the rest is two isolates sharing one core's caches, not the channel.
import { MessageChannel, Worker, isMainThread, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Packr } from 'msgpackr';

const packr = new Packr({ useRecords: false, moreTypes: false });
const PAYLOAD = 300;

if (!isMainThread && workerData?.role === 'port') {
  // Echo over a raw port: [meta, payload] in, the same out.
  const port = workerData.port;
  port.on('message', ([meta, payload]) => {
    const frame = packr.unpack(meta);
    const out = new Uint8Array(packr.pack({ t: 'reply', id: frame.id }));
    port.postMessage([out, payload], [out.buffer, payload.buffer]);
  });
} else if (!isMainThread && workerData?.role === 'frameport') {
  const { FramePort } = await import('../dist/protocol/frame-port.js');
  let port;
  port = new FramePort(workerData.port, (frame, payload) => port.send({ t: 'reply', id: frame.id }, payload));
}

// piscina's task function (this file is also the piscina worker).
export default function echo({ id, payload }) {
  return { id, payload };
}

if (isMainThread) {
  const seconds = Number(process.env.HOP_SECONDS ?? 2);
  const { Piscina } = await import('piscina');
  const { FramePort } = await import('../dist/protocol/frame-port.js');
  const self = fileURLToPath(import.meta.url);
  const body = () => new Uint8Array(PAYLOAD);

  /** `call(done)` starts one round trip and calls `done` when it is back. */
  async function measure(name, call) {
    // Concurrency 1: sequential round trips.
    const rtt = [];
    const warm = performance.now() + 300;
    while (performance.now() < warm) await new Promise((r) => call(r));
    const stop1 = performance.now() + seconds * 1000;
    while (performance.now() < stop1) {
      const t = performance.now();
      await new Promise((r) => call(r));
      rtt.push(performance.now() - t);
    }
    rtt.sort((a, b) => a - b);
    // Concurrency 64: closed loop.
    let done = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const stop64 = t0 + seconds * 1000;
    await Promise.all(Array.from({ length: 64 }, () => new Promise((resolve) => {
      const next = () => {
        done++;
        if (performance.now() < stop64) call(next);
        else resolve();
      };
      call(next);
    })));
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const q = (p) => (rtt[Math.floor(rtt.length * p)] * 1000).toFixed(1);
    console.log(`${name.padEnd(18)} c1: p50 ${q(0.5).padStart(6)} µs  p99 ${q(0.99).padStart(7)} µs   c64: ${Math.round(done / elapsed).toString().padStart(7)} round trips/s, CPU ${((cpu.user + cpu.system) / done).toFixed(1).padStart(5)} µs each`);
  }

  {
    const pool = new Piscina({ filename: self, minThreads: 1, maxThreads: 1 });
    let id = 0;
    await measure('piscina task', (done) => {
      const payload = body();
      pool.run({ id: id++, payload }, { transferList: [payload.buffer] }).then(done);
    });
    await pool.destroy();
  }
  {
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(self, { workerData: { role: 'port', port: port2 }, transferList: [port2] });
    const waiting = new Map();
    port1.on('message', ([meta]) => {
      const { id } = packr.unpack(meta);
      const done = waiting.get(id);
      waiting.delete(id);
      done();
    });
    let id = 0;
    await measure('port, per post', (done) => {
      const n = id++;
      waiting.set(n, done);
      const meta = new Uint8Array(packr.pack({ t: 'call', id: n, op: 'chat', requestId: 'req' }));
      const payload = body();
      port1.postMessage([meta, payload], [meta.buffer, payload.buffer]);
    });
    await worker.terminate();
  }
  {
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(self, { workerData: { role: 'frameport', port: port2 }, transferList: [port2] });
    const waiting = new Map();
    const port = new FramePort(port1, (frame) => {
      const done = waiting.get(frame.id);
      waiting.delete(frame.id);
      done();
    });
    let id = 0;
    await measure('FramePort (batched)', (done) => {
      const n = id++;
      waiting.set(n, done);
      port.send({ t: 'call', id: n, op: 'chat', requestId: 'req' }, body());
    });
    port.close();
    await worker.terminate();
  }
  process.exit(0);
}
