/**
 * How many CPUs this process may use: the default number of worker threads
 * (CONTRACT.md: "available parallelism").
 *
 * Node 20's `os.availableParallelism()` counts the CPUs of the process's
 * affinity mask but not its cgroup's CPU quota: in a container limited to
 * one CPU on a 16-core node it says 16, and the gateway would start 16
 * worker threads (about 13 MB each) to share one CPU's time. libuv reads the
 * quota from 1.49 on (Node 22); this does the same for Node 20, the same
 * way: the quota divided by its period, rounded down, at least 1, never more
 * than the affinity allows.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

/** Where the kernel shows a process's cgroups (tests point these at a tree of their own). */
export interface CgroupFiles {
  /** `/proc/self/cgroup`: one `id:controllers:path` line per hierarchy (`0::path` for cgroup v2). */
  readonly membership: string;
  /** Where the hierarchies are mounted: v2 files at its top, v1 ones under a folder per controller list. */
  readonly mount: string;
}

const SYSTEM: CgroupFiles = { membership: '/proc/self/cgroup', mount: '/sys/fs/cgroup' };

export function availableCpus(parallelism = availableParallelism(), files: CgroupFiles = SYSTEM): number {
  const quota = cpuQuota(files);
  return quota === null ? parallelism : Math.max(1, Math.min(parallelism, Math.floor(quota)));
}

/**
 * This process's CPU quota in CPUs (1.5 for 150 ms per 100 ms), from cgroup v2's `cpu.max` or
 * cgroup v1's CFS quota; null when there is none or it cannot be read. Each file is looked for
 * at the process's own cgroup path, then at the top of the mount: inside a container the
 * mount's top is the container's own cgroup while the path can name it as the host sees it.
 */
export function cpuQuota(files: CgroupFiles = SYSTEM): number | null {
  let membership: string;
  try {
    membership = readFileSync(files.membership, 'utf8');
  } catch {
    return null;
  }
  for (const line of membership.split('\n')) {
    const match = /^\d+:([^:]*):(\/.*)$/.exec(line);
    if (!match) continue;
    const [, controllers = '', path = '/'] = match;
    const found =
      controllers === ''
        ? firstReadable([join(files.mount, path), files.mount], cpuMax)
        : controllers.split(',').includes('cpu')
          ? firstReadable([join(files.mount, controllers, path), join(files.mount, controllers)], cfsQuota)
          : undefined;
    // A hybrid host has both kinds of line; the one whose files exist holds the cpu controller.
    if (found !== undefined) return found;
  }
  return null;
}

/** What `read` makes of the first of `dirs` where it finds its files; undefined when none has them. */
function firstReadable(dirs: readonly string[], read: (dir: string) => number | null): number | null | undefined {
  for (const dir of dirs) {
    try {
      return read(dir);
    } catch {
      // Not there (ENOENT) or not readable: the next place.
    }
  }
  return undefined;
}

/** cgroup v2: `cpu.max` is "<quota> <period>" in µs, or "max <period>" for no limit. */
function cpuMax(dir: string): number | null {
  const [quota = '', period = ''] = readFileSync(join(dir, 'cpu.max'), 'utf8').trim().split(/\s+/);
  return ratio(quota === 'max' ? -1 : Number(quota), Number(period));
}

/** cgroup v1: `cpu.cfs_quota_us` (-1 for no limit) over `cpu.cfs_period_us`. */
function cfsQuota(dir: string): number | null {
  const quota = Number(readFileSync(join(dir, 'cpu.cfs_quota_us'), 'utf8').trim());
  const period = Number(readFileSync(join(dir, 'cpu.cfs_period_us'), 'utf8').trim());
  return ratio(quota, period);
}

function ratio(quota: number, period: number): number | null {
  return Number.isFinite(quota) && Number.isFinite(period) && quota > 0 && period > 0 ? quota / period : null;
}
