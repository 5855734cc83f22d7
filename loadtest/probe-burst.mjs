// 200 concurrent GET /health against the real gateway (dist/, 2 workers, log level warn)
// with the test harness's default config plus one fake upstream origin.
// Usage: npm run build && node loadtest/probe-burst.mjs [rounds=5] [concurrency=200]
import http from 'node:http';
import { Writable } from 'node:stream';
const ROOT = new URL('../dist/src', import.meta.url).href;
const { parseConfig } = await import(`${ROOT}/config/load.js`);
const { startGateway } = await import(`${ROOT}/gateway.js`);
const { createLogger } = await import(`${ROOT}/logging.js`);

const rounds = Number(process.argv[2] ?? 5);
const N = Number(process.argv[3] ?? 200);

let modelsGets = 0;
const upstream = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/v1/models') {
    modelsGets++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }] }));
  } else { res.writeHead(404); res.end(); }
});
await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${upstream.address().port}/v1`;
const KEY = 'sk-upstream-secret-abcdef';
// = test/support/gateway.ts defaultYaml(upstream)
const yaml = `
model_list:
  - model_name: up-chat
    params: { model: openai/fake-model, api_base: ${url}, api_key: ${KEY} }
  - model_name: up-embed
    params: { model: openai/fake-embed, api_base: ${url}, api_key: ${KEY} }
  - model_name: mock-chat
    params: { model: mock/chat-small, mock_stream_chunks: 5 }
  - model_name: mock-embed
    params: { model: mock/embed-small, mock_embedding_dimensions: 8 }
route_rules:
  - provider: openai
    models: ["gpt-*", "o3*"]
    params: { api_base: ${url}, api_key: ${KEY} }
`;
const config = parseConfig(yaml, 'bench.yaml', { GATEWAY_API_KEY: 'gw', HOST: '127.0.0.1', PORT: '0', GATEWAY_WORKERS: '2', LOG_LEVEL: 'warn' });
const sink = new Writable({ write(_c, _e, done) { done(); } });
const gw = await startGateway(config, createLogger('warn', sink));

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
async function burst(label) {
  const before = modelsGets;
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: N }, async () => {
    const t = performance.now();
    const res = await fetch(`${gw.url}/health`);
    const body = await res.json();
    return { ms: performance.now() - t, status: res.status, cached: body.age_ms !== undefined, stale: body.stale === true };
  }));
  const wall = performance.now() - started;
  const ms = results.map((r) => r.ms).sort((a, b) => a - b);
  const codes = {};
  for (const r of results) codes[r.status] = (codes[r.status] ?? 0) + 1;
  console.log(`${label.padEnd(26)} p50=${pct(ms, 50).toFixed(1)}ms p99=${pct(ms, 99).toFixed(1)}ms max=${ms.at(-1).toFixed(1)}ms wall=${wall.toFixed(0)}ms status=${JSON.stringify(codes)} cached=${results.filter((r) => r.cached).length} stale=${results.filter((r) => r.stale).length} upstreamGET/models=${modelsGets - before}`);
  return ms;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

console.log(`node ${process.version}, ${N} concurrent GET /health per burst, TTL ${config.health.cacheTtlMs} ms, budget ${config.health.probeBudgetMs} ms, workers ${config.workers}`);
await burst('cold (fresh gateway)');
const all = { miss: [], hit: [] };
for (let i = 1; i <= rounds; i++) {
  await sleep(1_100); // past the 1 s TTL: the burst triggers one new run
  all.miss.push(...(await burst(`after TTL expiry #${i}`)));
  all.hit.push(...(await burst(`within TTL (cached) #${i}`)));
}
for (const [k, v] of Object.entries(all)) {
  v.sort((a, b) => a - b);
  console.log(`aggregate ${k === 'miss' ? 'TTL-expired' : 'cached'} (${v.length} requests): p50=${pct(v, 50).toFixed(1)}ms p99=${pct(v, 99).toFixed(1)}ms`);
}
await gw.close();
upstream.closeAllConnections();
upstream.close();
