// The attempt loop's own cost on a worker (docs/ARCHITECTURE.md, Routing, "Cost"): routeCall with a fake
// adapter that answers at once, against calling that adapter directly, for a one-deployment group and a
// group of four under least-busy, and a streamed call whose 20 events come in one chunk, as the bench's
// upstream writes them (the commit gate judges them); and one deployment with an rpm and tpm no call reaches (the
// per-pod window: a take, a settle on the usage). `npm run build && taskset -c 1 node loadtest/routing-overhead.mjs`.
import { Router } from '../dist/workers/router.js';
import { routeCall } from '../dist/workers/routing/attempts.js';
import { DeploymentStates, deploymentStateMemory } from '../dist/protocol/deployment-state.js';
import { DeploymentLimits, deploymentLimitsMemory } from '../dist/protocol/deployment-limits.js';
import { CallControl } from '../dist/workers/call-control.js';
import { Flow } from '../dist/workers/flow.js';
const timeouts = { connectMs: 1000, headersMs: 60000, idleMs: 60000, totalMs: 60000 };
const mock = { latencyMs: 0, streamChunks: 1, chunkIntervalMs: 0, embeddingDimensions: 2, fault: 'none' };
const mk = (alias, id) => ({ alias, id, weight: 1, order: 1, maxParallel: 0, provider: 'openai', upstreamModel: 'm', apiBase: 'http://x', credentials: { kind: 'not_required' }, responsesApi: false, timeouts, mock });
const aliases = [mk('one', 'one-0'), ...[0,1,2,3].map((i) => mk('four', `four-${i}`)), { ...mk('limited', 'limited-0'), rpm: 1e12, tpm: 1e15 }];
const routing = { version: 1, aliases, slots: aliases.map((_, i) => i), rules: [], maxResponseBodyBytes: 1 << 20, router: { strategy: 'least-busy', numRetries: 2, retryAfterMs: 0, allowedFails: 3, cooldownMs: 30000, fallbacks: [], contextWindowFallbacks: [], streamCommitTimeoutMs: 10000, maxRetryWaitMs: 10000, timeoutMs: null, limitWindowMs: 60000 } };
const router = new Router(routing, new DeploymentLimits(deploymentLimitsMemory(16)));
const states = new DeploymentStates(deploymentStateMemory(16, 1), 0);
const body = new Uint8Array(10);
const USAGE = { prompt: 3, completion: 2 };
const STREAM = [new TextEncoder().encode(Array.from({ length: 20 }, (_, i) => `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":{"content":"tok${i} "},"finish_reason":null}]}\n\n`).join('') + 'data: [DONE]\n\n')];
const adapter = {
  call(call, sink) {
    call.headersAt = performance.now();
    if (!call.stream) sink.reply(200, 'application/json', [], body, USAGE, 1);
    else {
      sink.head([]);
      sink.data(STREAM);
      sink.end(null, 1);
    }
    return Promise.resolve();
  },
};
const env = { states, settings: routing.router, adapterFor: () => adapter, notice: () => {}, fault: (_id, err) => { throw err; }, now: Date.now, after: (ms, fire) => { const t = setTimeout(fire, ms); return () => clearTimeout(t); } };
const client = { reply() {}, head() {}, data() {}, end() {}, fail() {}, routed() {} };
async function bench(name, n, f) { for (let i = 0; i < 20000; i++) await f(); const t = performance.now(); for (let i = 0; i < n; i++) await f(); const us = (performance.now() - t) * 1000 / n; console.log(name, us.toFixed(3), 'µs/call'); }
const direct = () => { const call = { op: 'chat', upstream: aliases[0], body: {}, stream: false, requestId: 'r', maxResponseBytes: 1, control: new CallControl(), flow: new Flow(), budgetMs: 1, headersAt: 0 }; return adapter.call(call, client); };
const one = router.resolve('one'); const four = router.resolve('four'); const limited = router.resolve('limited');
const routed = (group, stream = false) => () => routeCall(env, { group, op: 'chat', body: {}, prepare: null, stream, requestId: 'r', maxResponseBytes: 1, flow: new Flow(), control: new CallControl(), trace: null }, client);
for (let r = 0; r < 3; r++) {
  await bench('adapter alone     ', 200000, direct);
  await bench('routed, 1 deploy  ', 200000, routed(one));
  await bench('routed, 4 least-busy', 200000, routed(four));
  await bench('routed, 1 deploy with rpm+tpm', 200000, routed(limited));
  await bench('routed stream, 20 events in one chunk', 200000, routed(one, true));
}
