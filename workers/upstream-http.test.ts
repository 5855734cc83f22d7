import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../test/support/waits.js';
import { forgetAddresses, upstreamExchange, UpstreamExchange } from './upstream-http.js';

// undici's coarse timers (a ~0.5 s clock), the module instance the worker's Pool uses: its parser
// and its connector call `setFastTimeout` on this object, so a wrapper sees every one armed.
const undiciTimers = createRequire(import.meta.url)('undici/lib/util/timers.js') as { setFastTimeout: (...args: unknown[]) => unknown };
const armedBy: string[] = [];
const setFastTimeout = undiciTimers.setFastTimeout;
undiciTimers.setFastTimeout = function (this: unknown, ...args: unknown[]) {
  armedBy.push(/at (?:Object\.|Parser\.)?(\w+) /.exec(new Error().stack?.split('\n')[2] ?? '')?.[1] ?? 'unknown');
  return setFastTimeout.apply(this, args);
};

const quiet = { headersArrived() {}, chunkArrived() {} };
let server: Server;
let apiBase: string;
const hosts: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    hosts.push(req.headers.host ?? '');
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function exchangeOnce(): Promise<string> {
  const exchange = new UpstreamExchange(1024, quiet);
  upstreamExchange(apiBase, null, 5_000, 'POST', '/chat/completions', '{}', { 'content-type': 'application/json' }, exchange);
  expect((await exchange.head).status).toBe(200);
  return Buffer.concat(await exchange.body).toString();
}

describe('upstreamExchange', () => {
  it("arms none of undici's coarse timers per request: the call's deadlines are its own (workers/deadlines.ts)", async () => {
    for (let i = 0; i < 4; i++) expect(await exchangeOnce()).toBe('{"ok":true}');
    // Connecting arms one (undici's connect timeout), which shows the wrapper sees them. Headers and
    // body timeouts passed to dispatch would arm two more per request, from the parser's setTimeout.
    expect(armedBy.length).toBeGreaterThan(0);
    expect(armedBy.filter((caller) => caller !== 'setupConnectTimeout')).toEqual([]);
  });
});

describe('a replica pinned to its address (replicas: dns)', () => {
  it('connects to the address and keeps the name as Host; its pool closes once no replica has the address', async () => {
    const port = new URL(apiBase).port;
    const base = `http://pinned.invalid:${port}/v1`; // .invalid never resolves: only the pin can reach it
    let open = 0;
    const opened = () => open;
    server.on('connection', (socket) => {
      open++;
      socket.on('close', () => open--);
    });
    const once = async () => {
      const exchange = new UpstreamExchange(1024, quiet);
      upstreamExchange(base, '127.0.0.1', 5_000, 'POST', '/chat/completions', '{}', { 'content-type': 'application/json' }, exchange);
      expect((await exchange.head).status).toBe(200);
      return Buffer.concat(await exchange.body).toString();
    };
    expect(await once()).toBe('{"ok":true}');
    expect(hosts.at(-1)).toBe(`pinned.invalid:${port}`);
    expect(opened()).toBe(1);
    forgetAddresses({ aliases: [{ connectTo: '127.0.0.1' }] });
    expect(opened(), 'kept while a replica has the address').toBe(1);
    forgetAddresses({ aliases: [{ connectTo: null }] });
    await until(() => opened() === 0, 'the idle connection closed with its pool');
    // A call still on the old config makes a new pool.
    expect(await once()).toBe('{"ok":true}');
  });
});
