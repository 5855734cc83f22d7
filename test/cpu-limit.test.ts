/**
 * The default worker count follows the CPUs the process may use
 * (src/config/cpu-limit.ts, the rule in src/config/workers.ts): the built
 * server, started with no GATEWAY_WORKERS inside a real cgroup limited to
 * one CPU, or pinned to one CPU with taskset, runs inline and says why
 * (listening line and /status); pinned to two CPUs it runs the rule's count
 * for two. The cgroup case needs a machine with at least two CPUs and a
 * cgroup tree this process may add to (root on cgroup v1's cpu controller,
 * or on a v2 tree whose root delegates `cpu`); the taskset cases need
 * taskset (and two CPUs for the second). Elsewhere a case is reported as
 * skipped, and src/config/cpu-limit.test.ts still covers the reading itself;
 * but CI (CI=true) always has all three (root on this kind of machine, two
 * CPUs, util-linux), so there a missing one fails the case instead of
 * skipping it unseen.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeWorkerMode, workersForCpus } from '../src/config/workers.js';
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

const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const twoCpus = availableParallelism() >= 2;

/** A case runs where its precondition holds, and always in CI, where a missing precondition is a failure. */
const ci = process.env.CI === 'true';
function required(what: string, holds: boolean): void {
  expect(holds, `precondition: ${what} (CI always has it)`).toBe(true);
}

interface Seen {
  logged: { workers: unknown; worker_mode: unknown; msg: unknown };
  status: { workers: unknown; worker_mode: unknown };
}

/**
 * Starts the built server with no worker count set (in `cgroup` when given: the shell joins it;
 * pinned to the CPU list `cpus` when given: taskset runs node), waits for its `listening` line,
 * reads /status, stops it.
 */
async function modeAtStart(place: { cgroup?: string; cpus?: string }): Promise<Seen> {
  const p = spawnGateway({
    env: { GATEWAY_API_KEY: 'k', GATEWAY_DRAIN_DELAY: '0', CGROUP: place.cgroup ?? '', CPUS: place.cpus ?? '' },
    via: ['sh', '-c', '[ -n "$CGROUP" ] && echo $$ > "$CGROUP/cgroup.procs"; exec ${CPUS:+taskset -c $CPUS} "$@"', 'sh'],
  });
  try {
    const listening = await p.listening(10_000);
    const status = (await (await fetch(`http://127.0.0.1:${String(listening.port)}/status`, { headers: { authorization: 'Bearer k' } })).json()) as Seen['status'];
    return { logged: { workers: listening.workers, worker_mode: listening.worker_mode, msg: listening.msg }, status: { workers: status.workers, worker_mode: status.worker_mode } };
  } finally {
    await p.stop();
  }
}

/** What the listening line and /status must show for the default on `cpus` CPUs. */
function expected(cpus: number): Seen {
  const workers = workersForCpus(cpus);
  const mode = { workers, reason: 'cpus', cpus, description: describeWorkerMode({ workers, reason: 'cpus', cpus }) };
  return { logged: { workers, worker_mode: mode, msg: expect.stringMatching(new RegExp(`listening on 127\\.0\\.0\\.1:\\d+ \\(${mode.description}\\)$`)) }, status: { workers, worker_mode: mode } };
}

describe('default worker mode under a CPU limit', () => {
  it.runIf(ci || limited !== null)('inline in a cgroup limited to one CPU, and it says why', async () => {
    required('a cgroup limited to one CPU can be made (root, a cpu controller, two CPUs)', limited !== null);
    const seen = await modeAtStart({ cgroup: limited! });
    expect(seen).toEqual(expected(1));
    expect(seen.status.worker_mode).toMatchObject({ workers: 0, description: 'inline: 1 CPU' });
  });

  it.runIf(ci || hasTaskset)('inline when the affinity allows one CPU (taskset -c 0)', async () => {
    required('taskset', hasTaskset);
    const seen = await modeAtStart({ cpus: '0' });
    expect(seen).toEqual(expected(1));
    expect(seen.status.worker_mode).toMatchObject({ workers: 0, description: 'inline: 1 CPU' });
  });

  it.runIf(ci || (hasTaskset && twoCpus))("the rule's count for two CPUs (taskset -c 0,1)", async () => {
    required('taskset and two CPUs', hasTaskset && twoCpus);
    const seen = await modeAtStart({ cpus: '0,1' });
    expect(seen).toEqual(expected(2));
    expect(seen.status.worker_mode).toMatchObject({ reason: 'cpus', cpus: 2 });
  });
});
