// The cost of an inference-aware pick (CONTRACT.md, Inference-aware routing: "the pick costs O(replicas + prompt
// blocks)"; issue 36: "the pick with a 16 K-character prompt under 20 µs"), on the built code: the real Router,
// pick.ts, shared deployment state and prefix indexes, as a worker runs them.
//
//   hash           the request's prompt hashed once into its 256 blocks (session.ts, before the first pick)
//   pick           filters and score over 4 replicas with fresh metrics (each index holding the prompt: the
//                  worst case of the binary search), the reservation, the count of calls sent since the
//                  scrape, the prompt's blocks inserted into the chosen index, then the call's release
//   hash + pick    what the request pays in all
//   least-busy     the same group picked by least-busy (what an alias without server_metrics pays), for scale
//
// `npm run build && taskset -c 1 node loadtest/pick-cost.mjs` (least of 7 rounds; the figures in
// docs/ARCHITECTURE.md, "Inference-aware routing", come from it).
import { DeploymentStates, deploymentStateMemory } from '../dist/protocol/deployment-state.js';
import { loadPromptHasher, promptBlocks } from '../dist/protocol/prefix-hash.js';
import { PrefixIndex, prefixIndexMemory } from '../dist/protocol/prefix-index.js';
import { Router } from '../dist/workers/router.js';
import { pick, pickResult } from '../dist/workers/routing/pick.js';

const REPLICAS = 4;
const inference = { metricsIntervalMs: 250, staleAfterMs: 2_000, weights: { prefix: 3, queue: 2, kvCache: 2 }, queueThreshold: 5, kvCacheThreshold: 0.8, prefixBlockChars: 64, prefixIndexBlocks: 65_536 };
const settings = (strategy) => ({ strategy, numRetries: 2, retryAfterMs: 0, allowedFails: 3, cooldownMs: 30_000, fallbacks: [], contextWindowFallbacks: [], streamCommitTimeoutMs: 10_000, maxRetryWaitMs: 10_000, timeoutMs: null, limitWindowMs: 60_000, inference });
const timeouts = { connectMs: 1000, headersMs: 60_000, idleMs: 60_000, totalMs: 60_000 };
const aliases = Array.from({ length: REPLICAS }, (_, i) => ({
  alias: 'llama', id: `r${i}`, weight: 1, order: 1, maxParallel: 0, provider: 'openai', upstreamModel: 'm', apiBase: `http://10.0.0.${i}:8000/v1`,
  credentials: { kind: 'not_required' }, responsesApi: false, timeouts, settings: {}, dropParams: false, serverMetrics: 'vllm',
  rpm: 0, tpm: 0, replica: null, connectTo: null,
}));
const routing = { version: 1, aliases, slots: aliases.map((_, i) => i), replicaSets: [], rules: [], router: settings('inference-aware'), maxResponseBodyBytes: 1 << 20 };
const indexes = new Map(aliases.map((a) => [a.id, new PrefixIndex(prefixIndexMemory(65_536), 0)]));
const group = new Router(routing, null, (id) => indexes.get(id) ?? null).resolve('llama');
const states = new DeploymentStates(deploymentStateMemory(16, 1), 0);

const hasher = await loadPromptHasher(64);
const blocks = promptBlocks();
const system = 'You are a careful assistant for the Switchyard gateway. Answer from the documents given. '.repeat(200).slice(0, 16_384 - 40);
const messages = [{ role: 'system', content: system }, { role: 'user', content: 'What does the pick cost?' }];
const count = hasher.hash(messages, blocks);
const prompt = blocks.hashes.slice(0, count);
// Other traffic in every index, then the prompt in all of them: every lookup of the binary search hits.
const other = promptBlocks();
for (let s = 0; s < 200; s++) {
  hasher.hash([{ role: 'user', content: `session ${s} `.repeat(2000) }], other);
  for (const index of indexes.values()) index.insert(other.hashes, other.count);
}
for (const index of indexes.values()) index.insert(prompt, prompt.length);

let now = Date.now();
const scrape = () => {
  now = Date.now();
  for (let i = 0; i < REPLICAS; i++) states.scraped(i, i % 3, 2 + (i % 2), 0.2 + 0.1 * i, now);
};
scrape();

let sink = 0;
function pickOnce(s) {
  const out = pickResult(prompt, false);
  const d = pick(group, states, s, now, null, out);
  states.release(d.slot, out.reservation);
  states.sentDone(d.slot, out.generation);
  sink += out.ratio;
}
const inferenceAware = settings('inference-aware');
const leastBusy = settings('least-busy');

function bench(name, n, f) {
  for (let i = 0; i < 5_000; i++) f();
  let least = Infinity;
  for (let round = 0; round < 7; round++) {
    scrape();
    const t = performance.now();
    for (let i = 0; i < n; i++) f();
    least = Math.min(least, ((performance.now() - t) * 1000) / n);
  }
  console.log(name.padEnd(60), least.toFixed(2), 'µs (least of 7 rounds)');
  return least;
}

console.log(`prompt: ${system.length + 24} characters, ${count} blocks; ${REPLICAS} replicas, ${indexes.get('r0').size()} index entries each`);
bench('hash (256 blocks)', 20_000, () => hasher.hash(messages, blocks));
bench('pick: inference-aware, 4 replicas, insert into the chosen', 20_000, () => pickOnce(inferenceAware));
bench('hash + pick', 20_000, () => {
  hasher.hash(messages, blocks);
  pickOnce(inferenceAware);
});
bench('pick: least-busy, same group (no prompt work)', 200_000, () => pickOnce(leastBusy));
if (sink < 0) console.log(sink);
