// A closed-loop HTTP load generator with per-request timing in microseconds
// (autocannon reports whole milliseconds, too coarse for added latency).
// run({ url, path, body, headers, connections, durationMs, stream }) → stats
import { Pool } from 'undici';

export async function run({ url, path, method = 'POST', body, headers = {}, connections = 1, durationMs = 5000, warmupMs = 500 }) {
  const pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const latencies = [];
  const ttfb = [];
  let errors = 0;
  let bytes = 0;
  let recording = false;
  const stopAt = performance.now() + warmupMs + durationMs;
  const reqHeaders = { 'content-type': 'application/json', ...headers };
  async function loop() {
    while (performance.now() < stopAt) {
      const started = performance.now();
      try {
        const res = await pool.request({ path, method, headers: reqHeaders, body });
        let first = 0;
        for await (const chunk of res.body) {
          if (first === 0) first = performance.now();
          bytes += chunk.length;
        }
        const end = performance.now();
        if (res.statusCode !== 200) errors++;
        if (recording) {
          latencies.push(end - started);
          ttfb.push((first || end) - started);
        }
      } catch {
        errors++;
      }
    }
  }
  setTimeout(() => { recording = true; }, warmupMs).unref();
  const t0 = performance.now() + warmupMs;
  await Promise.all(Array.from({ length: connections }, loop));
  const elapsed = (performance.now() - t0) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  ttfb.sort((a, b) => a - b);
  const q = (arr, p) => (arr.length ? arr[Math.min(arr.length - 1, Math.floor(arr.length * p))] : NaN);
  return {
    requests: latencies.length,
    rps: latencies.length / elapsed,
    p50: q(latencies, 0.5),
    p99: q(latencies, 0.99),
    ttfbP50: q(ttfb, 0.5),
    errors,
    bytes,
  };
}
