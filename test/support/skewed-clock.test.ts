/** skewedClockEnv: a child's Date.now is off by the offset, in its worker threads too, and its timers keep time. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { skewedClockEnv } from './skewed-clock.js';

/** What the child reads: its wall clock (main thread, a worker thread) and how long a 200 ms timer took by the monotonic clock. */
async function readChild(env: NodeJS.ProcessEnv): Promise<{ main: number; worker: number; timerMs: number; before: number; after: number }> {
  const script = `
    const { Worker } = require('node:worker_threads');
    const t0 = performance.now();
    setTimeout(() => {
      const timerMs = performance.now() - t0;
      const w = new Worker("require('node:worker_threads').parentPort.postMessage(Date.now())", { eval: true });
      w.once('message', (worker) => { console.log(JSON.stringify({ main: Date.now(), worker, timerMs })); w.terminate(); });
    }, 200);`;
  const before = Date.now();
  const child = spawn(process.execPath, ['-e', script], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  await new Promise((resolve) => child.once('exit', resolve));
  return { ...(JSON.parse(out) as { main: number; worker: number; timerMs: number }), before, after: Date.now() };
}

describe('skewedClockEnv', () => {
  for (const offsetMs of [5000, -5000]) {
    it(`${offsetMs} ms: Date.now in the main thread and a worker thread is that far off; a timer still takes its time`, async () => {
      const r = await readChild({ ...process.env, ...skewedClockEnv(offsetMs) });
      // The child read its clock between our two readings, shifted by the offset.
      for (const at of [r.main, r.worker]) {
        expect(at).toBeGreaterThanOrEqual(r.before + offsetMs);
        expect(at).toBeLessThanOrEqual(r.after + offsetMs);
      }
      expect(r.timerMs).toBeGreaterThanOrEqual(199);
      expect(r.timerMs).toBeLessThan(2000);
    });
  }

  it('without it, the same child reads our clock', async () => {
    const r = await readChild(process.env);
    expect(r.main).toBeGreaterThanOrEqual(r.before);
    expect(r.main).toBeLessThanOrEqual(r.after);
  });
});
