/**
 * The real redis-server the Redis tests stand on: it answers RESP on its port, dies when told
 * (SIGKILL for an outage), comes back empty on the same port, runs beside another, and never
 * outlives the process that started it, however that process ends.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from './redis-server.js';
import { listeningSockets } from './listening-sockets.js';
import { RespError, respCommand, respConnect, respMonitor } from './resp.js';
import { ephemeralFrom } from './start-command.js';
import { until } from './waits.js';

/** Resolves with the connect's error code (ECONNREFUSED) or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/**
 * The listening socket a server had is closed. Not "the port refuses": under parallel tests another
 * test's listen(0) may take the port as soon as it is free (CI saw exactly that).
 */
function expectClosed(sockets: string[], port: number): void {
  expect(listeningSockets(port).filter((inode) => sockets.includes(inode))).toEqual([]);
}

/** The process is gone: no such pid, or a zombie its new parent has not reaped yet (it holds nothing: no port, no memory). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

describe('startRedis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis.stop());

  it('answers PING, SET and GET in RESP on its loopback port; its url names that port', async () => {
    expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
    expect(redis.running()).toBe(true);
    expect(await respCommand(redis.port, ['PING'])).toBe('PONG');
    const conn = await respConnect(redis.port);
    expect(await conn.send(['SET', 'greeting', 'hello'])).toBe('OK');
    expect(await conn.send(['GET', 'greeting'])).toBe('hello');
    expect(await conn.send(['INCRBY', 'count', 5])).toBe(5);
    expect(await conn.send(['GET', 'missing'])).toBeNull();
    const error = await conn.send(['NOSUCHCOMMAND']);
    expect(error).toBeInstanceOf(RespError);
    conn.close();
    // No persistence and no config file: what the contract starts.
    expect(await redis.command('CONFIG', 'GET', 'save')).toEqual(['save', '']);
    expect(await redis.command('CONFIG', 'GET', 'appendonly')).toEqual(['appendonly', 'no']);
    expect(await redis.command('CONFIG', 'GET', 'bind')).toEqual(['bind', '127.0.0.1']);
    expect(redis.log()).toMatch(/Ready to accept connections/);
  });

  it("its port, and its cluster bus port (+10000), are below the kernel's ephemeral range: no listen(0) can take them while it is down", () => {
    const from = ephemeralFrom();
    expect(from).toBeGreaterThan(23_000); // the rule needs room below the range, as on Linux' default 32768
    expect(redis.port + 10_000).toBeLessThan(from);
  });

  it('respMonitor counts the commands clients send, a script as one however many calls it makes', async () => {
    const monitor = await respMonitor(redis.port);
    try {
      const conn = await respConnect(redis.port);
      await conn.send(['SET', 'watched', '1']);
      await conn.send(['GET', 'watched']);
      expect(await conn.send(['EVAL', "redis.call('INCR', KEYS[1]); redis.call('INCR', KEYS[1]); return redis.call('GET', KEYS[1])", '1', 'watched'])).toBe('3');
      conn.close();
      await until(() => monitor.total() === 3, 'the monitor saw the three commands');
      expect(Object.fromEntries(monitor.commands())).toEqual({ SET: 1, GET: 1, EVAL: 1 });
    } finally {
      monitor.close();
    }
  });

  it('kill() is an outage: the process dies at once, the port refuses, an open connection closes; restart() is back on the same port, empty', async () => {
    await redis.command('SET', 'survives', 'no');
    const before = redis.pid;
    const socket = listeningSockets(redis.port);
    expect(socket).toHaveLength(1);
    const conn = await respConnect(redis.port);
    await redis.kill();
    expect(redis.running()).toBe(false);
    await conn.closed;
    await until(() => gone(before), `redis-server ${before} gone`);
    expectClosed(socket, redis.port);

    await redis.restart();
    expect(redis.running()).toBe(true);
    expect(redis.pid).not.toBe(before);
    expect(await redis.command('PING')).toBe('PONG');
    expect(await redis.command('GET', 'survives')).toBeNull();
    expect(await redis.command('DBSIZE')).toBe(0);
  });

  it('restart() while it runs stops it first (SIGTERM) and comes back on the same port', async () => {
    const before = redis.pid;
    const port = redis.port;
    await redis.restart();
    expect(redis.pid).not.toBe(before);
    expect(redis.port).toBe(port);
    expect(await redis.command('PING')).toBe('PONG');
  });

  it('runs beside another: two ports, two key spaces', async () => {
    const other = await startRedis();
    const socket = listeningSockets(other.port);
    expect(socket).toHaveLength(1);
    try {
      expect(other.port).not.toBe(redis.port);
      await redis.command('SET', 'where', 'first');
      await other.command('SET', 'where', 'second');
      expect(await redis.command('GET', 'where')).toBe('first');
      expect(await other.command('GET', 'where')).toBe('second');
    } finally {
      await other.stop();
    }
    expect(other.running()).toBe(false);
    expectClosed(socket, other.port);
    expect(await redis.command('PING')).toBe('PONG');
  });

  it('with a password: refuses a command without AUTH, takes one with it; the url carries the password', async () => {
    const guarded = await startRedis({ password: 's3cret/pw' });
    try {
      expect(guarded.url).toBe(`redis://:s3cret%2Fpw@127.0.0.1:${guarded.port}`);
      const refused = await respCommand(guarded.port, ['PING']);
      expect(refused).toBeInstanceOf(RespError);
      expect(String((refused as RespError).message)).toMatch(/^NOAUTH/);
      expect(await guarded.command('PING')).toBe('PONG');
    } finally {
      await guarded.stop();
    }
  });
});

/** What the child prints once its redis-server runs, or why it could not start one. */
interface ChildLine {
  pid?: number;
  port?: number;
  sockets?: string[];
  error?: string;
}

describe('a redis-server never outlives the process that started it', () => {
  let dir: string;
  let script: string;
  beforeAll(async () => {
    // The module as another process runs it: bundled by esbuild into one .mjs (node 20 runs no TypeScript).
    dir = mkdtempSync(join(tmpdir(), 'switchyard-redis-child-'));
    script = join(dir, 'child.mjs');
    const contents = `
      import { startRedis } from './redis-server.ts';
      import { listeningSockets } from './listening-sockets.ts';
      const how = process.argv[2];
      try {
        const redis = await startRedis();
        process.stdout.write(JSON.stringify({ pid: redis.pid, port: redis.port, sockets: listeningSockets(redis.port) }) + '\\n');
        if (how === 'exit') process.exit(0);
        if (how === 'hold') setInterval(() => {}, 60_000);
        // 'end': nothing more to do; the event loop empties and the process ends on its own.
      } catch (error) {
        process.stdout.write(JSON.stringify({ error: error.message }) + '\\n');
      }`;
    const out = await build({ stdin: { contents, resolveDir: import.meta.dirname, loader: 'ts', sourcefile: 'child.ts' }, bundle: true, platform: 'node', format: 'esm', target: 'node20', write: false, logLevel: 'silent' });
    writeFileSync(script, out.outputFiles[0]!.text);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs the child; resolves with its first line, parsed, and the child. */
  function runChild(how: 'exit' | 'end' | 'hold', env: NodeJS.ProcessEnv = process.env) {
    const child = spawn(process.execPath, [script, how], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exit = new Promise<number | NodeJS.Signals | null>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
    const line = new Promise<ChildLine>((resolve, reject) => {
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const nl = out.indexOf('\n');
        if (nl !== -1) resolve(JSON.parse(out.slice(0, nl)) as ChildLine);
      });
      void exit.then((how) => reject(new Error(`the child exited (${String(how)}) without a line; stderr: ${err}`)));
    });
    return { child, line, exit };
  }

  /** The child's redis-server is gone and the socket it listened on is closed. */
  async function expectGone({ pid, port, sockets }: ChildLine): Promise<void> {
    expect(sockets).toHaveLength(1);
    await until(() => gone(pid!), `redis-server ${pid} gone`, 5000);
    expectClosed(sockets!, port!);
  }

  it('when it calls process.exit', async () => {
    const { line, exit } = runChild('exit');
    const started = await line;
    expect(await exit).toBe(0);
    await expectGone(started);
  });

  it('when its event loop empties (a test that forgot to stop it does not hold the process open)', async () => {
    const { line, exit } = runChild('end');
    const started = await line;
    expect(await exit).toBe(0);
    await expectGone(started);
  });

  it('when it is killed by SIGKILL (no exit handler runs: the parent-death signal does it)', async () => {
    const { child, line, exit } = runChild('hold');
    const started = await line;
    expect(await tryConnect(started.port!)).toBe('connected');
    child.kill('SIGKILL');
    expect(await exit).toBe('SIGKILL');
    await expectGone(started);
  });

  it('when it is ended by SIGTERM', async () => {
    const { child, line, exit } = runChild('hold');
    const started = await line;
    child.kill('SIGTERM');
    expect(await exit).toBe('SIGTERM');
    await expectGone(started);
  });

  it('not installed: the start fails naming .ci/run and apt-get install redis-server, and starts nothing', async () => {
    const { line, exit } = runChild('exit', { ...process.env, PATH: join(dir, 'no-such-bin') });
    const { error } = await line;
    expect(error).toMatch(/redis-server is not installed/);
    expect(error).toContain('.ci/run');
    expect(error).toContain('apt-get install -y redis-server');
    expect(await exit).toBe(0);
  });
});
