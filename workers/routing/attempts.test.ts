/**
 * The attempt loop's promises over random configs and random failure
 * sequences (fast-check), with a fake adapter and a fake clock over the
 * real shared state: no request makes more than 1 + num_retries attempts,
 * none goes to a cooling deployment (a half-open one only as its one
 * trial) or to one whose provider asked for a pause before the pause
 * ended, no wait is longer than max_retry_wait, and every request ends
 * with exactly one answer.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AliasRoute, RoutingConfig } from '../../protocol/config.js';
import { COOLING, DeploymentStates, HALF_OPEN, deploymentStateMemory } from '../../protocol/deployment-state.js';
import type { ErrorCode } from '../../protocol/errors.js';
import type { HeaderList, RouteLabels } from '../../protocol/frames.js';
import { CallControl } from '../call-control.js';
import { Flow } from '../flow.js';
import type { ProviderAdapter } from '../providers/adapter.js';
import { PrefixIndex, prefixIndexMemory } from '../../protocol/prefix-index.js';
import { Router, type Deployment } from '../router.js';
import { routeCall, type ClientSink } from './attempts.js';
import { AttemptFailure, providerFailure } from './failure.js';

type Outcome = 'ok' | 'ok-stream' | 'stream-error-before-content' | 500 | 429 | 401 | 400 | 'too-long' | 'reset' | '429-retry-after' | '503-retry-after';
const OUTCOMES: readonly Outcome[] = ['ok', 'ok-stream', 'stream-error-before-content', 500, 429, 401, 400, 'too-long', 'reset', '429-retry-after', '503-retry-after'];

interface Shape {
  readonly groups: ReadonlyArray<{ readonly deployments: number; readonly fallbacks: readonly number[]; readonly contextFallbacks: readonly number[] }>;
  readonly numRetries: number;
  readonly allowedFails: number;
  readonly cooldownMs: number;
  readonly maxRetryWaitMs: number;
  /** The Retry-After of the outcomes that send one, in ms of the fake clock. */
  readonly retryAfterMs: number;
  readonly strategy: 'simple-shuffle' | 'least-busy' | 'latency-based-routing' | 'inference-aware';
  /** Inference-aware: every deployment has server_metrics; these are its scraped figures, by slot (stale: scraped long ago). */
  readonly figures: ReadonlyArray<{ readonly waiting: number; readonly running: number; readonly kv: number; readonly stale: boolean }>;
}

const shapeArb: fc.Arbitrary<Shape> = fc.integer({ min: 1, max: 3 }).chain((count) =>
  fc.record({
    groups: fc.array(
      fc.record({
        deployments: fc.integer({ min: 1, max: 3 }),
        fallbacks: fc.uniqueArray(fc.integer({ min: 0, max: count - 1 }), { maxLength: 2 }),
        contextFallbacks: fc.uniqueArray(fc.integer({ min: 0, max: count - 1 }), { maxLength: 1 }),
      }),
      { minLength: count, maxLength: count },
    ),
    numRetries: fc.integer({ min: 0, max: 3 }),
    allowedFails: fc.integer({ min: 1, max: 3 }),
    cooldownMs: fc.integer({ min: 0, max: 80 }),
    maxRetryWaitMs: fc.constantFrom(0, 50, 10_000),
    retryAfterMs: fc.constantFrom(1, 40, 400),
    strategy: fc.constantFrom('simple-shuffle' as const, 'least-busy' as const, 'latency-based-routing' as const, 'inference-aware' as const),
    figures: fc.array(fc.record({ waiting: fc.integer({ min: 0, max: 8 }), running: fc.integer({ min: 0, max: 8 }), kv: fc.double({ min: 0, max: 1, noNaN: true }), stale: fc.boolean() }), { minLength: 9, maxLength: 9 }),
  }),
);

const timeouts = { connectMs: 1000, headersMs: 60_000, idleMs: 60_000, totalMs: 60_000 };
const INFERENCE = { metricsIntervalMs: 250, staleAfterMs: 2_000, weights: { prefix: 3, queue: 2, kvCache: 2 }, queueThreshold: 5, kvCacheThreshold: 0.8, prefixBlockChars: 64, prefixIndexBlocks: 65_536 };

function routingOf(shape: Shape): RoutingConfig {
  const aliases: AliasRoute[] = [];
  shape.groups.forEach((g, gi) => {
    for (let d = 0; d < g.deployments; d++) {
      aliases.push({ alias: `g${gi}`, id: `g${gi}-${d}`, weight: 1 + d, order: 1, maxParallel: 0, rpm: 0, tpm: 0, provider: 'openai', upstreamModel: `m${gi}${d}`, apiBase: 'http://127.0.0.1:9', credentials: { kind: 'not_required' }, responsesApi: false, timeouts, settings: {}, dropParams: false, connectTo: null, replica: null, serverMetrics: shape.strategy === 'inference-aware' ? 'vllm' : null });
    }
  });
  const list = (pick: (g: Shape['groups'][number]) => readonly number[]) =>
    shape.groups.map((g, gi) => ({ group: `g${gi}`, to: pick(g).filter((t) => t !== gi).map((t) => `g${t}`) })).filter((l) => l.to.length > 0);
  return {
    version: 1,
    aliases,
    slots: aliases.map((_, i) => i),
    replicaSets: [],
    rules: [],
    maxResponseBodyBytes: 1 << 20,
    router: { strategy: shape.strategy, numRetries: shape.numRetries, retryAfterMs: 0, allowedFails: shape.allowedFails, cooldownMs: shape.cooldownMs, fallbacks: list((g) => g.fallbacks), contextWindowFallbacks: list((g) => g.contextFallbacks), streamCommitTimeoutMs: 60_000, maxRetryWaitMs: shape.maxRetryWaitMs, timeoutMs: null, limitWindowMs: 60_000, inference: INFERENCE },
  };
}

/** Everything the client was sent, in order. */
class Recorder implements ClientSink {
  readonly calls: string[] = [];
  routed(_d: string | null, _a: number, _f: string | null, _l: RouteLabels, _w: number): void {}
  reply(status: number): void {
    this.calls.push(`reply:${status}`);
  }
  head(_h: HeaderList): void {
    this.calls.push('head');
  }
  data(): void {
    this.calls.push('data');
  }
  end(): void {
    this.calls.push('end');
  }
  fail(error: { code: ErrorCode }): void {
    this.calls.push(`fail:${error.code}`);
  }
  /** Exactly one answer: a reply, a fail, or a head with data and one end (or fail), and nothing after it. */
  answeredOnce(): boolean {
    const c = this.calls;
    if (c.length === 1) return c[0]?.startsWith('reply:') === true || c[0]?.startsWith('fail:') === true;
    if (c[0] !== 'head') return false;
    const last = c.at(-1) as string;
    return (last === 'end' || last.startsWith('fail:')) && c.slice(1, -1).every((x) => x === 'data');
  }
}

const encoder = new TextEncoder();
const ROLE = encoder.encode('data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n');
const CONTENT = encoder.encode('data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n');
const ERROR_EVENT = encoder.encode('data: {"error":{"message":"boom"}}\n\n');

describe('the attempt loop (property)', () => {
  it('bounds attempts by 1 + num_retries, never calls a cooling deployment (a half-open one only as its one trial) or one backing off, never waits past max_retry_wait, answers every request exactly once', async () => {
    await fc.assert(
      fc.asyncProperty(
        shapeArb,
        fc.array(fc.constantFrom(...OUTCOMES), { minLength: 1, maxLength: 60 }),
        fc.array(
          fc.record({
            group: fc.nat(),
            stream: fc.boolean(),
            together: fc.integer({ min: 1, max: 4 }),
            advanceMs: fc.integer({ min: 0, max: 60 }),
            sheddable: fc.boolean(),
            prompt: fc.option(fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 6 }), { nil: null }),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (shape, outcomes, batches) => {
          const routing = routingOf(shape);
          const indexes = new Map(routing.aliases.map((a) => [a.id, new PrefixIndex(prefixIndexMemory(16), 0)]));
          const router = new Router(routing, null, (id) => indexes.get(id) ?? null);
          const states = new DeploymentStates(deploymentStateMemory(16, 1), 0);
          let clock = 1_000_000;
          if (shape.strategy === 'inference-aware') {
            shape.figures.forEach((f, slot) => states.scraped(slot, f.waiting, f.running, f.kv, f.stale ? clock - 60_000 : clock));
          }
          let next = 0;
          /** Calls under way on a deployment that was half-open when they began, by slot. */
          const trials = new Map<number, number>();
          let violation: string | null = null;

          const adapter: ProviderAdapter = {
            async call(call, sink) {
              const d = deploymentOf(router, call.upstream.upstreamModel);
              const state = states.stateAt(d.slot, clock);
              if (state === COOLING) violation ??= `${d.id} called while cooling`;
              if (states.backoffUntil(d.slot) > clock) violation ??= `${d.id} called ${states.backoffUntil(d.slot) - clock} ms before the end of the wait its provider asked for`;
              const trial = state === HALF_OPEN;
              if (trial) {
                if ((trials.get(d.slot) ?? 0) > 0) violation ??= `${d.id}: a second call while half-open`;
                trials.set(d.slot, (trials.get(d.slot) ?? 0) + 1);
              }
              try {
                // A turn of the event loop: the other requests of the batch run meanwhile.
                await new Promise((resolve) => setImmediate(resolve));
                call.headersAt = performance.now();
                const outcome = outcomes[next++ % outcomes.length] as Outcome;
                switch (outcome) {
                  case 'ok':
                  case 'ok-stream':
                    if (!call.stream) return sink.reply(200, 'application/json', [], encoder.encode('{"choices":[]}'), null, 1);
                    sink.head([]);
                    sink.data(ROLE);
                    sink.data(CONTENT);
                    return sink.end(null, 1);
                  case 'stream-error-before-content':
                    if (!call.stream) throw new AttemptFailure('transient', 'upstream_invalid_response', 'bad');
                    sink.head([]);
                    sink.data(ROLE);
                    return sink.data(ERROR_EVENT);
                  case 'reset':
                    throw new AttemptFailure('transient', 'upstream_reset', 'reset');
                  case '429-retry-after':
                  case '503-retry-after':
                    throw providerFailure(outcome === '429-retry-after' ? 429 : 503, [], shape.retryAfterMs, 'application/json', outcome === '429-retry-after' ? encoder.encode('{"error":{}}') : null);
                  case 'too-long':
                    throw providerFailure(400, [], 0, 'application/json', encoder.encode('{"error":{"code":"context_length_exceeded"}}'));
                  default:
                    throw providerFailure(outcome, [], 0, 'application/json', outcome >= 500 ? null : encoder.encode('{"error":{}}'));
                }
              } finally {
                if (trial) trials.set(d.slot, (trials.get(d.slot) as number) - 1);
              }
            },
          };
          const env = {
            states,
            settings: routing.router,
            adapterFor: () => adapter,
            notice: () => undefined,
            // The fake adapter fails only as adapters may: an internal error would be a defect of the loop.
            fault: (_requestId: string, err: unknown) => {
              throw new Error(`unexpected internal error: ${String(err)}`);
            },
            now: () => clock,
            // A wait moves the fake clock by its length (concurrent waits overlap), then fires on the next turn.
            after: (ms: number, fire: () => void) => {
              if (ms > shape.maxRetryWaitMs) violation ??= `a wait of ${ms} ms, past max_retry_wait ${shape.maxRetryWaitMs}`;
              const target = clock + ms;
              let cancelled = false;
              setImmediate(() => {
                if (cancelled) return;
                clock = Math.max(clock, target);
                fire();
              });
              return () => void (cancelled = true);
            },
          };

          for (const batch of batches) {
            const group = router.resolve(`g${batch.group % shape.groups.length}`);
            const runs = Array.from({ length: batch.together }, async () => {
              const client = new Recorder();
              let attempts = 0;
              const counting: ProviderAdapter = {
                call: (call, sink) => {
                  attempts++;
                  return adapter.call(call, sink);
                },
              };
              await routeCall({ ...env, adapterFor: () => counting }, { group, op: 'chat', body: { model: group.name }, prepare: null, stream: batch.stream, requestId: 'r', maxResponseBytes: 1 << 20, flow: new Flow(), control: new CallControl(), trace: null, prompt: batch.prompt === null ? null : Int32Array.from(batch.prompt), sheddable: batch.sheddable }, client);
              return { client, attempts };
            });
            for (const { client, attempts } of await Promise.all(runs)) {
              expect(attempts, 'attempts').toBeLessThanOrEqual(1 + shape.numRetries);
              expect(client.answeredOnce(), `one answer: ${client.calls.join(',')}`).toBe(true);
            }
            expect(violation).toBeNull();
            // Nothing is left reserved once every request answered.
            for (let slot = 0; slot < routing.aliases.length; slot++) expect(states.inFlight(slot)).toBe(0);
            // …and every call counted as sent since its replica's scrape was uncounted at its end.
            for (let slot = 0; slot < routing.aliases.length; slot++) expect(states.sentSinceScrape(slot)).toBe(0);
            clock += batch.advanceMs;
          }
        },
      ),
      { numRuns: 300, seed: 20261126 },
    );
  });
});

/** The deployment whose upstream model this is (each is unique in the generated configs). */
function deploymentOf(router: Router, upstreamModel: string): Deployment {
  const group = router.resolve(`g${upstreamModel[1]}`);
  return group.deployments.find((d) => d.upstream.upstreamModel === upstreamModel) as Deployment;
}
