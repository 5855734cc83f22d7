/**
 * The pool's restarts (src/supervisor/worker-pool.ts): a worker that dies young is restarted
 * later each time, and calls sent while it is down wait for the one that attaches. Real piscina
 * threads, with loaders written here in front of the real worker entry.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
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
  /** performance.now() when the pool wrote the line (the logger writes synchronously). */
  at: number;
}

const YAML = `
model_list:
  - model_name: chat
    params: { model: mock/m }
  - model_name: hang
    params: { model: mock/hang, mock_fault: hang }
`;

/** A pool of real worker threads; `loaderSource`: a loader in front of the build's (\$DIR: a scratch directory, \$REAL: the real loader), else the build's own. */
async function startPool(loaderSource: string | null, options: { workers?: number; stallMs?: number } = {}): Promise<{ pool: WorkerPool; lines: LogLine[]; dir: string }> {
  let entry: string | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-pool-'));
  if (loaderSource !== null) {
    entry = join(dir, 'loader.cjs');
    writeFileSync(entry, loaderSource.replaceAll('$DIR', JSON.stringify(dir)).replaceAll('$REAL', JSON.stringify(realLoader)));
  }
  const lines: LogLine[] = [];
  const log = createLogger('info', new Writable({ write: (chunk: Buffer, _e, done) => (lines.push({ ...(JSON.parse(String(chunk)) as LogLine), at: performance.now() }), done()) }));
  const config = parseConfig(YAML, 'pool.yaml', {});
  const workers = options.workers ?? 1;
  const deployments = new DeploymentSlots(config.routing.aliases.length, workers);
  deployments.assign(config.routing);
  return { pool: await WorkerPool.start(workers, config.routing, log, deployments, { entry, stallMs: options.stallMs }), lines, dir };
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

const deaths = (lines: LogLine[]) => lines.filter((l) => l.event === 'worker_died');

/**
 * Bounds on the pool's timers (issue 34, point 4): a thing timed at N ms comes at N ms, or EARLY_MS sooner (a
 * timer rounds its start down), and at most MARGIN_MS later (a thread's start, a loaded 2-core CI host): the
 * values of test/support/waits.ts, which a src/ test does not import (npm start's build compiles src/ tests
 * without test/).
 */
const MARGIN_MS = 500;
const EARLY_MS = 2;

/** The pool's restart delays (worker-pool.ts): at once, then 100 ms doubling. */
const RESTART_DELAYS_MS = [0, 100, 200, 400, 800, 1_600];

/** A loader that counts its starts in a file (a new thread would not see a module's count), then throws, or hands over to the real entry from start `serveFrom` on. */
const countingLoader = (serveFrom = Infinity) => `
const { readFileSync, writeFileSync } = require('node:fs');
const count = require('node:path').join($DIR, 'starts');
module.exports = async function attach(task) {
  let n = 0;
  try { n = Number(readFileSync(count, 'utf8')); } catch {}
  writeFileSync(count, String(n + 1));
  if (n < ${serveFrom}) throw new Error('broken at start');
  return require($REAL)(task);
};
`;

/** How many times the counting loader was started. */
const starts = (dir: string): number => Number(readFileSync(join(dir, 'starts'), 'utf8'));

/**
 * Each death came its logged restart_in_ms after the one before it, plus what a worker takes from its start to
 * its death (`life`: at least `min`, up to `upTo` more), never sooner, and at most MARGIN_MS later than that (a
 * thread's start, a loaded host).
 */
function expectSpacedByTheirDelays(died: LogLine[], life: { min: number; upTo: number } = { min: 0, upTo: 0 }): void {
  const gaps = died.slice(1).map((d, i) => ({ after: died[i]?.restart_in_ms as number, gap: Math.round(d.at - (died[i] as LogLine).at) }));
  for (const { after, gap } of gaps) {
    expect(gap, JSON.stringify(gaps)).toBeGreaterThanOrEqual(after + life.min - EARLY_MS);
    expect(gap, JSON.stringify(gaps)).toBeLessThanOrEqual(after + life.min + life.upTo + MARGIN_MS);
  }
}

describe('worker restarts', () => {
  let pool: WorkerPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('a worker that cannot start is restarted at once, then after 100, 200, 400, 800 ms: not in a tight loop', async () => {
    const started = await startPool(countingLoader());
    pool = started.pool;
    // Six deaths come 0 + 0 + 100 + 200 + 400 + 800 ms after the start, plus six thread starts; the seventh not before 1.6 s more.
    const died = await vi.waitFor(() => {
      const now = deaths(started.lines);
      expect(now.length).toBeGreaterThanOrEqual(6);
      return now;
    }, { timeout: 5_000, interval: 5 });
    expect(died.map((l) => l.restart_in_ms)).toEqual(RESTART_DELAYS_MS);
    expect(died.map((l) => l.deaths_in_a_row)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(died.every((l) => l.err === 'broken at start')).toBe(true);
    expectSpacedByTheirDelays(died);
    expect(pool.stats().restarts).toBe(6);
    expect(starts(started.dir)).toBe(6);
  });

  it('closed while a restart waits, it starts no worker after', async () => {
    const started = await startPool(countingLoader());
    pool = started.pool;
    const [, second] = await vi.waitFor(() => {
      const now = deaths(started.lines);
      expect(now.length).toBeGreaterThanOrEqual(2);
      return now;
    }, { timeout: 5_000, interval: 1 });
    expect(second?.restart_in_ms).toBe(100);
    await pool.close();
    pool = undefined;
    expect(starts(started.dir)).toBe(2);
    // Nothing to wait on: the point is that nothing starts. Wait out the restart it was waiting for, and a margin.
    await sleep(Math.max(0, (second as LogLine).at + 100 + MARGIN_MS - performance.now()));
    expect(starts(started.dir)).toBe(2);
    expect(deaths(started.lines)).toHaveLength(2);
  });

  it('a call and a ping sent while a worker that died young waits for its restart are answered by the worker that attaches', async () => {
    // The first three starts fail, then the real entry serves.
    const started = await startPool(countingLoader(3));
    pool = started.pool;
    const third = await vi.waitFor(() => {
      const now = deaths(started.lines);
      expect(now.map((l) => l.restart_in_ms)).toEqual([0, 100, 200]);
      return now[2] as LogLine;
    }, { timeout: 5_000, interval: 1 });
    // Sent during the 200 ms wait: they go into the port the next worker attaches to.
    const sentAt = performance.now();
    expect(sentAt).toBeLessThan(third.at + 200);
    const answered = chat(pool, 'chat');
    const [ms] = await pool.ping(5_000);
    expect(ms).not.toBeNull();
    const reply = await answered;
    const answeredAt = performance.now();
    expect(reply).toMatchObject({ status: 200 });
    expect(JSON.parse((reply as { body: string }).body)).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant' } }] });
    // Answered by the worker started once the logged 200 ms were over, not before.
    expect(answeredAt - third.at).toBeGreaterThanOrEqual(200 - EARLY_MS);
    expect(answeredAt - third.at).toBeLessThan(200 + MARGIN_MS);
    expect(deaths(started.lines)).toHaveLength(3);
    expect(starts(started.dir)).toBe(4);
    expect(pool.stats()).toMatchObject({ restarts: 3, inFlight: 0 });
  });

  it('a worker stuck in a loop stops answering pings: after stallMs it is stopped and replaced, its call fails with worker_crashed, the other worker serves throughout', async () => {
    const stallMs = 1_000;
    // Heartbeats go every stallMs / 2 (under 1 s): the one that finds the worker silent for stallMs comes within a beat of it.
    const beatMs = stallMs / 2;
    const started = await startPool(null, { workers: 2, stallMs });
    pool = started.pool;
    expect((await pool.ping(2_000)).every((ms) => ms !== null)).toBe(true);
    const stuckAt = performance.now();
    const stuck = chat(pool, 'hang');
    // The other worker (least busy) answers while the first one loops; a ping waits behind the hung call.
    expect(await chat(pool, 'chat')).toMatchObject({ status: 200 });
    expect((await pool.ping(300)).filter((ms) => ms === null)).toHaveLength(1);
    expect(await stuck).toEqual({ failed: 'worker_crashed' });
    const stoppedAfter = performance.now() - stuckAt;
    expect(stoppedAfter).toBeGreaterThanOrEqual(stallMs);
    expect(stoppedAfter).toBeLessThan(stallMs + beatMs + MARGIN_MS);
    const stalled = started.lines.filter((l) => l.event === 'worker_stalled');
    expect(stalled).toHaveLength(1);
    expect(stalled[0]?.silent_ms).toBeGreaterThanOrEqual(stallMs);
    expect(stalled[0]?.silent_ms).toBeLessThan(stallMs + beatMs + MARGIN_MS);
    expect(deaths(started.lines)).toHaveLength(1);
    // Its first death: replaced at once, and the replacement answers, and both workers serve calls again.
    expect(deaths(started.lines)[0]?.restart_in_ms).toBe(0);
    await expect.poll(async () => (await pool!.ping(500)).every((ms) => ms !== null), { timeout: 5_000, interval: 50 }).toBe(true);
    const after = await Promise.all([chat(pool, 'chat'), chat(pool, 'chat'), chat(pool, 'chat'), chat(pool, 'chat')]);
    expect(after.every((r) => 'status' in r && r.status === 200)).toBe(true);
    expect(pool.stats()).toMatchObject({ restarts: 1, inFlight: 0 });
  });

  it('a worker that hangs before it attaches is stopped once it is stallMs late, and restarted with the delays of a worker that dies young', async () => {
    const stallMs = 500;
    const beatMs = stallMs / 2;
    const started = await startPool(`module.exports = async function attach() { for (;;) {} };\n`, { stallMs });
    pool = started.pool;
    // Stopped 0.5-0.75 s after its start, replaced at once; stopped again 0.5-0.75 s later, replaced after 100 ms; and so on.
    const died = await vi.waitFor(() => {
      const now = deaths(started.lines);
      expect(now.length).toBeGreaterThanOrEqual(3);
      return now.slice(0, 3);
    }, { timeout: 3 * (200 + stallMs + beatMs + MARGIN_MS), interval: 5 });
    expect(died.map((l) => l.restart_in_ms)).toEqual([0, 100, 200]);
    expect(died.every((l) => /exited/.test(String(l.err)))).toBe(true);
    const stalled = started.lines.filter((l) => l.event === 'worker_stalled').slice(0, 3);
    expect(stalled.map((l) => l.phase)).toEqual(['starting', 'starting', 'starting']);
    for (const l of stalled) {
      expect(l.silent_ms).toBeGreaterThanOrEqual(stallMs);
      expect(l.silent_ms).toBeLessThan(stallMs + beatMs + MARGIN_MS);
    }
    // Each death is its stall's: stopped at the beat that found it late, dead once its thread exited.
    for (const [i, d] of died.entries()) expect(d.at - (stalled[i] as LogLine).at).toBeLessThan(MARGIN_MS);
    // From one death to the next: the logged wait, then stallMs (and up to a beat) of hanging.
    expectSpacedByTheirDelays(died, { min: stallMs, upTo: beatMs });
  });
});
