/**
 * Cheap, truthful probes under load. Concurrent probes share one run
 * (single flight); a completed result is reused for `ttlMs`; and a probe
 * never waits past `budgetMs` (default 900 ms, under Kubernetes' default
 * 1 s probe timeout): when a run is still going it answers from the last
 * completed result, marked stale with its age, or unhealthy when there is
 * none yet.
 */
import type { HealthReport, ProbeType } from './types.js';

export interface CachedReport {
  readonly report: HealthReport;
  /** How old the report is; 0 for a run this probe waited for. */
  readonly ageMs: number;
  /** True when the run outlasted the probe budget and an older result was served. */
  readonly stale: boolean;
}

export interface ProbeCacheOptions {
  readonly probe: ProbeType;
  readonly ttlMs?: number;
  readonly budgetMs?: number;
  readonly now?: () => number;
}

export class ProbeCache {
  readonly #run: () => Promise<HealthReport>;
  readonly #probe: ProbeType;
  readonly #ttlMs: number;
  readonly #budgetMs: number;
  readonly #now: () => number;
  #last: { report: HealthReport; at: number } | null = null;
  #inflight: Promise<HealthReport> | null = null;

  constructor(run: () => Promise<HealthReport>, options: ProbeCacheOptions) {
    this.#run = run;
    this.#probe = options.probe;
    this.#ttlMs = options.ttlMs ?? 1_000;
    this.#budgetMs = options.budgetMs ?? 900;
    this.#now = options.now ?? Date.now;
  }

  async get(): Promise<CachedReport> {
    const last = this.#last;
    if (last && this.#now() - last.at < this.#ttlMs) return { report: last.report, ageMs: this.#now() - last.at, stale: false };
    const run = this.#start();
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.#budgetMs);
    });
    const report = await Promise.race([run, budget]);
    clearTimeout(timer);
    if (report) return { report, ageMs: 0, stale: false };
    const previous = this.#last;
    if (previous) return { report: previous.report, ageMs: this.#now() - previous.at, stale: true };
    return {
      report: {
        status: 'unhealthy',
        checks: [{ name: 'health_run', status: 'unhealthy', duration_ms: this.#budgetMs, reason: 'the first health run has not completed yet' }],
        timestamp: new Date(this.#now()).toISOString(),
        probe_type: this.#probe,
      },
      ageMs: 0,
      stale: true,
    };
  }

  /** Joins the run in progress or starts one. The registry never rejects (failures are results). */
  #start(): Promise<HealthReport> {
    if (!this.#inflight) {
      this.#inflight = this.#run().then(
        (report) => {
          this.#last = { report, at: this.#now() };
          this.#inflight = null;
          return report;
        },
        (err: unknown) => {
          this.#inflight = null;
          throw err;
        },
      );
    }
    return this.#inflight;
  }
}
