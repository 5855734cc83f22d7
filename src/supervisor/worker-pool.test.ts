/**
 * The pool's restarts (src/supervisor/worker-pool.ts): a worker that dies young is restarted
 * later each time, and calls sent while it is down wait for the one that attaches. Real piscina
 * threads, with loaders written here in front of the real worker entry.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load.js';
import { createLogger } from '../logging.js';
import { DeploymentSlots } from './deployment-slots.js';
import { WorkerPool } from './worker-pool.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
/** The build's own loader (tools/bundle.mjs), resolved through the dist symlink. */
const realLoader = createRequire(import.meta.url).resolve(join(root, 'dist/worker/entry.cjs'));

interface LogLine {
  silent_ms?: number;
  phase?: string;
  event?: string;
  restart_in_ms?: number;
  deaths_in_a_row?: number;
  err?: string;
}

const YAML = `
model_list:
  - model_name: chat
    params: { model: mock/m }
  - model_name: hang
    params: { model: mock/hang, mock_fault: hang }
`;

/** A pool of real worker threads; `loaderSource`: a loader in front of the build's (\$DIR: a scratch directory, \$REAL: the real loader), else the build's own. */
async function startPool(loaderSource: string | null, options: { workers?: number; stallMs?: number } = {}): Promise<{ pool: WorkerPool; lines: LogLine[] }> {
  let entry: string | undefined;
  if (loaderSource !== null) {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-pool-'));
    entry = join(dir, 'loader.cjs');
    writeFileSync(entry, loaderSource.replaceAll('$DIR', JSON.stringify(dir)).replaceAll('$REAL', JSON.stringify(realLoader)));
  }
  const lines: LogLine[] = [];
  const log = createLogger('info', new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(JSON.parse(String(chunk)) as LogLine), done()) }));
  const config = parseConfig(YAML, 'pool.yaml', {});
  const workers = options.workers ?? 1;
  const deployments = new DeploymentSlots(config.routing.aliases.length, workers);
  deployments.assign(config.routing);
  return { pool: await WorkerPool.start(workers, config.routing, log, deployments, { entry, stallMs: options.stallMs }), lines };
}

/** A chat call through the pool: its answer's status and body, or the code it failed with. */
function chat(pool: WorkerPool, model: string): Promise<{ status: number; body: string } | { failed: string }> {
  return new Promise((resolve, reject) => {
    const body = Buffer.from(JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }));
    pool.call('chat', `req-${model}`, body, {
      reply: (frame, payload) => resolve({ status: frame.status, body: Buffer.concat((Array.isArray(payload) ? payload : [payload]) as Uint8Array[]).toString() }),
      head: () => reject(new Error('a stream')),
      data: () => undefined,
      end: () => reject(new Error('a stream')),
      fail: (frame) => resolve({ failed: frame.code }),
    }, null);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const deaths = (lines: LogLine[]) => lines.filter((l) => l.event === 'worker_died');

describe('worker restarts', () => {
  let pool: WorkerPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('a worker that cannot start is restarted at once, then after 100, 200, 400, 800 ms: not in a tight loop', async () => {
    const started = await startPool(`module.exports = async function attach() { throw new Error('broken at start'); };\n`);
    pool = started.pool;
    await sleep(1_700);
    const died = deaths(started.lines);
    // 0 + 0 + 100 + 200 + 400 + 800 ms of waits: six deaths by 1.5 s, the seventh not before 3.1 s.
    expect(died.length).toBeGreaterThanOrEqual(5);
    expect(died.length).toBeLessThanOrEqual(6);
    expect(died.map((l) => l.restart_in_ms)).toEqual([0, 100, 200, 400, 800, 1600].slice(0, died.length));
    expect(died.map((l) => l.deaths_in_a_row)).toEqual([1, 2, 3, 4, 5, 6].slice(0, died.length));
    expect(died.every((l) => l.err === 'broken at start')).toBe(true);
    expect(pool.stats().restarts).toBe(died.length);
    // Closed while a restart waits: nothing starts after.
    await pool.close();
    pool = undefined;
    const after = died.length;
    await sleep(1_000);
    expect(deaths(started.lines)).toHaveLength(after);
  });

  it('a call and a ping sent while a worker that died young waits for its restart are answered by the worker that attaches', async () => {
    // The first three starts fail (counted in a file: a new thread would not see a module's count), then the real entry serves.
    const started = await startPool(`
const { readFileSync, writeFileSync } = require('node:fs');
const count = require('node:path').join($DIR, 'starts');
module.exports = async function attach(task) {
  let n = 0;
  try { n = Number(readFileSync(count, 'utf8')); } catch {}
  writeFileSync(count, String(n + 1));
  if (n < 3) throw new Error('not yet');
  return require($REAL)(task);
};
`);
    pool = started.pool;
    for (let waited = 0; deaths(started.lines).length < 3 && waited < 5_000; waited += 5) await sleep(5);
    expect(deaths(started.lines).map((l) => l.restart_in_ms)).toEqual([0, 100, 200]);
    // Sent during the 200 ms wait: they go into the port the next worker attaches to.
    const sentAt = performance.now();
    const answered = chat(pool, 'chat');
    const [ms] = await pool.ping(5_000);
    expect(ms).not.toBeNull();
    const reply = await answered;
    expect(reply).toMatchObject({ status: 200 });
    expect(JSON.parse((reply as { body: string }).body)).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant' } }] });
    expect(performance.now() - sentAt).toBeGreaterThanOrEqual(150);
    expect(deaths(started.lines)).toHaveLength(3);
    expect(pool.stats()).toMatchObject({ restarts: 3, inFlight: 0 });
  });

  it('a worker stuck in a loop stops answering pings: after stallMs it is stopped and replaced, its call fails with worker_crashed, the other worker serves throughout', async () => {
    const started = await startPool(null, { workers: 2, stallMs: 1_000 });
    pool = started.pool;
    expect((await pool.ping(2_000)).every((ms) => ms !== null)).toBe(true);
    const stuckAt = performance.now();
    const stuck = chat(pool, 'hang');
    await sleep(300);
    // The other worker (least busy) answers while the first one loops.
    expect(await chat(pool, 'chat')).toMatchObject({ status: 200 });
    expect((await pool.ping(300)).filter((ms) => ms === null)).toHaveLength(1);
    expect(await stuck).toEqual({ failed: 'worker_crashed' });
    const stoppedAfter = performance.now() - stuckAt;
    expect(stoppedAfter).toBeGreaterThanOrEqual(1_000);
    expect(stoppedAfter).toBeLessThan(4_000);
    const stalled = started.lines.filter((l) => l.event === 'worker_stalled');
    expect(stalled).toHaveLength(1);
    expect(stalled[0]?.silent_ms).toBeGreaterThanOrEqual(1_000);
    expect(deaths(started.lines)).toHaveLength(1);
    // The replacement answers, and both workers serve calls again.
    for (let waited = 0; (await pool.ping(500)).some((ms) => ms === null) && waited < 5_000; waited += 500);
    expect((await pool.ping(2_000)).every((ms) => ms !== null)).toBe(true);
    const after = await Promise.all([chat(pool, 'chat'), chat(pool, 'chat'), chat(pool, 'chat'), chat(pool, 'chat')]);
    expect(after.every((r) => 'status' in r && r.status === 200)).toBe(true);
    expect(pool.stats()).toMatchObject({ restarts: 1, inFlight: 0 });
  });

  it('a worker that hangs before it attaches is stopped once it is stallMs late, and restarted with the delays of a worker that dies young', async () => {
    const started = await startPool(`module.exports = async function attach() { for (;;) {} };\n`, { stallMs: 500 });
    pool = started.pool;
    await sleep(2_600);
    const stalled = started.lines.filter((l) => l.event === 'worker_stalled');
    // Stopped at 0.5-1 s, replaced at once; stopped again 0.5-1 s later, replaced after 100 ms; and so on.
    expect(stalled.length).toBeGreaterThanOrEqual(2);
    expect(stalled.every((l) => l.phase === 'starting' && (l.silent_ms as number) >= 500)).toBe(true);
    const died = deaths(started.lines);
    expect(died.length).toBeGreaterThanOrEqual(2);
    expect(died.map((l) => l.restart_in_ms)).toEqual([0, 100, 200].slice(0, died.length));
    expect(died.every((l) => /exited/.test(String(l.err)))).toBe(true);
  });
});
