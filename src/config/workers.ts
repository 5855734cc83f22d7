/**
 * How many provider worker threads the gateway runs, and why: `GATEWAY_WORKERS`, else the
 * file's `server.workers`, else the rule below applied to the CPUs this process may use
 * (src/config/cpu-limit.ts). `/status` and the `listening` line print the choice with its
 * reason, so an operator sees why a pod runs inline without reading the sizing notes.
 */

/** Where the count came from: the rule on the CPU count, `GATEWAY_WORKERS`, or `server.workers`. */
export const WORKER_REASONS = ['cpus', 'env', 'config'] as const;
export type WorkerReason = (typeof WORKER_REASONS)[number];

export interface WorkerMode {
  /** Worker threads; 0 runs the provider session inline on the front thread. */
  readonly workers: number;
  readonly reason: WorkerReason;
  /** The CPUs this process may use (affinity, capped by the cgroup quota), whatever the reason. */
  readonly cpus: number;
}

/**
 * The default worker count for `cpus` CPUs. One CPU: inline. On one core the hop to a worker
 * thread costs more than the JSON work it moves off the front (issue 27, gateway pinned to one
 * core against a bare uWebSockets.js + undici relay: chat at concurrency 64 at 0.47x the relay's
 * throughput with one worker, 0.70x inline; added latency at concurrency 1 2.7x against 1.23x;
 * CPU per chat request 2.07x against 1.48x). More than two CPUs: one worker per CPU, as before.
 *
 * Two CPUs: one worker. Measured with the gateway on both CPUs of a two-core host (loadtest/ab.mjs,
 * alternated rounds, concurrency 64, docs/PERFORMANCE.md "Two CPUs: one worker thread"): one
 * worker served the most chat (6,422 req/s against 6,071 inline and 6,151 with two) and
 * embeddings (1,091 against 955 and 992, at the least CPU per request, 335 us against 455 and
 * 419); two workers led only streams (8,340 against 7,286 and 7,191) and cost the most CPU per
 * chat request (111 us against 96 inline and 103) and 18-19 MB more memory than one.
 */
export function workersForCpus(cpus: number): number {
  if (cpus <= 1) return 0;
  if (cpus === 2) return 1;
  return cpus;
}

/** The choice, by precedence: environment, then config file, then the rule. */
export function chooseWorkers(fromEnv: number | undefined, fromFile: number | undefined, cpus: number): WorkerMode {
  if (fromEnv !== undefined) return Object.freeze({ workers: fromEnv, reason: 'env', cpus });
  if (fromFile !== undefined) return Object.freeze({ workers: fromFile, reason: 'config', cpus });
  return Object.freeze({ workers: workersForCpus(cpus), reason: 'cpus', cpus });
}

const SOURCE_NAME: Readonly<Record<Exclude<WorkerReason, 'cpus'>, string>> = { env: 'GATEWAY_WORKERS', config: 'server.workers' };

/**
 * One line for people: `inline: 1 CPU`, `1 worker: 2 CPUs`, `4 workers: 4 CPUs`,
 * `2 workers: GATEWAY_WORKERS`, `0 workers (inline): server.workers`.
 */
export function describeWorkerMode({ workers, reason, cpus }: WorkerMode): string {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (reason === 'cpus') return `${workers === 0 ? 'inline' : plural(workers, 'worker')}: ${plural(cpus, 'CPU')}`;
  return `${workers === 0 ? '0 workers (inline)' : plural(workers, 'worker')}: ${SOURCE_NAME[reason]}`;
}

/** The mode as `/status` and the `listening` line show it (openapi.yaml, WorkerMode). */
export function workerModeReport(mode: WorkerMode): WorkerMode & { readonly description: string } {
  return { workers: mode.workers, reason: mode.reason, cpus: mode.cpus, description: describeWorkerMode(mode) };
}
