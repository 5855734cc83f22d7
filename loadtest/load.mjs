// A closed-loop HTTP load generator with per-request timing in microseconds
// (autocannon reports whole milliseconds, too coarse for added latency).
//   run({ url, path, method, body, headers, connections, durationMs, warmupMs, intervalMs }) → stats
//     closed loop: each connection sends its next request when the last one is read to the end;
//     intervalMs > 0 paces each connection instead (a probe or a scraper, not a load).
//   hold({ url, path, body, headers, streams, ... }) → stats
//     opens `streams` slow SSE streams at once (one connection each) and samples a callback
//     (e.g. the gateway's VmRSS) while every one of them is open.
import { setMaxListeners } from 'node:events';
import { Pool } from 'undici';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const q = (arr, p) => (arr.length ? arr[Math.min(arr.length - 1, Math.floor(arr.length * p))] : NaN);

export async function run({ url, path, method = 'POST', body, headers = {}, connections = 1, durationMs = 5000, warmupMs = 500, intervalMs = 0 }) {
  const pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const latencies = [];
  const ttfb = [];
  let errors = 0;
  let total = 0; // every finished request, warm-up included (for CPU per request)
  let bytes = 0;
  let recording = false;
  const stopAt = performance.now() + warmupMs + durationMs;
  const reqHeaders = body === undefined ? { ...headers } : { 'content-type': 'application/json', ...headers };
  const payload = body === undefined ? undefined : Buffer.from(body);
  // One request on undici's dispatcher with a bare handler: no Readable and no async iterator per
  // request, which cost the load core (shared with the upstream) about a fifth of the direct path's
  // throughput. Resolves when the answer has been read to its end, or failed.
  const once = () => new Promise((resolve) => {
    const started = performance.now();
    let first = 0;
    let status = 0;
    pool.dispatch({ path, method, headers: reqHeaders, body: payload }, {
      onRequestStart() {},
      onResponseStart(_controller, statusCode) { status = statusCode; },
      onResponseData(_controller, chunk) {
        if (first === 0) first = performance.now();
        bytes += chunk.length;
      },
      onResponseEnd() {
        const end = performance.now();
        total++;
        if (status !== 200) errors++;
        if (recording) {
          latencies.push(end - started);
          ttfb.push((first || end) - started);
        }
        resolve(started);
      },
      onResponseError() {
        total++;
        errors++;
        resolve(started);
      },
    });
  });
  async function loop() {
    while (performance.now() < stopAt) {
      const started = await once();
      if (intervalMs > 0) {
        const wait = started + intervalMs - performance.now();
        if (wait > 0) await sleep(Math.min(wait, stopAt - performance.now()));
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
  return {
    requests: latencies.length,
    total,
    rps: latencies.length / elapsed,
    p50: q(latencies, 0.5),
    p99: q(latencies, 0.99),
    ttfbP50: q(ttfb, 0.5),
    ttfbP99: q(ttfb, 0.99),
    errors,
    bytes,
  };
}

/**
 * Opens `streams` SSE streams (one connection each, `batch` new ones every `batchEveryMs`),
 * reads each to the end and checks it: 200, at least `minEvents` events, ending in `data: [DONE]`.
 * While all of them are open (first byte read, end not yet read) `sample()` is called every
 * `sampleEveryMs`; the largest value is returned. Whatever is still open at `deadlineMs` is aborted
 * and counted as an error, so a hold never runs longer than that.
 */
export async function hold({ url, path, body, headers = {}, streams, minEvents = 21, batch = 250, batchEveryMs = 50, deadlineMs = 60_000, sample = () => NaN, sampleEveryMs = 200 }) {
  const pool = new Pool(url, { connections: streams, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: deadlineMs, bodyTimeout: deadlineMs, connect: { timeout: deadlineMs } });
  const reqHeaders = { 'content-type': 'application/json', ...headers };
  const abort = new AbortController();
  setMaxListeners(0, abort.signal); // one signal for every stream
  const deadline = setTimeout(() => abort.abort(), deadlineMs);
  const kinds = {};
  const fail = (kind) => { kinds[kind] = (kinds[kind] ?? 0) + 1; };
  let open = 0;
  let opened = 0;
  let finished = 0;
  let maxOpen = 0;
  let allOpenAt = 0;
  let firstEndAt = 0;
  const t0 = performance.now();
  let whileAllOpen = -Infinity;
  let samplesAllOpen = 0;
  let anyMax = -Infinity;
  const sampler = setInterval(() => {
    const v = sample();
    if (v > anyMax) anyMax = v;
    if (open === streams) {
      samplesAllOpen++;
      if (v > whileAllOpen) whileAllOpen = v;
    }
  }, sampleEveryMs);
  async function one() {
    let isOpen = false;
    try {
      const res = await pool.request({ path, method: 'POST', headers: reqHeaders, body, signal: abort.signal });
      if (res.statusCode !== 200) {
        fail(`status ${res.statusCode}`);
        await res.body.dump();
        return;
      }
      let events = 0;
      let last = '';
      let tail = '';
      for await (const buf of res.body) {
        if (!isOpen) {
          isOpen = true;
          open++;
          opened++;
          if (open > maxOpen) maxOpen = open;
          if (opened === streams && open === streams) allOpenAt = performance.now();
        }
        const s = buf.toString('latin1');
        if (last === '\n' && s[0] === '\n') events++;
        for (let i = s.indexOf('\n\n'); i !== -1; i = s.indexOf('\n\n', i + 2)) events++;
        last = s[s.length - 1];
        tail = (tail + s).slice(-64);
      }
      if (events < minEvents) fail(`${events} events (< ${minEvents})`);
      else if (!tail.endsWith('data: [DONE]\n\n')) fail('no [DONE] at the end');
    } catch (err) {
      fail(abort.signal.aborted ? 'deadline' : (err?.code ?? err?.name ?? 'error'));
    } finally {
      if (isOpen) {
        open--;
        if (firstEndAt === 0) firstEndAt = performance.now();
      }
      finished++;
    }
  }
  const all = [];
  for (let started = 0; started < streams; started += batch) {
    for (let i = started; i < Math.min(streams, started + batch); i++) all.push(one());
    if (started + batch < streams) await sleep(batchEveryMs);
  }
  await Promise.all(all);
  clearInterval(sampler);
  clearTimeout(deadline);
  await pool.destroy();
  const errors = Object.values(kinds).reduce((a, b) => a + b, 0);
  return {
    streams,
    finished,
    errors,
    kinds,
    maxOpen,
    allOpenMs: allOpenAt ? allOpenAt - t0 : NaN, // time until every stream had its first byte
    heldMs: allOpenAt && firstEndAt > allOpenAt ? firstEndAt - allOpenAt : 0, // all open at once for this long
    whileAllOpen: samplesAllOpen ? whileAllOpen : NaN,
    samplesAllOpen,
    anyMax,
    ms: performance.now() - t0,
  };
}
