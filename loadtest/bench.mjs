// npm run bench: the same scenarios straight to a fake upstream and through
// Switchyard, in one run, repeated; prints ratios and writes RESULTS.md.
// Pinning: the gateway gets CPU 1; this load generator and the upstream share CPU 0.
// Env: BENCH_SECONDS (per measurement, default 3), BENCH_REPEATS (default 3).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from './load.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const repeats = Number(process.env.BENCH_REPEATS ?? 3);
const KEY = 'bench-key';
const hasTaskset = (() => { try { execFileSync('taskset', ['-V'], { stdio: 'ignore' }); return true; } catch { return false; } })();
const pinned = (cpu, cmd, args) => (hasTaskset ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args]);

function start(cpu, args, env, marker) {
  const [cmd, argv] = pinned(cpu, process.execPath, args);
  const child = spawn(cmd, argv, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d) => {
      out += d;
      const m = marker.exec(out);
      if (!m) return;
      // From here on only drain the output: holding and re-scanning the access log would load the
      // load generator's core (a quadratic scan per chunk), which skews every figure.
      child.stdout.off('data', onData);
      child.stdout.resume();
      out = '';
      resolve({ child, port: Number(m[1]) });
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${out.slice(-500)}`)));
  });
}

const chatBody = JSON.stringify({ model: 'bench-chat', messages: [{ role: 'user', content: 'Say hello to the benchmark.' }] });
const streamBody = JSON.stringify({ model: 'bench-chat', stream: true, messages: [{ role: 'user', content: 'Stream twenty chunks.' }] });
const embedBody = JSON.stringify({ model: 'bench-embed', input: Array.from({ length: 16 }, (_, i) => `input number ${i} for the embeddings benchmark`) });

const scenarios = [
  { name: 'chat, concurrency 1', path: '/v1/chat/completions', body: chatBody, connections: 1 },
  { name: 'chat, concurrency 64', path: '/v1/chat/completions', body: chatBody, connections: 64 },
  { name: 'stream of 20 chunks, concurrency 64', path: '/v1/chat/completions', body: streamBody, connections: 64 },
  { name: 'embeddings 16x1536, concurrency 32', path: '/v1/embeddings', body: embedBody, connections: 32 },
];

const upstream = await start(0, ['loadtest/upstream.mjs', '0'], {}, /listening (\d+)/);
const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
const config = join(dir, 'bench.yaml');
writeFileSync(config, `model_list:
  - model_name: bench-chat
    params: { model: openai/bench-model, api_base: http://127.0.0.1:${upstream.port}/v1, api_key: upstream-key }
  - model_name: bench-embed
    params: { model: openai/bench-embed, api_base: http://127.0.0.1:${upstream.port}/v1, api_key: upstream-key }
`);
const gatewayEnv = (workers) => ({ GATEWAY_CONFIG: config, GATEWAY_API_KEY: KEY, PORT: '0', HOST: '127.0.0.1', GATEWAY_WORKERS: workers, LOG_LEVEL: 'info' });
// Two gateways on the same core, measured one at a time: one worker thread, and inline (GATEWAY_WORKERS=0).
const gateway = await start(1, ['dist/src/main.js'], gatewayEnv('1'), /"port":(\d+)/);
const inline = await start(1, ['dist/src/main.js'], gatewayEnv('0'), /"port":(\d+)/);

const targets = {
  direct: { url: `http://127.0.0.1:${upstream.port}`, headers: { authorization: 'Bearer upstream-key' }, rewrite: (b) => b.replace('"bench-chat"', '"bench-model"').replace('"bench-embed"', '"bench-embed"') },
  switchyard: { url: `http://127.0.0.1:${gateway.port}`, headers: { authorization: `Bearer ${KEY}` }, rewrite: (b) => b },
  inline: { url: `http://127.0.0.1:${inline.port}`, headers: { authorization: `Bearer ${KEY}` }, rewrite: (b) => b },
};

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '—');
const rows = [];
try {
  for (const s of scenarios) {
    const results = { direct: [], switchyard: [], inline: [] };
    for (let i = 0; i < repeats; i++) {
      for (const [name, t] of Object.entries(targets)) {
        results[name].push(await run({ url: t.url, path: s.path, body: t.rewrite(s.body), headers: t.headers, connections: s.connections, durationMs: seconds * 1000 }));
      }
    }
    const d = results.direct;
    for (const [mode, g] of [['1 worker', results.switchyard], ['inline', results.inline]]) {
      const ratio = g.map((r, i) => r.rps / d[i].rps);
      const row = {
        scenario: s.name,
        mode,
        directRps: median(d.map((r) => r.rps)),
        gatewayRps: median(g.map((r) => r.rps)),
        ratioMin: Math.min(...ratio), ratioMed: median(ratio), ratioMax: Math.max(...ratio),
        addedP50: median(g.map((r, i) => r.p50 - d[i].p50)),
        addedP99: median(g.map((r, i) => r.p99 - d[i].p99)),
        addedTtfbP50: median(g.map((r, i) => r.ttfbP50 - d[i].ttfbP50)),
        errors: g.reduce((n, r) => n + r.errors, 0) + d.reduce((n, r) => n + r.errors, 0),
      };
      rows.push(row);
      console.log(`${row.scenario} [${mode}]: direct ${fmt(row.directRps)} req/s, switchyard ${fmt(row.gatewayRps)} req/s, ratio ${fmt(row.ratioMin, 2)}/${fmt(row.ratioMed, 2)}/${fmt(row.ratioMax, 2)} (min/med/max), added p50 ${fmt(row.addedP50 * 1000)} µs, p99 ${fmt(row.addedP99 * 1000)} µs, ttfb p50 ${fmt(row.addedTtfbP50 * 1000)} µs, errors ${row.errors}`);
    }
  }
} finally {
  gateway.child.kill('SIGKILL');
  inline.child.kill('SIGKILL');
  upstream.child.kill('SIGTERM');
}

const table = [
  '| scenario | gateway workers | direct req/s | Switchyard req/s | ratio min/med/max | added p50 | added p99 | added TTFB p50 | errors |',
  '|---|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.scenario} | ${r.mode} | ${fmt(r.directRps)} | ${fmt(r.gatewayRps)} | ${fmt(r.ratioMin, 2)} / ${fmt(r.ratioMed, 2)} / ${fmt(r.ratioMax, 2)} | ${fmt(r.addedP50 * 1000)} µs | ${fmt(r.addedP99 * 1000)} µs | ${fmt(r.addedTtfbP50 * 1000)} µs | ${r.errors} |`),
].join('\n');
const results = `# Load-test results

Latest \`npm run bench\` (${new Date().toISOString()}), ${seconds} s per measurement, ${repeats} repeats, medians;
ratio = Switchyard req/s ÷ direct req/s in the same repeat. Machine: ${cpus().length}× ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}.
Pinning: ${hasTaskset ? 'gateway on CPU 1; load generator and fake upstream (uWebSockets.js) on CPU 0' : 'none (taskset missing)'}; two gateways, GATEWAY_WORKERS=1 and GATEWAY_WORKERS=0 (inline), both on CPU 1 and measured in turn; LOG_LEVEL=info (access logs on).
Command: \`npm run bench\` (= \`taskset -c 0 node loadtest/bench.mjs\`).

${table}
`;
writeFileSync(join(root, 'loadtest', 'RESULTS.md'), results);
console.log('\nwrote loadtest/RESULTS.md');
process.exit(0);
