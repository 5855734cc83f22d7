/**
 * Resilience, "clients" (stress part): 2,000 idle keep-alive connections
 * against the real gateway (uWS front, real worker threads). Moved out of
 * test/clients.test.ts because it waits for uWS's idle timeout (~12 s);
 * it runs with `npm run test:stress` (vitest.stress.config.ts), not `npm test`.
 * Same gateway setup and after-each checks as test/clients.test.ts.
 * Results and figures: docs/RESILIENCE.md.
 */
import http from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { MiB, percentile, useClientGateway } from '../support/client-gateway.js';
import { expectNoKeyLeak } from '../support/gateway.js';
import { UWS_IDLE_CLOSE_MS } from '../support/raw-http.js';
import { expectLive } from '../support/requests.js';
import { sleep, until } from '../support/waits.js';

const { gw, timedChat } = useClientGateway();

// ───────────────────────── many idle connections ─────────────────────────

describe('2,000 idle keep-alive connections', () => {
  it('traffic on another connection keeps its latency, RSS stays bounded, and the idle ones are closed by the idle timeout', async () => {
    const COUNT = 2000;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    // Baseline: 100 sequential chats on one kept-alive connection.
    for (let i = 0; i < 10; i++) await timedChat(agent);
    const baseline: number[] = [];
    for (let i = 0; i < 100; i++) baseline.push(await timedChat(agent));
    const rssBefore = process.memoryUsage.rss();

    // Open COUNT connections in batches; half send one keep-alive request and read its answer, half only connect.
    const sockets: net.Socket[] = [];
    const closedAt = new Map<net.Socket, number>();
    const answered = new Set<net.Socket>();
    const t0 = performance.now();
    for (let batch = 0; batch < COUNT; batch += 200) {
      await Promise.all(
        Array.from({ length: 200 }, (_, j) =>
          new Promise<void>((resolve, reject) => {
            const n = batch + j;
            const s = net.connect(gw.port, '127.0.0.1');
            s.setTimeout(0);
            s.on('error', () => undefined);
            s.on('close', () => closedAt.set(s, performance.now()));
            s.once('connect', () => {
              sockets.push(s);
              if (n % 2 === 1) {
                resolve();
                return;
              }
              let out = '';
              s.on('data', (d: Buffer) => {
                out += d.toString('latin1');
                if (out.includes('"status":"ok"')) {
                  answered.add(s);
                  resolve();
                }
              });
              s.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n');
            });
            s.once('error', reject);
          }),
        ),
      );
    }
    const openedMs = performance.now() - t0;
    expect(sockets).toHaveLength(COUNT);
    expect(answered.size).toBe(COUNT / 2);
    // Let the gateway settle, then measure traffic on the kept-alive connection while all are held (pacing a
    // measurement: no event says the host is quiet again).
    await sleep(200);
    const loaded: number[] = [];
    for (let i = 0; i < 100; i++) loaded.push(await timedChat(agent));
    const openDuringLoad = sockets.filter((s) => !closedAt.has(s)).length;
    const rssHeld = process.memoryUsage.rss();
    // A burst of 50 parallel chats on fresh connections also succeeds.
    const burst = await Promise.all(Array.from({ length: 50 }, () => timedChat()));
    await expectLive(gw, 'with the connections held', 1000);

    // uWS's idle timeout (10 s, checked on a 4 s tick) closes the idle ones.
    const idleFrom = performance.now();
    // Their last activity was before idleFrom, so all are closed by UWS_IDLE_CLOSE_MS.max after it.
    await until(() => closedAt.size === COUNT, `all ${COUNT} idle connections closed by the server (closed so far: ${closedAt.size})`, UWS_IDLE_CLOSE_MS.max);
    const closeTimes = [...closedAt.values()].map((t) => (t - idleFrom) / 1000);
    const rssAfter = process.memoryUsage.rss();
    agent.destroy();

    const fmt = (xs: number[]) => `p50 ${percentile(xs, 50).toFixed(2)} ms, p99 ${percentile(xs, 99).toFixed(2)} ms`;
    console.info(
      `[figures] ${COUNT} idle connections: opened in ${openedMs.toFixed(0)} ms, ${openDuringLoad} held during the measurement; chat latency before ${fmt(baseline)}, while held ${fmt(loaded)}; burst of 50 on fresh connections max ${Math.max(...burst).toFixed(1)} ms; ` +
        `RSS (test process: gateway + clients) before ${(rssBefore / MiB).toFixed(0)} MiB, with ${COUNT} held ${(rssHeld / MiB).toFixed(0)} MiB (+${((rssHeld - rssBefore) / MiB).toFixed(1)} MiB), after they closed ${(rssAfter / MiB).toFixed(0)} MiB; ` +
        `idle connections closed ${Math.min(...closeTimes).toFixed(1)}–${Math.max(...closeTimes).toFixed(1)} s after the last activity`,
    );
    expect(openDuringLoad).toBe(COUNT);
    expect(percentile(loaded, 50)).toBeLessThan(Math.max(10, 3 * percentile(baseline, 50)));
    expect(percentile(loaded, 99)).toBeLessThan(Math.max(50, 5 * percentile(baseline, 99)));
    expect(Math.max(...burst)).toBeLessThan(2000);
    expect(rssHeld - rssBefore).toBeLessThan(100 * MiB);
    expect(Math.max(...closeTimes)).toBeLessThan(15);
    for (const s of sockets) s.destroy();
  }, 45_000);
});

// ───────────────────────── after the run ─────────────────────────

describe('after this file\'s run', () => {
  it('neither key appears (raw, URL-encoded, base64, hex) in any log line, /metrics, /status, /status/models or the probes', async () => {
    await expectNoKeyLeak(gw);
  });
});
