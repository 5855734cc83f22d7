// The prefix part of an inference-aware pick (docs/ARCHITECTURE.md, "Inference-aware routing"; the whole
// pick is loadtest/pick-cost.mjs's): hashing a 16 K-character prompt into its 256 blocks of 64 characters, and scoring it
// against 4 replicas' indexes, each holding the whole prompt (the worst case: every block looked up on
// every replica), then inserting it into the chosen one (a refresh). Also a prompt that no replica holds
// (one lookup each). `npm run build && taskset -c 1 node loadtest/prefix-cost.mjs`.
import { loadPromptHasher, promptBlocks } from '../dist/protocol/prefix-hash.js';
import { PrefixIndex, prefixIndexMemory } from '../dist/protocol/prefix-index.js';

const hasher = await loadPromptHasher(64);
const blocks = promptBlocks();
const system = 'You are a careful assistant for the Switchyard gateway. Answer from the documents given. '.repeat(200).slice(0, 16_384 - 40);
const held = [{ role: 'system', content: system }, { role: 'user', content: 'What does the pick cost?' }];
const fresh = [{ role: 'system', content: 'x' + system.slice(1) }, { role: 'user', content: 'What does the pick cost?' }];
const replicas = [0, 1, 2, 3].map(() => new PrefixIndex(prefixIndexMemory(65_536), 0));
hasher.hash(held, blocks);
for (const r of replicas) r.insert(blocks.hashes, blocks.count);
// Some other traffic in each index, so the table is not empty around the prompt's keys.
const other = promptBlocks();
for (let s = 0; s < 200; s++) {
  hasher.hash([{ role: 'user', content: `session ${s} `.repeat(2000) }], other);
  for (const r of replicas) r.insert(other.hashes, other.count);
}
hasher.hash(held, blocks);
for (const r of replicas) r.insert(blocks.hashes, blocks.count);

let sink = 0;
function pickPrefix(messages) {
  const n = hasher.hash(messages, blocks);
  let best = 0;
  let bestScore = -1;
  for (let i = 0; i < replicas.length; i++) {
    const s = replicas[i].score(blocks.hashes, n);
    if (s > bestScore) { bestScore = s; best = i; }
  }
  sink += bestScore;
  return best;
}
function bench(name, n, f) {
  for (let i = 0; i < 5000; i++) f();
  let least = Infinity;
  for (let round = 0; round < 5; round++) {
    const t = performance.now();
    for (let i = 0; i < n; i++) f();
    least = Math.min(least, ((performance.now() - t) * 1000) / n);
  }
  console.log(name.padEnd(52), least.toFixed(2), 'µs (least of 5 rounds)');
}
console.log(`blocks: ${hasher.hash(held, blocks)}, index entries per replica: ${replicas[0].size()}`);
bench('hash only (256 blocks)', 20_000, () => hasher.hash(held, blocks));
bench('hash + score on 4 replicas, all hit', 20_000, () => pickPrefix(held));
bench('hash + score on 4 replicas, none hit', 20_000, () => pickPrefix(fresh));
bench('hash + score on 4 + insert into the chosen one', 20_000, () => { const r = pickPrefix(held); replicas[r].insert(blocks.hashes, blocks.count); });
if (sink < 0) console.log(sink);
