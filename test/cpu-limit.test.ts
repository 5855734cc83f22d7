/**
 * The default worker count follows a CPU quota (src/config/cpu-limit.ts):
 * the built server, started with no GATEWAY_WORKERS inside a real cgroup
 * limited to one CPU, runs one worker thread, where the same start outside
 * it runs one per CPU. Needs a machine with at least two CPUs and a cgroup
 * tree this process may add to (root on cgroup v1's cpu controller, or on a
 * v2 tree whose root delegates `cpu`); elsewhere the test is reported as
 * skipped, and src/config/cpu-limit.test.ts still covers the reading itself.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serverEntry } from './support/start-command.js';

const ROOT = resolve(import.meta.dirname, '..');
const MAIN = serverEntry(ROOT);

/** A cgroup limited to one CPU, made for this run; null where none can be made. */
const limited = ((): string | null => {
  if (availableParallelism() < 2) return null;
  const name = `switchyard-test-${process.pid}`;
  const v2 = '/sys/fs/cgroup';
  const v1 = ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct'].find((d) => existsSync(join(d, 'cpu.cfs_quota_us')));
  try {
    if (existsSync(join(v2, 'cgroup.subtree_control')) && readFileSync(join(v2, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('cpu')) {
      mkdirSync(join(v2, name));
      writeFileSync(join(v2, name, 'cpu.max'), '100000 100000');
      return join(v2, name);
    }
    if (v1) {
      mkdirSync(join(v1, name));
      writeFileSync(join(v1, name, 'cpu.cfs_period_us'), '100000');
      writeFileSync(join(v1, name, 'cpu.cfs_quota_us'), '100000');
      return join(v1, name);
    }
  } catch {
    // Not root, or a read-only or undelegated tree.
  }
  return null;
})();

afterAll(() => {
  if (limited) rmdirSync(limited); // empty again once the server it held has exited
});

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

/**
 * Starts the built server with no worker count set (in `cgroup` when given: the shell joins it,
 * then execs node), waits for its `listening` line, reads /status, stops it.
 */
async function workersAtStart(cgroup: string | null): Promise<{ logged: unknown; status: unknown }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GATEWAY_') && k !== 'PORT' && k !== 'HOST') env[k] = v;
  Object.assign(env, { HOST: '127.0.0.1', PORT: String(port), GATEWAY_API_KEY: 'k', GATEWAY_DRAIN_DELAY: '0', SERVER: MAIN, CGROUP: cgroup ?? '' });
  const script = '[ -n "$CGROUP" ] && echo $$ > "$CGROUP/cgroup.procs"; exec "$NODE" "$SERVER"';
  const child = spawn('sh', ['-c', script], { env: { ...env, NODE: process.execPath }, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((res) => child.once('exit', res));
  try {
    let out = '';
    const listening = await new Promise<Record<string, unknown>>((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`no listening line in 10 s: ${out}`)), 10_000);
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const line = out.split('\n').find((l) => l.includes('"event":"listening"'));
        if (line) {
          clearTimeout(timer);
          res(JSON.parse(line) as Record<string, unknown>);
        }
      });
    });
    const status = (await (await fetch(`http://127.0.0.1:${port}/status`, { headers: { authorization: 'Bearer k' } })).json()) as { workers: unknown };
    return { logged: listening.workers, status: status.workers };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

describe('default worker count under a CPU quota', () => {
  it.skipIf(limited === null)('one worker thread in a cgroup limited to one CPU; one per CPU outside it', async () => {
    expect(await workersAtStart(limited)).toEqual({ logged: 1, status: 1 });
    const cpus = availableParallelism();
    expect(await workersAtStart(null)).toEqual({ logged: cpus, status: cpus });
  });
});
