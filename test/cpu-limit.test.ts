/**
 * The default worker count follows a CPU quota (src/config/cpu-limit.ts):
 * the built server, started with no GATEWAY_WORKERS inside a real cgroup
 * limited to one CPU, runs one worker thread, where the same start outside
 * it runs one per CPU. Needs a machine with at least two CPUs and a cgroup
 * tree this process may add to (root on cgroup v1's cpu controller, or on a
 * v2 tree whose root delegates `cpu`); elsewhere the test is reported as
 * skipped, and src/config/cpu-limit.test.ts still covers the reading itself.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnGateway } from './support/gateway-process.js';

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

/**
 * Starts the built server with no worker count set (in `cgroup` when given: the shell joins it,
 * then execs node), waits for its `listening` line, reads /status, stops it.
 */
async function workersAtStart(cgroup: string | null): Promise<{ logged: unknown; status: unknown }> {
  const p = spawnGateway({
    env: { GATEWAY_API_KEY: 'k', GATEWAY_DRAIN_DELAY: '0', CGROUP: cgroup ?? '' },
    via: ['sh', '-c', '[ -n "$CGROUP" ] && echo $$ > "$CGROUP/cgroup.procs"; exec "$@"', 'sh'],
  });
  try {
    const listening = await p.listening(10_000);
    const status = (await (await fetch(`http://127.0.0.1:${String(listening.port)}/status`, { headers: { authorization: 'Bearer k' } })).json()) as { workers: unknown };
    return { logged: listening.workers, status: status.workers };
  } finally {
    await p.stop();
  }
}

describe('default worker count under a CPU quota', () => {
  it.skipIf(limited === null)('one worker thread in a cgroup limited to one CPU; one per CPU outside it', async () => {
    expect(await workersAtStart(limited)).toEqual({ logged: 1, status: 1 });
    const cpus = availableParallelism();
    expect(await workersAtStart(null)).toEqual({ logged: cpus, status: cpus });
  });
});
