// Renders the Grafana dashboard (deploy/grafana/switchyard.json) from a local run, as Grafana would
// show it, into docs/dashboard.svg. Grafana and Prometheus are not needed: the built gateway
// (npm start's flags) runs in front of the bench upstream (loadtest/upstream.mjs) on 127.0.0.1,
// loadtest/load.mjs sends a bounded mix of traffic for LOAD_SECONDS, /metrics is scraped every
// SCRAPE_SECONDS into memory (tools/dashboard/evaluate.mjs's SeriesStore, with the instance and job
// labels Prometheus would add), every panel's queries are evaluated at every scrape with Grafana's
// variables expanded (alias: All, $__rate_interval for that scrape interval), and the panels are
// drawn on Grafana's grid (tools/dashboard/svg.mjs).
//
// Usage: node tools/render-dashboard.mjs [out.svg]   (default docs/dashboard.svg; ~75 s)
//   LOAD_SECONDS (default 60), SCRAPE_SECONDS (default 1).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../loadtest/load.mjs';
import { START_ARGS } from '../loadtest/start-args.mjs';
import { drawDashboard } from './dashboard/svg.mjs';
import { evaluate, labelKey, SeriesStore } from './dashboard/evaluate.mjs';
import { allValues, expand, panelQueries, parsePromql, rangeVariables, readDashboard, scrapeSamples } from './dashboard/promql.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = process.argv[2] ?? join(ROOT, 'docs/dashboard.svg');
const LOAD_SECONDS = Number(process.env.LOAD_SECONDS ?? 60);
const SCRAPE_SECONDS = Number(process.env.SCRAPE_SECONDS ?? 1);
const KEY = 'render-dashboard-key';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ───────────────────────── the gateway and its upstream ─────────────────────────

const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Spawns `node args` in the repository and resolves with the first stdout line that `ready` matches. */
function start(name, args, env, ready) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let tail = '';
  child.stderr.on('data', (d) => (tail = (tail + d).slice(-2000)));
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 30 s\n${tail}`)), 30_000);
    child.once('exit', (code) => reject(new Error(`${name} exited ${code}\n${tail}`)));
    child.stdout.on('data', (d) => {
      if (buffered === null) return; // started: the rest (the access log) is drained and dropped
      buffered += d;
      for (const line of buffered.split('\n')) {
        const found = ready(line);
        if (found === undefined) continue;
        clearTimeout(timer);
        buffered = null;
        resolve({ child, ...found });
        return;
      }
    });
  });
}

async function stop({ child }) {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

const built = spawnSync(process.execPath, ['tools/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);

const upstream = await start('upstream', ['loadtest/upstream.mjs', '0'], { SLOW_CHUNKS: '10', SLOW_INTERVAL_MS: '200' }, (line) => {
  const m = /^listening (\d+)$/.exec(line.trim());
  return m ? { port: Number(m[1]) } : undefined;
});
const base = `http://127.0.0.1:${upstream.port}`;
const dir = mkdtempSync(join(tmpdir(), 'switchyard-dashboard-'));
const deployment = (alias, path, id) => `  - model_name: ${alias}\n    params: { model: openai/bench-model, api_base: ${base}${path}/v1, api_key: upstream-key }\n${id ? `    model_info: { id: ${id} }\n` : ''}`;
// chat and embed answer; a stream alias with slow streams; a pair whose second deployment fails
// every call (retries, cooldowns, half-open trials); an alias whose only deployment fails and falls
// back to chat (fallbacks); and one that fails with nowhere to go (5xx, upstream errors).
writeFileSync(
  join(dir, 'config.yaml'),
  `model_list:\n${[
    deployment('chat', ''),
    deployment('embed', ''),
    deployment('slow', '/slow'),
    deployment('pair', '', 'pair-ok'),
    deployment('pair', '/fail', 'pair-failing'),
    deployment('flaky', '/fail', 'flaky-0'),
    deployment('broken', '/fail', 'broken-0'),
  ].join('')}router_settings: { routing_strategy: simple-shuffle, allowed_fails: 3, cooldown_time: 5, num_retries: 1, fallbacks: [{ flaky: [chat] }] }\n`,
);
const gateway = await start(
  'gateway',
  START_ARGS,
  { GATEWAY_CONFIG: join(dir, 'config.yaml'), GATEWAY_API_KEY: KEY, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', NODE_ENV: 'production' },
  (line) => {
    try {
      const log = JSON.parse(line);
      return log.event === 'listening' ? { port: log.port, workers: log.workers } : undefined;
    } catch {
      return undefined;
    }
  },
);
const url = `http://127.0.0.1:${gateway.port}`;

// ───────────────────────── scrapes ─────────────────────────

const store = new SeriesStore();
const times = [];
let scraping = true;
const scraper = (async () => {
  while (scraping) {
    const started = Date.now();
    const res = await fetch(`${url}/metrics`);
    const t = Date.now() / 1000;
    store.add(t, await scrapeSamples(await res.text()), { instance: `127.0.0.1:${gateway.port}`, job: 'switchyard' });
    times.push(t);
    // The readiness probe as the kubelet sends it (every 5 s), so that the health panel has runs.
    if (times.length % Math.max(1, Math.round(5 / SCRAPE_SECONDS)) === 1) await (await fetch(`${url}/ready`)).arrayBuffer();
    await sleep(Math.max(0, SCRAPE_SECONDS * 1000 - (Date.now() - started)));
  }
})();

// ───────────────────────── load ─────────────────────────

const auth = { authorization: `Bearer ${KEY}` };
const chatBody = (model, extra = {}) => JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello.' }], ...extra });
/** A phase of the load: `connections` paced every `intervalMs` from `from` to `to` (fractions of the run). */
const phase = async (name, { from = 0, to = 1, connections = 1, intervalMs = 0, path = '/v1/chat/completions', body }) => {
  await sleep(from * LOAD_SECONDS * 1000);
  const stats = await run({ url, path, body, headers: auth, connections, intervalMs, warmupMs: 0, durationMs: (to - from) * LOAD_SECONDS * 1000 });
  return { name, requests: stats.total, errors: stats.errors };
};
await sleep(3000); // a few scrapes before the load starts
const loadStarted = Date.now();
// The picture ends just before the load does: the stats show their values under load.
setTimeout(() => (scraping = false), LOAD_SECONDS * 1000 - 500);
const phases = await Promise.all([
  phase('chat', { connections: 4, intervalMs: 25, body: chatBody('chat') }),
  phase('streams', { connections: 2, intervalMs: 50, body: chatBody('chat', { stream: true, stream_options: { include_usage: true } }) }),
  phase('embeddings', { from: 0.15, intervalMs: 100, path: '/v1/embeddings', body: JSON.stringify({ model: 'embed', input: 'hello' }) }),
  phase('slow streams', { from: 0.25, connections: 12, body: chatBody('slow', { stream: true }) }),
  phase('pair (one deployment failing)', { connections: 2, intervalMs: 100, body: chatBody('pair') }),
  phase('flaky (falls back to chat)', { from: 0.3, to: 0.7, intervalMs: 200, body: chatBody('flaky') }),
  phase('broken (fails)', { from: 0.5, to: 0.65, intervalMs: 250, body: chatBody('broken') }),
]);
const loadSeconds = (Date.now() - loadStarted) / 1000;
await scraper;
await stop(gateway);
await stop(upstream);
rmSync(dir, { recursive: true, force: true });

// ───────────────────────── evaluate and draw ─────────────────────────

const dashboard = readDashboard();
const ranges = rangeVariables(SCRAPE_SECONDS);
const values = { ...allValues(dashboard), ...ranges };
const window = Number(ranges.__rate_interval.replace('s', ''));
// From the first time a rate has a full window (the load started 3 s after the first scrape).
const shown = times.filter((t) => t >= times[0] + window);
const data = new Map();
for (const { panel, expr, legendFormat } of panelQueries(dashboard)) {
  const tree = parsePromql(expand(expr, values));
  const byKey = new Map();
  for (const t of shown) {
    const result = evaluate(tree, store, t);
    for (const { labels, value } of 'scalar' in result ? [{ labels: {}, value: result.scalar }] : result.vector) {
      const key = labelKey(labels);
      if (!byKey.has(key)) byKey.set(key, { name: legend(legendFormat, labels), points: [] });
      byKey.get(key).points.push([t, value]);
    }
  }
  data.set(panel.id, [...(data.get(panel.id) ?? []), ...[...byKey.values()].sort((a, b) => a.name.localeCompare(b.name))]);
}

/** Grafana's legend: `{{label}}` replaced by the series' value of it; the labels themselves when there is no format. */
function legend(format, labels) {
  if (!format) return `{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(', ')}}`;
  return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, name) => labels[name] ?? '');
}

const caption = `rendered by tools/render-dashboard.mjs from a ${Math.round(loadSeconds)} s local run of the bench upstream (${gateway.workers} worker${gateway.workers === 1 ? '' : 's'}), scraped every ${SCRAPE_SECONDS} s`;
writeFileSync(OUT, drawDashboard(dashboard, data, { timeRange: [shown[0], shown[shown.length - 1]], variables: { 'Data source': 'Prometheus', Alias: 'All' }, caption }));
for (const p of phases) console.log(`${p.name}: ${p.requests} requests, ${p.errors} not 200`);
const empty = dashboard.panels.filter((p) => p.type !== 'row' && !(data.get(p.id) ?? []).some((s) => s.points.some(([, v]) => Number.isFinite(v))));
console.log(`${times.length} scrapes over ${Math.round(times[times.length - 1] - times[0])} s; ${data.size} panels drawn to ${OUT}${empty.length ? `; no data: ${empty.map((p) => p.title).join(', ')}` : ''}`);
