import { describe, expect, it } from 'vitest';
import { chooseWorkers, describeWorkerMode, workerModeReport, workersForCpus } from './workers.js';

describe('workersForCpus: the default worker count', () => {
  it('one CPU runs inline (no worker thread)', () => {
    expect(workersForCpus(1)).toBe(0);
  });

  it('two CPUs: one worker (provisional, awaiting the two-CPU bench)', () => {
    expect(workersForCpus(2)).toBe(1);
  });

  it('more CPUs: one worker per CPU', () => {
    for (const cpus of [3, 4, 16]) expect(workersForCpus(cpus)).toBe(cpus);
  });
});

describe('chooseWorkers: environment, then file, then the rule', () => {
  it('GATEWAY_WORKERS wins over the file and the rule, 0 included', () => {
    expect(chooseWorkers(0, 3, 8)).toEqual({ workers: 0, reason: 'env', cpus: 8 });
    expect(chooseWorkers(5, undefined, 1)).toEqual({ workers: 5, reason: 'env', cpus: 1 });
  });

  it('server.workers wins over the rule', () => {
    expect(chooseWorkers(undefined, 3, 1)).toEqual({ workers: 3, reason: 'config', cpus: 1 });
    expect(chooseWorkers(undefined, 0, 8)).toEqual({ workers: 0, reason: 'config', cpus: 8 });
  });

  it('neither set: the rule on the CPU count', () => {
    expect(chooseWorkers(undefined, undefined, 1)).toEqual({ workers: 0, reason: 'cpus', cpus: 1 });
    expect(chooseWorkers(undefined, undefined, 2)).toEqual({ workers: 1, reason: 'cpus', cpus: 2 });
    expect(chooseWorkers(undefined, undefined, 6)).toEqual({ workers: 6, reason: 'cpus', cpus: 6 });
  });
});

describe('describeWorkerMode: what the listening line and /status say', () => {
  it.each([
    [{ workers: 0, reason: 'cpus', cpus: 1 }, 'inline: 1 CPU'],
    [{ workers: 1, reason: 'cpus', cpus: 2 }, '1 worker: 2 CPUs'],
    [{ workers: 4, reason: 'cpus', cpus: 4 }, '4 workers: 4 CPUs'],
    [{ workers: 2, reason: 'env', cpus: 1 }, '2 workers: GATEWAY_WORKERS'],
    [{ workers: 1, reason: 'env', cpus: 8 }, '1 worker: GATEWAY_WORKERS'],
    [{ workers: 0, reason: 'env', cpus: 8 }, '0 workers (inline): GATEWAY_WORKERS'],
    [{ workers: 0, reason: 'config', cpus: 8 }, '0 workers (inline): server.workers'],
    [{ workers: 3, reason: 'config', cpus: 8 }, '3 workers: server.workers'],
  ] as const)('%o → %s', (mode, text) => {
    expect(describeWorkerMode(mode)).toBe(text);
    expect(workerModeReport(mode)).toEqual({ ...mode, description: text });
  });
});
