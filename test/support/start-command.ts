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
 * port found free and closed (freePort) is free only for a moment: listen(0) in a test file
 * running beside this one can take it, and a CI run once got a fake upstream's 401 there instead
 * of a refusal. listen(0) never hands out a port under 1024, and no test listens on 9.
 */
export const REFUSED_PORT = 9;

/** A loopback port nothing listens on now (for a server that must be told its port in advance: it listens on it at once). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
