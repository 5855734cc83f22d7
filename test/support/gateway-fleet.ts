/**
 * A fleet: N gateway processes (the built server, dist/) on one config, each on its own ephemeral
 * loopback port, as pods behind a load balancer; and load spread over them round-robin. For the
 * tests of limits and cooldowns shared through Redis (issue 37), where what one pod does must be
 * seen by the others: each pod is its own process with its own memory, as in production.
 *
 * Each pod's log lines other than the access lines are kept (`events`): a long load logs a line
 * per request, which the fleet does not hold.
 *
 * @example
 * const redis = await startRedis();
 * const up = await startScriptedUpstream(['east']);
 * const fleet = await startFleet({ pods: 3, yaml: `
 * model_list:${deploymentYaml('chat', up.at('east'), ', rpm: 600')}
 * router_settings: { redis_url: ${redis.url} }
 * ` });
 * try {
 *   // Demand above the limit for 3 s, request i to pod i % 3, 12 in flight at most:
 *   const sent = await fleet.spread({ durationMs: 3000, concurrency: 12 }, (pod) => chat(pod, 'chat'));
 *   expect(sent.filter((s) => s.value?.status === 429).length).toBeGreaterThan(0);
 *   expect(busiestWindow(up.at('east').calls(), 60_000).calls).toBeLessThanOrEqual(600 * 1.05 + 3);
 *   // By the official SDK, on the next pod in turn:
 *   await fleet.next().client().chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
 *   // What each pod logged of an event:
 *   await until(() => fleet.events('shared_state').length === 3, 'each pod logged shared_state');
 * } finally {
 *   await fleet.stopAll();
 * }
 */
import { startTestGatewayProcess, type TestGatewayOptions, type TestGatewayProcess } from './gateway.js';
import type { LogLine } from './gateway-process.js';

export interface FleetOptions {
  /** How many pods (processes) to start. */
  pods: number;
  /** The config every pod loads. */
  yaml: string;
  /** Variables for every pod, on top of the test defaults (gateway.ts). */
  env?: Record<string, string>;
  /** Variables for pod `i` alone (its name in logs, say), on top of `env`. */
  podEnv?: (i: number) => Record<string, string>;
  /** GATEWAY_WORKERS of each pod (default 1: a fleet of N on a 2-core host). */
  workers?: number;
  /** Keep the access lines of answered calls (status 200) for `events('access')`; the rest of a load's access log is dropped. */
  keepAnswered?: boolean;
}

/** One request the fleet sent: to which pod, when, how long it took, and what it gave. */
export interface Sent<T> {
  readonly pod: number;
  readonly index: number;
  /** performance.now() when it was sent. */
  readonly at: number;
  readonly ms: number;
  readonly value?: T;
  /** What it threw (the SDK throws on an error status; fetch on a broken connection). */
  readonly error?: unknown;
}

/** How much to send: so many requests, or as many as fit in a duration. */
export type Plan = { readonly count: number } | { readonly durationMs: number };

export interface SpreadOptions {
  /** Requests in flight at once at most (default: the pod count). */
  concurrency?: number;
  /** Open-loop pacing: request i is not sent before start + i × 1000 / perSecond (default: as fast as the concurrency allows). */
  perSecond?: number;
}

export interface Fleet {
  readonly pods: readonly TestGatewayProcess[];
  /** The next pod in round-robin order. */
  next(): TestGatewayProcess;
  /**
   * Sends requests by `send`, request i to pod i % N, at most `concurrency` at once, until `plan` is done;
   * resolves with every one, in order of index, once all have settled. A request that throws is kept
   * with its error: the test judges.
   */
  spread<T>(plan: Plan, options: SpreadOptions, send: (pod: TestGatewayProcess, index: number) => Promise<T>): Promise<Array<Sent<T>>>;
  /** Another pod on the same config (the fleet grows); it takes the next index. */
  addPod(): Promise<TestGatewayProcess>;
  /** The log lines with this `event` (every non-access line without one), of every pod, with the pod's index. */
  events(name?: string): Array<{ pod: number; line: LogLine }>;
  /** Stops every pod (SIGTERM, then SIGKILL after the grace), at once. */
  stopAll(): Promise<void>;
}

/**
 * Starts `pods` gateway processes on `yaml`, in parallel; resolves once each has logged `listening`.
 * A pod that fails to start stops the others and rejects with its error.
 */
export async function startFleet(options: FleetOptions): Promise<Fleet> {
  if (!Number.isInteger(options.pods) || options.pods < 1) throw new Error(`startFleet: options.pods must be a whole number of at least 1, got ${options.pods}`);
  const pods: TestGatewayProcess[] = [];
  const lines: Array<Array<LogLine>> = [];
  let turn = 0;

  const start = (i: number): Promise<TestGatewayProcess> => {
    const kept: LogLine[] = [];
    lines[i] = kept;
    const gateway: TestGatewayOptions = { yaml: options.yaml, workers: options.workers ?? 1, env: { ...options.env, ...options.podEnv?.(i) } };
    return startTestGatewayProcess({
      ...gateway,
      keepStdout: false,
      onLine: (line) => {
        // The access lines are most of a load's log; the rest (state changes, errors) is what a test reads.
        if (line.includes('"event":"access"') && !(options.keepAnswered === true && line.includes('"status":200,'))) return;
        try {
          kept.push(JSON.parse(line) as LogLine);
        } catch {
          kept.push({ __raw: line });
        }
      },
    });
  };

  const started = await Promise.allSettled(Array.from({ length: options.pods }, (_, i) => start(i)));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  const ok = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  if (failed) {
    await Promise.all(ok.map((p) => p.close()));
    throw failed.reason;
  }
  pods.push(...ok);

  const next = () => pods[turn++ % pods.length] as TestGatewayProcess;

  return {
    pods,
    next,
    async spread<T>(plan: Plan, spreadOptions: SpreadOptions, send: (pod: TestGatewayProcess, index: number) => Promise<T>) {
      const concurrency = spreadOptions.concurrency ?? pods.length;
      const t0 = performance.now();
      const deadline = 'durationMs' in plan ? t0 + plan.durationMs : Infinity;
      const count = 'count' in plan ? plan.count : Infinity;
      const results: Array<Sent<T>> = [];
      let issued = 0;
      const worker = async () => {
        for (;;) {
          if (issued >= count || performance.now() >= deadline) return;
          // Claimed before any wait, so two workers never take one index.
          const index = issued++;
          if (spreadOptions.perSecond !== undefined) {
            const due = t0 + (index * 1000) / spreadOptions.perSecond;
            // Pacing is the point here: an open-loop rate, not a wait for something to happen.
            if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
            if (performance.now() >= deadline) return;
          }
          const podIndex = index % pods.length;
          const at = performance.now();
          try {
            const value = await send(pods[podIndex] as TestGatewayProcess, index);
            results.push({ pod: podIndex, index, at, ms: performance.now() - at, value });
          } catch (error) {
            results.push({ pod: podIndex, index, at, ms: performance.now() - at, error });
          }
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      return results.sort((a, b) => a.index - b.index);
    },
    async addPod() {
      const pod = await start(pods.length);
      pods.push(pod);
      return pod;
    },
    events: (name) => lines.flatMap((kept, pod) => kept.filter((line) => (name === undefined ? true : line.event === name)).map((line) => ({ pod, line }))),
    stopAll: async () => {
      await Promise.all(pods.map((p) => p.close()));
    },
  };
}
