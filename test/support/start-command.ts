/**
 * The node arguments `npm start` runs the gateway with (flags, then the
 * bundled front, dist/server.js), read from package.json: tests that start
 * the gateway as its own process use exactly these, so what they measure
 * (RSS above all: --max-semi-space-size caps the front's young generation)
 * and what they exercise is what ships.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export function npmStartNodeArgs(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const start = pkg.scripts?.start ?? '';
  const args = /(?:^|&& )node ((?:--[\w-]+(?:=\S+)? )*dist\/server\.js)$/.exec(start)?.[1]?.split(' ');
  if (!args) throw new Error(`npm start (${JSON.stringify(start)}) does not end in "node [--flags] dist/server.js"`);
  return args;
}

/** The absolute path of the file `npm start` runs. */
export function serverEntry(root: string): string {
  return join(root, npmStartNodeArgs(root).at(-1) as string);
}

/**
 * This process's environment without any gateway setting (GATEWAY_*, TOOLKIT_*, OTEL_*, AWS_*, PORT,
 * HOST, LOG_LEVEL): a test that starts the server sets what it means to, and nothing leaks in from
 * the shell that ran the tests (an OTEL_EXPORTER_OTLP_ENDPOINT there would turn tracing on; AWS_*
 * keys, a profile or a web identity there would be a bedrock deployment's credentials, its chain's).
 */
export function settingsFreeEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('GATEWAY_') || k.startsWith('TOOLKIT_') || k.startsWith('OTEL_') || k.startsWith('AWS_') || k === 'PORT' || k === 'HOST' || k === 'LOG_LEVEL') continue;
    env[k] = v;
  }
  return env;
}

/**
 * Where nothing listens, for an upstream that must refuse the connection: the discard port. A
 * port found free and closed is free only for a moment: another test file running beside this
 * one can take it, and a CI run once got a fake upstream's 401 there instead of a refusal.
 * Nothing hands out a port under 1024, and no test listens on 9.
 */
export const REFUSED_PORT = 9;

/** Where `freePort` picks: its ports plus 10000 (a Redis cluster node's bus port) stay under 32768, Linux' default ephemeral range. */
const FREE_PORTS_FROM = 12_000;

/**
 * A loopback port nothing listens on now, for a server that must be told its port in advance (a
 * gateway process given PORT, a Redis that comes back on its port after a kill). It is below the
 * kernel's ephemeral range, where listen(0) and outgoing connections take theirs: another test
 * running beside this one cannot take it while its server starts or is down, only another pick of
 * this function (one in ten thousand). So is port + 10000, which a Redis cluster node binds for its
 * bus (Redis refuses to start a node over 55535). Where the range starts too low to leave room, any
 * free port.
 */
export async function freePort(): Promise<number> {
  const highest = ephemeralFrom() - 1 - 10_000;
  for (let tries = 0; highest > FREE_PORTS_FROM + 1000 && tries < 100; tries++) {
    const port = FREE_PORTS_FROM + Math.floor(Math.random() * (highest - FREE_PORTS_FROM + 1));
    if (await bindable(port)) return port;
  }
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** The first port of the kernel's ephemeral range (Linux; elsewhere 0, so freePort takes any). */
export function ephemeralFrom(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 0;
  } catch {
    return 0;
  }
}

/** Whether a listen on 127.0.0.1:port succeeds now (the listener closes again at once). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}
