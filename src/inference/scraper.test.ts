/**
 * The scraper on real HTTP over loopback (CONTRACT.md, Inference-aware
 * routing: Signals): the servers' own exposition text (fixtures written from
 * their docs), both vLLM KV-cache names, SGLang; garbage, a cut body, a
 * non-200, a slow and a dead endpoint, each a counted failure that leaves the
 * last good figures to age; one scrape at a time.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DeploymentStates, deploymentStateMemory } from '../../protocol/deployment-state.js';
import { MAX_SCRAPE_TIMEOUT_MS, Scraper, metricsUrl } from './scraper.js';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

type Behaviour = { kind: 'text'; text: string; status?: number } | { kind: 'cut'; text: string } | { kind: 'hang' };

interface MetricsServer {
  readonly origin: string;
  behaviour: Behaviour;
  /** GET /metrics received, and the most at once; the Host header of the last. */
  hits: number;
  host: string | undefined;
  maxConcurrent: number;
  close(): Promise<void>;
}

async function metricsServer(behaviour: Behaviour): Promise<MetricsServer> {
  let concurrent = 0;
  const server = http.createServer((req, res) => {
    if (req.url !== '/metrics' || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    fake.hits++;
    fake.host = req.headers.host;
    concurrent++;
    fake.maxConcurrent = Math.max(fake.maxConcurrent, concurrent);
    res.on('close', () => concurrent--);
    const b = fake.behaviour;
    if (b.kind === 'hang') return;
    res.writeHead(b.kind === 'text' ? (b.status ?? 200) : 200, { 'content-type': 'text/plain; version=0.0.4' });
    if (b.kind === 'text') res.end(b.text);
    else {
      // Half the body, then the connection goes: the line cut in two must not be read as a figure.
      res.write(b.text.slice(0, Math.floor(b.text.length / 2)));
      setImmediate(() => res.socket?.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: MetricsServer = {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    behaviour,
    hits: 0,
    host: undefined,
    maxConcurrent: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}

const open: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const thing of open.splice(0)) await thing.close();
});

function scraperFor(origin: string, kind: 'vllm' | 'sglang', intervalMs = 20, connectTo: string | null = null) {
  const states = new DeploymentStates(deploymentStateMemory(4, 1), 0);
  const scraper = new Scraper({ id: 'r', url: metricsUrl(`${origin}/v1`), connectTo, kind, slot: 2, intervalMs }, states);
  open.push({ close: () => scraper.stop() });
  return { states, scraper };
}

async function serving(behaviour: Behaviour): Promise<MetricsServer> {
  const server = await metricsServer(behaviour);
  open.push(server);
  return server;
}

describe('scraper', () => {
  it('the metrics are read at the api_base origin, whatever its path', () => {
    expect(metricsUrl('http://10.0.0.1:8000/v1')).toBe('http://10.0.0.1:8000/metrics');
    expect(metricsUrl('https://vllm.example/serving/v1/')).toBe('https://vllm.example/metrics');
  });

  it.each([
    ['vllm.prom', 'vllm', [3, 8, 0.4375]],
    ['vllm-old.prom', 'vllm', [12, 5, 0.9123]],
    ['vllm-data-parallel.prom', 'vllm', [4, 25, 0.6]],
    ['sglang.prom', 'sglang', [2826, 28, 0.28]],
  ] as const)('%s: the figures land in the shared slot, for every thread', async (file, kind, figures) => {
    const server = await serving({ kind: 'text', text: fixture(file) });
    // A 1 s interval, so a 1 s timeout: a loaded test host never fails the one scrape this waits for.
    const { states, scraper } = scraperFor(server.origin, kind, 1_000);
    const before = Date.now();
    const scraped = scraper.next();
    scraper.start();
    await scraped;
    expect([states.waiting(2), states.running(2), states.kvCache(2)]).toEqual(figures);
    expect(states.scrapedAt(2)).toBeGreaterThanOrEqual(before);
    expect(scraper.failures).toBe(0);
    // Its neighbour is untouched.
    expect(states.scrapedAt(1)).toBe(0);
  });

  it('a replica found by DNS is scraped at its address under the configured host name (Host kept)', async () => {
    const server = await serving({ kind: 'text', text: fixture('vllm.prom') });
    const port = new URL(server.origin).port;
    // `.invalid` never resolves (RFC 6761): only the pinned address can have reached the server.
    const { states, scraper } = scraperFor(`http://vllm.invalid:${port}`, 'vllm', 1_000, '127.0.0.1');
    const scraped = scraper.next();
    scraper.start();
    await scraped;
    expect(scraper.lastError).toBeNull();
    expect(server.host).toBe(`vllm.invalid:${port}`);
    expect(states.waiting(2)).toBe(3);
  });

  it('garbage, a cut body, a non-200 and another server kind are counted failures; the last good figures stay, aging', async () => {
    const server = await serving({ kind: 'text', text: fixture('vllm.prom') });
    const { states, scraper } = scraperFor(server.origin, 'vllm', 250);
    /** Scrapes until `done` (a loaded host may time one out on the way: that is a failure of another kind). */
    const scrapesUntil = async (done: () => boolean) => {
      for (let i = 0; i < 40 && !done(); i++) await scraper.next();
      return done();
    };
    const next = scraper.next();
    scraper.start();
    await next;
    expect(await scrapesUntil(() => states.scrapedAt(2) > 0)).toBe(true);
    const goodAt = states.scrapedAt(2);
    const bad: Array<[Behaviour, RegExp]> = [
      [{ kind: 'text', text: '<html>502 Bad Gateway</html>\n\u0000\u0001 {{{ not prometheus' }, /no waiting, running, KV-cache use figure/],
      [{ kind: 'cut', text: fixture('vllm.prom') }, /aborted|closed|socket hang up|ECONNRESET/],
      [{ kind: 'text', text: 'internal error', status: 500 }, /status 500/],
      [{ kind: 'text', text: fixture('sglang.prom') }, /no waiting, running, KV-cache use figure in the vllm metrics/],
      [{ kind: 'text', text: 'vllm:num_requests_waiting 1\nvllm:num_requests_running 2\n' }, /^no KV-cache use figure/],
    ];
    for (const [i, [behaviour, error]] of bad.entries()) {
      server.behaviour = behaviour;
      // The scrape under way may have started before the change: a later one sees the new behaviour.
      expect(await scrapesUntil(() => error.test(scraper.lastError ?? '')), `${String(error)}: last error ${scraper.lastError}`).toBe(true);
      expect(scraper.failures).toBeGreaterThanOrEqual(i + 1);
      expect(states.scrapedAt(2)).toBe(goodAt);
      expect([states.waiting(2), states.running(2), states.kvCache(2)]).toEqual([3, 8, 0.4375]);
    }
    server.behaviour = { kind: 'text', text: fixture('vllm-old.prom') };
    expect(await scrapesUntil(() => scraper.lastError === null)).toBe(true);
    expect(states.scrapedAt(2)).toBeGreaterThan(goodAt);
    expect(states.waiting(2)).toBe(12);
  });

  it('a slow endpoint: each scrape gives up at its timeout, min(interval, 1 s), and scrapes never overlap', async () => {
    const server = await serving({ kind: 'hang' });
    const intervalMs = 100;
    const { states, scraper } = scraperFor(server.origin, 'vllm', intervalMs);
    const started = performance.now();
    scraper.start();
    for (let i = 0; i < 3; i++) await scraper.next();
    const took = performance.now() - started;
    expect(scraper.failures).toBe(3);
    expect(scraper.lastError).toMatch(/no whole answer within 100 ms/);
    // Three timeouts back to back: at least 3 × 100 ms, and not much more (no scrape waited on another).
    expect(took).toBeGreaterThanOrEqual(3 * intervalMs - 5);
    expect(took).toBeLessThan(3 * intervalMs + 1_000);
    expect(server.maxConcurrent).toBe(1);
    expect(states.scrapedAt(2)).toBe(0);
    expect(MAX_SCRAPE_TIMEOUT_MS).toBe(1_000);
  });

  it('a dead endpoint (connection refused) fails at once and is tried again every interval', async () => {
    const server = await metricsServer({ kind: 'text', text: '' });
    const origin = server.origin;
    await server.close();
    const { states, scraper } = scraperFor(origin, 'sglang', 20);
    scraper.start();
    for (let i = 0; i < 3; i++) await scraper.next();
    expect(scraper.failures).toBe(3);
    expect(scraper.lastError).toMatch(/ECONNREFUSED/);
    expect(states.scrapedAt(2)).toBe(0);
  });

  it('stop ends the loop: no further scrape, nothing written after it', async () => {
    const server = await serving({ kind: 'text', text: fixture('vllm.prom') });
    const { scraper } = scraperFor(server.origin, 'vllm', 10);
    scraper.start();
    await scraper.next();
    scraper.stop();
    const hits = server.hits;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(server.hits).toBe(hits);
  });
});
