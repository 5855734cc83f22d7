/**
 * A real `redis-server` for the tests that need Redis (CONTRACT.md, "Shared state across pods"):
 * the Debian package's binary on a free loopback port (below the kernel's ephemeral range, and so
 * is its cluster bus port: `freePort`), no config file, no persistence
 * (`--save '' --appendonly no`), ready once it logs "Ready to accept connections". It dies with
 * the test process, however that ends: an `exit` handler kills it, and on Linux it is spawned
 * under `setpriv --pdeathsig KILL`, so even a test process killed by SIGKILL leaves no Redis
 * behind.
 *
 * Not installed: `startRedis` fails with a message that says how to get it (`npm test` and `.ci/run`
 * install it first: tools/ensure-test-packages.sh). Tests that need Redis never skip: CI must run them, and a
 * developer without Redis sees why they fail.
 *
 * `restart()` comes back EMPTY, on the same port: nothing is persisted, as a Redis without
 * persistence that crashed and came back (the gateway must draw its budget afresh).
 *
 * @example
 * let redis: RedisServer;
 * beforeAll(async () => (redis = await startRedis()));
 * afterAll(() => redis.stop());
 *
 * // The gateway's config points at it:
 * const yaml = `router_settings: { redis_url: ${redis.url} }\n…`;
 * // An outage mid-load, then its return on the same port (with no keys):
 * await redis.kill();
 * …
 * await redis.restart();
 * // Look behind the gateway's back:
 * expect(await redis.command('PING')).toBe('PONG');
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { respCommand, respConnect, type RespValue } from './resp.js';
import { freePort } from './start-command.js';

export interface RedisServerOptions {
  /** Requires this password (`--requirepass`); `url` then carries it (`redis://:password@127.0.0.1:port`). */
  password?: string;
  /** More configuration, as redis-server takes it on its command line: `['--maxmemory', '16mb']`. */
  args?: readonly string[];
  /** The binary, when not `redis-server` on PATH. */
  binary?: string;
  /** How long a start may take (default 10 s): a 2-core CI host running test files side by side. */
  startTimeoutMs?: number;
}

export interface RedisServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** `redis://127.0.0.1:<port>` (with the password when there is one), for `router_settings.redis_url`. */
  readonly url: string;
  /** The process now running (a restart changes it); the last one's after a stop or kill. */
  readonly pid: number;
  running(): boolean;
  /** What it logged (stdout and stderr), the last 64 KiB. */
  log(): string;
  /** One command on a connection of its own (AUTH first when it has a password). */
  command(...args: (string | number)[]): Promise<RespValue>;
  /** SIGTERM (Redis shuts down at once; nothing to save), SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL: the outage, without a goodbye to its clients (their connections reset or close as the kernel sees fit). */
  kill(): Promise<void>;
  /** A new process on the same port, EMPTY (no persistence). Stops the running one first when there is one. */
  restart(): Promise<void>;
}

/** The part of the log kept for errors and `log()`. */
const LOG_KEEP = 64 * 1024;
/** A port found free can be taken (by another test's Redis) before Redis binds it: this many tries. */
const PORT_TRIES = 5;

/** Every redis-server this process started and has not seen exit: the exit handler kills them. */
const live = new Set<ChildProcess>();
let exitHandlerInstalled = false;

/** The way to get redis-server, for a test that cannot start one. */
export const REDIS_MISSING_HELP =
  "redis-server is not installed (not found on PATH). The tests that need Redis start a real one on a loopback port; they are not skipped. Install it: `sudo apt-get install -y redis-server` (Debian/Ubuntu; the service need not run), or run `bash tools/ensure-test-packages.sh`, which `npm test` and `.ci/run` run first.";

/** Why a start failed because the port was taken, so the next try takes another. */
class PortTaken extends Error {}

/**
 * Starts a redis-server on a free loopback port; resolves once it accepts connections.
 *
 * @example
 * const redis = await startRedis();
 * try { … redis.url … } finally { await redis.stop(); }
 */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const binary = options.binary ?? onPath('redis-server');
  if (binary === undefined || !executable(binary)) throw new Error(options.binary === undefined ? REDIS_MISSING_HELP : `${options.binary} is not an executable file. ${REDIS_MISSING_HELP}`);
  // Found once: setpriv (util-linux, in every Debian) ties Redis' life to this process'; elsewhere the exit handler alone does.
  const setpriv = process.platform === 'linux' ? onPath('setpriv') : undefined;
  const timeoutMs = options.startTimeoutMs ?? 10_000;
  let log = '';
  const keep = (text: string) => {
    log = (log + text).slice(-LOG_KEEP);
  };

  const launch = (port: number): Promise<ChildProcess> => {
    const argv = [binary, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', tmpdir(), ...(options.password === undefined ? [] : ['--requirepass', options.password]), ...(options.args ?? [])];
    const [command, ...args] = setpriv === undefined ? argv : [setpriv, '--pdeathsig', 'KILL', '--', ...argv];
    const child = spawn(command as string, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    installExitHandler();
    live.add(child);
    child.on('exit', () => live.delete(child));
    // A forgotten server must not hold the test process open; the exit handler and pdeathsig end it.
    child.unref();
    return new Promise<ChildProcess>((resolve, reject) => {
      let lines = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`redis-server on port ${port} did not log "Ready to accept connections" within ${timeoutMs} ms; its log:\n${log}`));
      }, timeoutMs);
      const onData = (d: string) => {
        keep(d);
        lines += d;
        if (/Ready to accept connections/.test(lines)) {
          lines = '';
          clearTimeout(timer);
          resolve(child);
        }
      };
      for (const stream of [child.stdout!, child.stderr!]) {
        stream.setEncoding('utf8').on('data', onData);
        // The pipes are handles of their own: unreffed too, or they would hold the process open.
        (stream as unknown as { unref?(): void }).unref?.();
      }
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(new Error(`redis-server (${binary}) did not start: ${error.message}. ${REDIS_MISSING_HELP}`));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        const tail = log.slice(-4000);
        if (/Address already in use/.test(tail)) reject(new PortTaken(`port ${port} was taken`));
        else reject(new Error(`redis-server exited (${code ?? signal}) before it was ready; its log:\n${tail}`));
      });
    });
  };

  let port = 0;
  let child: ChildProcess | undefined;
  for (let attempt = 1; child === undefined; attempt++) {
    port = await freePort();
    try {
      child = await launch(port);
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt >= PORT_TRIES) throw error;
    }
  }
  let current: ChildProcess = child;
  const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
  const waitExit = (c: ChildProcess, graceMs: number, then?: () => void) =>
    new Promise<void>((resolve) => {
      if (exited(c)) return resolve();
      // Ref'd: a test awaiting a stop keeps the process alive until the stop is done.
      const timer = setTimeout(() => (then ? then() : undefined), graceMs);
      c.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });

  const stop = async (graceMs = 5000) => {
    const c = current;
    if (exited(c)) return;
    c.kill('SIGTERM');
    await waitExit(c, graceMs, () => c.kill('SIGKILL'));
  };
  const url = `redis://${options.password === undefined ? '' : `:${encodeURIComponent(options.password)}@`}127.0.0.1:${port}`;

  return {
    host: '127.0.0.1',
    port,
    url,
    get pid() {
      return current.pid as number;
    },
    running: () => !exited(current),
    log: () => log,
    command: async (...args) => {
      if (options.password === undefined) return respCommand(port, args);
      // AUTH and the command on one connection.
      const conn = await respConnect(port);
      try {
        await conn.send(['AUTH', options.password]);
        return await conn.send(args);
      } finally {
        conn.close();
      }
    },
    stop,
    kill: async () => {
      const c = current;
      if (exited(c)) return;
      c.kill('SIGKILL');
      await waitExit(c, 10_000);
    },
    restart: async () => {
      await stop();
      try {
        current = await launch(port);
      } catch (error) {
        if (error instanceof PortTaken) throw new Error(`redis-server could not come back on port ${port}: something else took it while Redis was down`, { cause: error });
        throw error;
      }
    },
  };
}

/** The absolute path of `name` on PATH, or undefined. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (executable(candidate)) return candidate;
  }
  return undefined;
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** One handler for every server: at exit (a normal end, process.exit, an uncaught error) each still running is killed, synchronously. */
function installExitHandler(): void {
  if (exitHandlerInstalled) return;
  exitHandlerInstalled = true;
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}
