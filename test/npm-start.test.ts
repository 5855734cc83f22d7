/**
 * `npm start` builds only what is not built, and a build never pulls files from under a running
 * gateway (tools/build.mjs; issue 27). Run in a copy of the repository (its sources, and
 * node_modules linked), so the builds here never touch the dist/ this test run itself uses:
 *
 * - two `npm start` in one checkout, the second started while the first builds: both serve
 *   (/health/live and a chat call on the embedded demo config, through a worker thread);
 * - two more builds after that (sources changed): each gateway's build is kept while the
 *   gateway runs, though it is no longer one of the newest, and both still serve;
 * - a further `npm start` with nothing changed does not build: it says "build: up to date",
 *   dist points to the same build, and no new build directory appears.
 *
 * The time from spawn to the listening line is printed for a start with a build and without.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settingsFreeEnv } from './support/start-command.js';

const ROOT = resolve(import.meta.dirname, '..');
const KEY = 'sk-npm-start-test';
/** A full build on a loaded two-core machine, twice at once: well under this. */
const BUILD_TIMEOUT_MS = 240_000;

interface Start {
  readonly child: ChildProcess;
  readonly port: number;
  /** Spawn of `npm start` to its listening line. */
  readonly readyMs: number;
  readonly stderr: () => string;
  readonly output: () => string;
  readonly exited: Promise<unknown>;
}

let copy = '';
const running: Start[] = [];

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'switchyard-npm-start-'));
  // What npm start reads: the build's inputs, its tools, and the contract file the server serves.
  for (const entry of ['src', 'workers', 'protocol', 'tools', 'tsconfig.json', 'package.json', 'package-lock.json', 'openapi.yaml']) {
    cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
});

afterAll(async () => {
  for (const s of running) stop(s);
  await Promise.all(running.map((s) => s.exited));
  if (copy) rmSync(copy, { recursive: true, force: true });
});

/** Ends `npm start` and everything under it (npm, its shell, the build or the server): its own process group. */
function stop(s: Start): void {
  try {
    process.kill(-(s.child.pid as number), 'SIGTERM');
  } catch {
    // already gone
  }
}

/** Spawns `npm start` in the copy; `onStderr` sees its stderr as it comes. Resolves at the listening line. */
function npmStart(onStderr: (text: string) => void = () => undefined): Promise<Start> {
  const env = { ...settingsFreeEnv(), HOST: '127.0.0.1', PORT: '0', GATEWAY_API_KEY: KEY, GATEWAY_WORKERS: '1', GATEWAY_DRAIN_DELAY: '0', npm_config_update_notifier: 'false' };
  const started = performance.now();
  const child = spawn('npm', ['start'], { cwd: copy, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((r) => child.once('exit', r));
  let out = '';
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
    onStderr(err);
  });
  return new Promise<Start>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`npm start: no listening line in ${BUILD_TIMEOUT_MS} ms:\n${out}\n${err}`)), BUILD_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`npm start exited with ${code} before listening:\n${out}\n${err}`));
    });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const line = out.split('\n').slice(0, -1).find((l) => l.includes('"event":"listening"')); // whole lines only
      if (!line) return;
      clearTimeout(timer);
      const s: Start = { child, port: (JSON.parse(line) as { port: number }).port, readyMs: performance.now() - started, stderr: () => err, output: () => out, exited };
      running.push(s);
      res(s);
    });
  });
}

/** /health/live and a demo chat call, each on a new connection (a pooled one may have idled out). */
async function serves(s: Start): Promise<{ live: number; chat: number; content: unknown }> {
  try {
    return await callBoth(s.port);
  } catch (err) {
    throw new Error(`${String(err)}; the gateway's output ends:\n${s.output().slice(-3000)}\n${s.stderr().slice(-1000)}`, { cause: err });
  }
}

async function callBoth(port: number): Promise<{ live: number; chat: number; content: unknown }> {
  const live = await fetch(`http://127.0.0.1:${port}/health/live`, { headers: { connection: 'close' } });
  await live.arrayBuffer();
  const chat = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ model: 'demo-chat', messages: [{ role: 'user', content: 'hello' }] }),
  });
  const body = (await chat.json()) as { choices?: Array<{ message?: { content?: unknown } }> };
  return { live: live.status, chat: chat.status, content: typeof body.choices?.[0]?.message?.content };
}

const SERVING = { live: 200, chat: 200, content: 'string' };

/** The builds of the copy that some process holds a file of open (the gateways' worker entries). */
function heldBuilds(): Set<string> {
  const builds = `${realpathSync(join(copy, 'dist-builds'))}/`;
  const held = new Set<string>();
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (target.startsWith(builds)) held.add(target.slice(builds.length).split('/')[0] as string);
      } catch {
        // closed meanwhile
      }
    }
  }
  return held;
}

const completedBuilds = () => readdirSync(join(copy, 'dist-builds')).filter((n) => !n.startsWith('.')).sort();

describe('npm start in one checkout', { timeout: 3 * BUILD_TIMEOUT_MS }, () => {
  let first: Start;
  let second: Start;

  it('two starts, the second begun while the first builds: both serve', async () => {
    let secondStarted: Promise<Start> | null = null;
    const firstStarted = npmStart((stderr) => {
      if (secondStarted === null && stderr.includes('build: rebuilding')) secondStarted = npmStart();
    });
    first = await firstStarted;
    expect(secondStarted, 'the first start built').not.toBeNull();
    second = await secondStarted!;
    expect(first.stderr()).toContain('build: rebuilding (no complete build in dist/)');
    // Started during the first one's build, before any build was complete: it built too.
    expect(second.stderr()).toContain('build: rebuilding');
    expect(await serves(first)).toEqual(SERVING);
    expect(await serves(second)).toEqual(SERVING);
    console.info(`[npm-start] with a build (two at once): ${Math.round(first.readyMs)} and ${Math.round(second.readyMs)} ms to listening`);
  });

  it('later builds keep the builds the running gateways use, and both still serve', () => {
    const held = heldBuilds();
    expect(held.size, 'each gateway holds its build open').toBeGreaterThan(0);
    for (let n = 0; n < 2; n++) {
      appendFileSync(join(copy, 'src/config/demo.ts'), `// a change ${n}\n`);
      const built = spawnSync(process.execPath, ['tools/build.mjs'], { cwd: copy, encoding: 'utf8', timeout: BUILD_TIMEOUT_MS });
      expect(built.status, built.stderr).toBe(0);
      expect(built.stderr).toContain('build: rebuilding (sources changed)');
    }
    // Two newer builds: the gateways' ones are no longer among the newest kept, only held.
    const current = readlinkSync(join(copy, 'dist')).split('/').pop() as string;
    for (const build of held) {
      expect(build).not.toBe(current);
      expect(existsSync(join(copy, 'dist-builds', build, 'worker', 'entry.js')), `dist-builds/${build}, used by a running gateway`).toBe(true);
    }
  });

  it('the running gateways still serve after the rebuilds', async () => {
    expect(await serves(first)).toEqual(SERVING);
    expect(await serves(second)).toEqual(SERVING);
  });

  it('a start with nothing changed does not build', async () => {
    const before = { link: readlinkSync(join(copy, 'dist')), builds: completedBuilds() };
    const third = await npmStart();
    expect(third.stderr()).toMatch(/^build: up to date \(dist -> dist-builds\/[^)]+\)$/m);
    expect(third.stderr()).not.toContain('build: rebuilding');
    expect({ link: readlinkSync(join(copy, 'dist')), builds: completedBuilds() }).toEqual(before);
    expect(await serves(third)).toEqual(SERVING);
    console.info(`[npm-start] without a build: ${Math.round(third.readyMs)} ms to listening`);
  });
});
