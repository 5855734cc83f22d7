// Issue 36's bench: time to first token through Switchyard in front of 4 simulated vLLM replicas
// (test/support/replica-simulator.ts: continuous batching, a KV prefix cache that makes an uncached
// prompt's prefill slower, /metrics), least-busy against inference-aware, on two workloads:
//
//   shared prefix      sessions of several turns over a few long system prompts (each shared by
//                      several sessions): a replica that holds a prompt's blocks skips most of its prefill
//   no shared prefix   every request a long prompt of its own: nothing to gain from affinity, so the
//                      score must balance the load as well as least-busy does
//
// Goals (issue 36): TTFT p90 inference-aware ≤ 0.5 × least-busy on the shared prefix, ≤ 1.1 × on the other.
// TTFT is the time to the response headers of a stream: the gateway's commit gate holds them until the
// first content, so they leave with the first token.
//
// Each (workload, strategy) runs on fresh replicas (empty caches) and a fresh gateway (one worker thread,
// on GATEWAY_CPU); the replicas and the load run in this process. `BENCH_ONLY=inference npm run bench`, or
// `node tools/build.mjs && taskset -c 0 node loadtest/inference.mjs`. Env: BENCH_INFERENCE_CONCURRENCY (12),
// BENCH_INFERENCE_SESSIONS (144), BENCH_INFERENCE_TURNS (4), BENCH_INFERENCE_PROMPTS (24), BENCH_INFERENCE_THINK_MS (300), BENCH_INFERENCE_REPEATS (1).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { request } from 'undici';
import { START_ARGS } from './start-args.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;
const CONCURRENCY = Number(env.BENCH_INFERENCE_CONCURRENCY ?? 12);
const SESSIONS = Number(env.BENCH_INFERENCE_SESSIONS ?? 144);
const TURNS = Number(env.BENCH_INFERENCE_TURNS ?? 4);
const REPEATS = Math.max(1, Number(env.BENCH_INFERENCE_REPEATS ?? 1));
/**
 * A session's user reads each answer before the next turn, for a time drawn from an exponential of this
 * mean (the no-shared-prefix requests wait as long between two): users are not in step, so no strategy
 * gets an affinity by the accident of its tie-breaking turning in step with them.
 */
const THINK_MS = Number(env.BENCH_INFERENCE_THINK_MS ?? 300);
/** mulberry32: the same think times in every run, so the strategies meet the same arrivals. */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const REPLICAS = 4;
const GATEWAY_CPU = 1;
const KEY = 'bench-key';
const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
/**
 * 24 system prompts of 80 blocks (5,120 characters, ~1,280 tokens), each shared by SESSIONS / 24 sessions:
 * a prompt's first request is a full prefill wherever it goes (24 of 576 requests), the rest can find it.
 */
const PROMPTS = Number(env.BENCH_INFERENCE_PROMPTS ?? 24);
const PROMPT_BLOCKS = 80;
/**
 * The replica: 4 running at once, 2 ms of prefill per uncached block of 64 characters (an 80-block prompt
 * 160 ms uncached, an 8B model's order of magnitude for 1,280 tokens), 10 ms per output token, 32 tokens
 * (a call lasts about half a second: longer than a scrape period, as real ones are); a KV cache of 800
 * blocks, which holds about 10 of the 24 system prompts: a replica that sees every prompt evicts what it
 * will need next, one that sees a quarter of them keeps them. Four running calls hold about 340 blocks
 * (KV use ~0.43), so a replica is saturated by its queue, as a real one with a large cache is, not by its cache.
 */
const REPLICA = { engine: 'vllm', model: MODEL, maxRunning: 4, kvBlocks: 800, prefillMsPerBlock: 2, decodeMsPerToken: 10, outputTokens: 32 };

/** The simulator is TypeScript (tests import it as it is): bundled once for node. */
async function loadSimulator() {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-inference-'));
  const outfile = join(dir, 'replica-simulator.mjs');
  await build({ entryPoints: [join(root, 'test/support/replica-simulator.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile, logLevel: 'warning' });
  return { startReplica: (await import(pathToFileURL(outfile).href)).startReplica, dir };
}

const freePort = () => new Promise((resolve, reject) => {
  const s = createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});
const hasTaskset = (() => { try { execFileSync('taskset', ['-V'], { stdio: 'ignore' }); return true; } catch { return false; } })();

async function startGateway(dir, replicas, strategy) {
  const yaml = `model_list:\n${replicas.map((r, i) => `  - model_name: llama\n    params: { model: openai/${MODEL}, api_base: "${r.apiBase}", server_metrics: vllm }\n    model_info: { id: r${i} }\n`).join('')}router_settings:\n  routing_strategy: ${strategy}\n`;
  const config = join(dir, `${strategy}.yaml`);
  writeFileSync(config, yaml);
  const port = await freePort();
  const [cmd, argv] = hasTaskset ? ['taskset', ['-c', String(GATEWAY_CPU), process.execPath, ...START_ARGS]] : [process.execPath, START_ARGS];
  const child = spawn(cmd, argv, { cwd: root, env: { ...env, GATEWAY_CONFIG: config, GATEWAY_API_KEY: KEY, PORT: String(port), HOST: '127.0.0.1', GATEWAY_WORKERS: '1', LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let errTail = '';
  child.stderr.on('data', (d) => { errTail = (errTail + d).slice(-2000); });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`gateway exited: ${errTail}`);
    try {
      const res = await request(`${url}/ready`);
      await res.body.dump();
      if (res.statusCode === 200) break;
    } catch { /* not yet */ }
    if (i > 300) throw new Error(`gateway not ready: ${errTail}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  // Every replica scraped once before the load (an inference-aware pick with no metrics is least-busy).
  for (let i = 0; i < 100; i++) {
    const status = await (await request(`${url}/status/models/llama`, { headers: { authorization: `Bearer ${KEY}` } })).body.json();
    if (status.deployments.every((d) => d.inference?.metrics_age_ms !== null)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, stop: () => new Promise((r) => { child.once('exit', r); child.kill('SIGKILL'); }) };
}

const words = 'the gateway routes each request to the replica that holds its prompt and has room for it '.split(' ');
/** `n` characters of text that begin with `tag` (so two tags never share a first block). */
const text = (tag, n) => {
  let s = `${tag}: `;
  for (let i = 0; s.length < n; i++) s += `${words[(i * 7 + tag.length) % words.length]} `;
  return s.slice(0, n);
};
const systemPrompt = (p) => text(`system prompt ${p} of the tenant ${p * 7919}`, PROMPT_BLOCKS * 64);

/** The requests of a workload, as sessions: each a list of turns, sent one after the other. */
function sessionsOf(workload) {
  if (workload === 'shared') {
    return Array.from({ length: SESSIONS }, (_, s) => {
      const messages = [{ role: 'system', content: systemPrompt(s % PROMPTS) }];
      return Array.from({ length: TURNS }, (_, t) => {
        if (t > 0) messages.push({ role: 'assistant', content: text(`answer ${t} of session ${s}`, 120) });
        messages.push({ role: 'user', content: text(`question ${t + 1} of session ${s}`, 160) });
        return messages.slice();
      });
    });
  }
  // As many requests, each a prompt of its own as long as a system prompt.
  return Array.from({ length: SESSIONS * TURNS }, (_, i) => [[{ role: 'user', content: text(`lone request ${i}`, PROMPT_BLOCKS * 64 + 160) }]]);
}

async function runLoad(url, sessions) {
  const random = seeded(36);
  const think = () => -THINK_MS * Math.log(1 - random());
  const ttfts = [];
  let errors = 0;
  let next = 0;
  const runner = async () => {
    while (next < sessions.length) {
      const turns = sessions[next++];
      for (const messages of turns) {
        const t0 = performance.now();
        try {
          const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'llama', stream: true, messages }) });
          ttfts.push(performance.now() - t0);
          if (res.statusCode !== 200) errors++;
          await res.body.dump();
        } catch {
          errors++;
        }
        await new Promise((r) => setTimeout(r, think()));
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, runner));
  return { ttfts, errors, seconds: (performance.now() - started) / 1000 };
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

/** Runs every (workload, strategy) pair; returns the figures and prints them as it goes. */
export async function runInferenceBench(log = console.log) {
  const { startReplica, dir } = await loadSimulator();
  const results = {};
  for (const workload of ['shared', 'none']) {
    for (let round = 0; round < REPEATS; round++) {
      for (const strategy of ['least-busy', 'inference-aware']) {
        const replicas = [];
        for (let i = 0; i < REPLICAS; i++) replicas.push(await startReplica(REPLICA));
        const gw = await startGateway(dir, replicas, strategy);
        const load = await runLoad(gw.url, sessionsOf(workload));
        const requests = replicas.flatMap((r) => r.requests);
        const blocks = requests.reduce((n, q) => n + q.promptBlocks, 0);
        const cached = requests.reduce((n, q) => n + q.cachedBlocks, 0);
        const figures = { p50: quantile(load.ttfts, 0.5), p90: quantile(load.ttfts, 0.9), requests: load.ttfts.length, errors: load.errors, seconds: load.seconds, cachedShare: blocks === 0 ? 0 : cached / blocks, perReplica: replicas.map((r) => r.requests.length) };
        (results[workload] ??= {})[strategy] ??= [];
        results[workload][strategy].push(figures);
        log(`inference [${workload === 'shared' ? 'shared prefix' : 'no shared prefix'}, ${strategy}]: TTFT p50 ${figures.p50.toFixed(1)} ms, p90 ${figures.p90.toFixed(1)} ms; ${figures.requests} requests in ${figures.seconds.toFixed(1)} s, errors ${figures.errors}; prompt blocks found cached ${(100 * figures.cachedShare).toFixed(1)} %; requests per replica ${figures.perReplica.join('/')}`);
        await gw.stop();
        for (const r of replicas) await r.close();
      }
    }
  }
  const median = (xs) => quantile(xs, 0.5);
  const ratio = (w) => median(results[w]['inference-aware'].map((f, i) => f.p90 / results[w]['least-busy'][i].p90));
  rmSync(dir, { recursive: true, force: true });
  const summary = { shared: ratio('shared'), none: ratio('none'), results };
  log(`inference: TTFT p90 inference-aware ÷ least-busy: shared prefix ${summary.shared.toFixed(3)}× (goal ≤ 0.5), no shared prefix ${summary.none.toFixed(3)}× (goal ≤ 1.1)`);
  return summary;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runInferenceBench();
  process.exit(0);
}
