import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { availableCpus, cpuQuota, type CgroupFiles } from './cpu-limit.js';

const base = mkdtempSync(join(tmpdir(), 'switchyard-cgroup-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let trees = 0;

/** A fake /proc/self/cgroup and cgroup mount: `files` maps paths under the mount to their text. */
function tree(membership: string, files: Record<string, string>): CgroupFiles {
  const root = join(base, String(trees++));
  const mount = join(root, 'sys-fs-cgroup');
  mkdirSync(mount, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(mount, path)), { recursive: true });
    writeFileSync(join(mount, path), `${text}\n`);
  }
  writeFileSync(join(root, 'self-cgroup'), membership);
  return { membership: join(root, 'self-cgroup'), mount };
}

const V2 = '0::/\n';
const HYBRID = '4:memory:/x\n2:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n';

describe('availableCpus: the CPU quota of the process cgroup caps the default worker count', () => {
  it('cgroup v2: cpu.max of 2 CPUs on a 16-CPU node gives 2', () => {
    expect(availableCpus(16, tree(V2, { 'cpu.max': '200000 100000' }))).toBe(2);
  });

  it('rounds a fractional quota down, as libuv does from 1.49, and never below 1', () => {
    expect(availableCpus(16, tree(V2, { 'cpu.max': '150000 100000' }))).toBe(1);
    expect(availableCpus(16, tree(V2, { 'cpu.max': '50000 100000' }))).toBe(1);
    expect(availableCpus(16, tree(V2, { 'cpu.max': '350000 100000' }))).toBe(3);
  });

  it('never exceeds what the affinity mask allows', () => {
    expect(availableCpus(2, tree(V2, { 'cpu.max': '800000 100000' }))).toBe(2);
  });

  it('no quota ("max", -1, no cgroup files, no /proc/self/cgroup) leaves the affinity count', () => {
    expect(availableCpus(16, tree(V2, { 'cpu.max': 'max 100000' }))).toBe(16);
    expect(availableCpus(16, tree(HYBRID, { 'cpu,cpuacct/cpu.cfs_quota_us': '-1', 'cpu,cpuacct/cpu.cfs_period_us': '100000' }))).toBe(16);
    expect(availableCpus(16, tree(V2, {}))).toBe(16);
    expect(availableCpus(16, { membership: join(base, 'absent'), mount: join(base, 'absent-mount') })).toBe(16);
  });

  it('cgroup v1 (here beside a v2 line without the cpu controller, as on hybrid hosts): the CFS quota over its period', () => {
    const files = tree(HYBRID, { 'cpu,cpuacct/cpu.cfs_quota_us': '300000', 'cpu,cpuacct/cpu.cfs_period_us': '100000' });
    expect(cpuQuota(files)).toBe(3);
    expect(availableCpus(16, files)).toBe(3);
  });

  it("reads the process's own cgroup first, then the top of the mount (a container's own cgroup when the path is the host's)", () => {
    const own = tree('0::/kubepods/pod1/ctr\n', { 'kubepods/pod1/ctr/cpu.max': '100000 100000', 'cpu.max': 'max 100000' });
    expect(cpuQuota(own)).toBe(1);
    const hostPath = tree('0::/docker/0123abcd\n', { 'cpu.max': '400000 100000' });
    expect(cpuQuota(hostPath)).toBe(4);
    const v1HostPath = tree('3:cpu:/docker/0123abcd\n', { 'cpu/cpu.cfs_quota_us': '250000', 'cpu/cpu.cfs_period_us': '50000' });
    expect(cpuQuota(v1HostPath)).toBe(5);
  });

  it('ignores unreadable or malformed values rather than trusting them', () => {
    expect(cpuQuota(tree(V2, { 'cpu.max': 'garbage' }))).toBeNull();
    expect(cpuQuota(tree(V2, { 'cpu.max': '0 100000' }))).toBeNull();
    expect(cpuQuota(tree(V2, { 'cpu.max': '100000 0' }))).toBeNull();
    expect(cpuQuota(tree('not a cgroup line\n', { 'cpu.max': '100000 100000' }))).toBeNull();
  });
});
