/**
 * The built server as a child process, for the tests that need a real
 * process (signals, exit codes, stdout, RSS, a cgroup): spawned with this
 * process's environment scrubbed of gateway settings, its stdout read to the
 * end all the time (a full pipe would stall the gateway's logger).
 *
 * Most tests want `useGateway` (./gateway.ts), which runs this for them with
 * `{ process: true }`; spawn directly to watch a start that may fail.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { npmStartNodeArgs, serverEntry, settingsFreeEnv } from './start-command.js';

const ROOT = resolve(import.meta.dirname, '../..');

export type LogLine = Record<string, unknown>;

export interface SpawnGatewayOptions {
  /** Variables on top of the scrubbed environment and `HOST=127.0.0.1 PORT=0`. */
  env?: Record<string, string>;
  /** Run `npm start`'s node flags with its entry (what ships, RSS caps included), not the entry alone. */
  npmStart?: boolean;
  /** A command that runs the server in some context and then execs its arguments (`exec "$@"`), e.g. a shell that joins a cgroup first. */
  via?: readonly string[];
  /** Called with each complete stdout line. */
  onLine?: (line: string) => void;
  /** Keep stdout for `stdout()` and `lines()` (default true; false for a long run that logs every request). */
  keepStdout?: boolean;
}

export interface GatewayProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Date.now() at spawn. */
  readonly startedAt: number;
  stdout(): string;
  stderr(): string;
  /** Complete stdout lines, parsed; a line that is not JSON becomes `{ __raw: line }`. */
  lines(): LogLine[];
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited(): boolean;
  /** The `listening` log line, as soon as it is read; rejects if the process exits first or after `timeoutMs`. */
  listening(timeoutMs?: number): Promise<LogLine>;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Spawns the built server (dist/, so `npm run build` first).
 *
 * @example
 * const p = spawnGateway({ env: { GATEWAY_API_KEY: 'k', GATEWAY_CONFIG: file } });
 * const { port } = await p.listening();
 * // …
 * await p.stop();
 */
export function spawnGateway(options: SpawnGatewayOptions = {}): GatewayProcess {
  const entry = serverEntry(ROOT);
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run "npm run build" first`);
  const node = [process.execPath, ...(options.npmStart ? npmStartNodeArgs(ROOT) : [entry])];
  const [bin, ...args] = [...(options.via ?? []), ...node] as [string, ...string[]];
  const child = spawn(bin, args, { cwd: ROOT, env: { ...settingsFreeEnv(), HOST: '127.0.0.1', PORT: '0', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = options.keepStdout ?? true;
  let out = '';
  let err = '';
  let partial = '';
  let done = false;
  let listeningLine: LogLine | undefined;
  const waiters = new Set<{ resolve(line: LogLine): void; reject(error: Error): void }>();

  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    if (keep) out += d;
    const complete = (partial + d).split('\n');
    partial = complete.pop() ?? '';
    for (const line of complete) {
      options.onLine?.(line);
      if (listeningLine === undefined && line.includes('"event":"listening"')) {
        listeningLine = JSON.parse(line) as LogLine;
        for (const w of waiters) w.resolve(listeningLine);
        waiters.clear();
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.on('exit', (code, signal) => {
      done = true;
      for (const w of waiters) w.reject(new Error(`the gateway exited (${code ?? signal}) before listening; stderr: ${err.slice(-4000)}`));
      waiters.clear();
      res({ code, signal });
    }),
  );

  return {
    child,
    pid: child.pid as number,
    startedAt: Date.now(),
    stdout: () => out,
    stderr: () => err,
    lines: () =>
      out
        .split('\n')
        .slice(0, -1)
        .filter((l) => l.trim() !== '')
        .map((l) => {
          try {
            return JSON.parse(l) as LogLine;
          } catch {
            return { __raw: l };
          }
        }),
    exit,
    exited: () => done,
    listening: (timeoutMs = 15_000) => {
      if (listeningLine) return Promise.resolve(listeningLine);
      if (done) return Promise.reject(new Error(`the gateway exited before listening; stderr: ${err.slice(-4000)}`));
      return new Promise<LogLine>((res, rej) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          rej(new Error(`no "listening" line within ${timeoutMs} ms; stdout: ${out.slice(-2000)}; stderr: ${err.slice(-4000)}`));
        }, timeoutMs);
        const waiter = {
          resolve: (line: LogLine) => (clearTimeout(timer), res(line)),
          reject: (error: Error) => (clearTimeout(timer), rej(error)),
        };
        waiters.add(waiter);
      });
    },
    stop: async (graceMs = 10_000) => {
      if (done) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const inTime = await Promise.race([exit.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
      clearTimeout(timer);
      if (inTime) return;
      child.kill('SIGKILL');
      await exit;
    },
  };
}
