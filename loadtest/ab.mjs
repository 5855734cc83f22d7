// A/B: several gateway variants (builds, modes, flags, env) started side by side on CPU 1 and
// loaded one at a time in interleaved rounds, so the noise of a shared machine falls on all of
// them alike. Prints per variant the median (and best) req/s and CPU per request; the first
// round is JIT warm-up and is dropped. The peak RSS (VmHWM) covers every round.
//
//   npm run build && taskset -c 0 node loadtest/ab.mjs '<variants JSON>'
//   variants: [{ "name": "before", "cwd": "/tmp/before" }, { "name": "after" },
//              { "name": "inline", "workers": "0" }, { "name": "no access log", "env": { "LOG_LEVEL": "warn" } },
//              { "name": "access log to a pipe this process drains", "stdout": "pipe" },
//              { "name": "flags", "flags": ["--single-threaded-gc"] } (default: npm start's, start-args.mjs), { "name": "direct", "direct": true },
//              { "name": "2 workers on 2 CPUs", "workers": "2", "cpus": "0,1" } (default CPU 1; the load shares CPU 0),
//              { "name": "translated", "route": "messages-translated-stream" } (this variant's own AB_ROUTE),
//              { "name": "limited", "params": "rpm: 1000000000", "settings": "{ redis_url: 'redis://127.0.0.1:6379' }" }
//              (extra params on every alias, and router_settings, in YAML flow style)]
//   ("cwd": another checkout, built, e.g. `git worktree add /tmp/before HEAD~1` + node_modules link + tsc)
// Env: AB_ROUTE chat | stream | paced | embeddings | messages | messages-stream (POST /v1/messages passed through to the
// Anthropic fake) | messages-translated | messages-translated-stream (to the OpenAI fake, through chat) (default chat), AB_CONNECTIONS (64), AB_ROUNDS (8), AB_SECONDS (2).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { run } from './load.mjs';
import { START_FLAGS } from './start-args.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const variants = JSON.parse(process.argv[2] ?? '[{"name":"1 worker"},{"name":"inline","workers":"0"}]');
const route = process.env.AB_ROUTE ?? 'chat';
const connections = Number(process.env.AB_CONNECTIONS ?? 64);
const rounds = Number(process.env.AB_ROUNDS ?? 8);
const seconds = Number(process.env.AB_SECONDS ?? 2);
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
const children = new Set();
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

const freePort = () => new Promise((resolve, reject) => {
  const s = createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});
async function start(cpu, args, env, cwd, readyPath, stdout = 'ignore') {
  const port = await freePort();
  const child = spawn('taskset', ['-c', String(cpu), process.execPath, ...args(port)], { cwd, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', stdout, 'inherit'] });
  children.add(child);
  child.stdout?.resume(); // "stdout": "pipe": drained by this process, as the bench does
  for (const t0 = Date.now(); Date.now() - t0 < 30_000; await new Promise((r) => setTimeout(r, 20))) {
    if (child.exitCode !== null) throw new Error(`${args(port).join(' ')} exited ${child.exitCode}`);
    try {
      const res = await request(`http://127.0.0.1:${port}${readyPath}`);
      await res.body.dump();
      if (res.statusCode === 200) return { child, port };
    } catch { /* not up yet */ }
  }
  throw new Error(`${args(port).join(' ')}: not ready after 30 s`);
}
/** The process's peak resident set (VmHWM), in MB. */
const peakMb = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const cpuMs = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
};

const upstream = await start(0, (port) => ['loadtest/upstream.mjs', String(port)], {}, root, '/v1/models');
const configDir = mkdtempSync(join(tmpdir(), 'switchyard-ab-'));
const base = `http://127.0.0.1:${upstream.port}/v1`;
/** The variants' config: every alias on the fake upstream, with a variant's extra params and router_settings. */
const configOf = (v, i) => {
  const extra = v.params ? `, ${v.params}` : '';
  const file = join(configDir, `ab-${i}.yaml`);
  writeFileSync(file, `model_list:\n  - model_name: bench-chat\n    params: { model: openai/bench-model, api_base: ${base}, api_key: k${extra} }\n  - model_name: bench-embed\n    params: { model: openai/bench-embed, api_base: ${base}, api_key: k${extra} }\n  - model_name: bench-paced\n    params: { model: openai/bench-model, api_base: http://127.0.0.1:${upstream.port}/paced/v1, api_key: k${extra} }\n  - model_name: bench-claude\n    params: { model: anthropic/bench-model, api_base: http://127.0.0.1:${upstream.port}/anthropic, api_key: k${extra} }\n${v.settings ? `router_settings: ${v.settings}\n` : ''}`);
  return file;
};
const gateways = [];
for (const [i, v] of variants.entries()) {
  if (v.direct) {
    // The fake upstream itself (it ignores the key and answers any model): the baseline for added latency.
    gateways.push({ v, child: upstream.child, port: upstream.port, rps: [], cpu: [], p50: [], p99: [], errors: 0 });
    continue;
  }
  const env = { GATEWAY_CONFIG: configOf(v, i), GATEWAY_API_KEY: 'ab-key', HOST: '127.0.0.1', GATEWAY_WORKERS: v.workers ?? '1', LOG_LEVEL: 'info', ...(v.env ?? {}) };
  const cwd = v.cwd ?? root;
  // A checkout from before the front was bundled (tools/bundle.mjs) has only tsc's entry.
  const main = existsSync(join(cwd, 'dist/server.js')) ? 'dist/server.js' : 'dist/src/main.js';
  const g = await start(v.cpus ?? 1, () => [...(v.flags ?? START_FLAGS), main], env, cwd, '/ready', v.stdout);
  gateways.push({ v, ...g, rps: [], cpu: [], p50: [], p99: [], errors: 0 });
}
const chat = { model: 'bench-chat', messages: [{ role: 'user', content: 'Say hello to the benchmark.' }] };
const loads = {
  chat: { path: '/v1/chat/completions', body: JSON.stringify(chat) },
  stream: { path: '/v1/chat/completions', body: JSON.stringify({ ...chat, stream: true }) },
  // The 20 chunks written one per turn of the upstream's event loop, as a provider sends tokens (the bench's bench-paced).
  paced: { path: '/v1/chat/completions', body: JSON.stringify({ ...chat, model: 'bench-paced', stream: true }) },
  embeddings: { path: '/v1/embeddings', body: JSON.stringify({ model: 'bench-embed', input: Array.from({ length: 16 }, (_, i) => `input ${i}`) }) },
  // The bench's Messages scenarios (bench.mjs, MESSAGES_SCENARIOS).
  messages: messagesLoad('bench-claude', false),
  'messages-stream': messagesLoad('bench-claude', true),
  'messages-translated': messagesLoad('bench-chat', false),
  'messages-translated-stream': messagesLoad('bench-chat', true),
};
/** A variant's load: its own "route" (two routes of one build compared round by round), else AB_ROUTE's. */
const loadOf = (v) => {
  const load = loads[v.route ?? route];
  if (load === undefined) throw new Error(`route ${v.route ?? route}: no such route`);
  return load;
};
for (const v of variants) loadOf(v);
function messagesLoad(model, stream) {
  const body = { model, max_tokens: 256, ...(stream ? { stream: true } : {}), messages: [{ role: 'user', content: stream ? 'Stream twenty chunks.' : 'Say hello to the benchmark.' }] };
  return { path: '/v1/messages', body: JSON.stringify(body), headers: { 'anthropic-version': '2023-06-01' } };
}
for (let r = 0; r < rounds; r++) {
  for (const g of gateways) {
    const before = cpuMs(g.child.pid);
    const load = loadOf(g.v);
    const res = await run({ url: `http://127.0.0.1:${g.port}`, ...load, headers: { authorization: 'Bearer ab-key', ...load.headers }, connections, durationMs: seconds * 1000, warmupMs: 300 });
    g.rps.push(res.rps);
    g.cpu.push(((cpuMs(g.child.pid) - before) * 1000) / res.total);
    g.p50.push(res.p50 * 1000);
    g.p99.push(res.p99 * 1000);
    g.errors += res.errors;
  }
}
const kept = (a) => a.slice(1).sort((x, y) => x - y);
const median = (a) => kept(a)[Math.floor(kept(a).length / 2)];
console.log(`${route} at concurrency ${connections}, ${rounds - 1} rounds of ${seconds} s kept (median, best; peak RSS over all rounds):`);
for (const g of gateways) {
  console.log(`${g.v.name.padEnd(24)} ${median(g.rps).toFixed(0).padStart(6)} req/s (best ${Math.max(...kept(g.rps)).toFixed(0)})  CPU ${median(g.cpu).toFixed(0)} µs/req (best ${Math.min(...kept(g.cpu)).toFixed(0)})  p50 ${median(g.p50).toFixed(0)} µs  p99 ${median(g.p99).toFixed(0)} µs  peak ${peakMb(g.child.pid).toFixed(0)} MB${g.errors > 0 ? `  errors ${g.errors}` : ''}`);
}
process.exit(0);
