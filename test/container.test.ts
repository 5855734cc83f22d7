/**
 * The container image (issue 4), tested without a Docker engine: the
 * Dockerfile is parsed and its stages are followed step by step on
 * temporary directories — FROM/WORKDIR/ENV/ARG/COPY (from the build context
 * filtered by .dockerignore, or --from an earlier stage)/RUN — and then the
 * final stage's CMD is started as a process with the image's ENV, as its
 * USER when the test runs as root, and probed like a container: its
 * HEALTHCHECK command is run as written, and its STOPSIGNAL stops it.
 * Change the Dockerfile and this test follows.
 *
 * What cannot be reproduced here: the base image's own filesystem (the
 * host's `node`, which must be the same major version, stands in for the
 * image's), `--mount` cache options (npm uses the local cache, preferring
 * it over the registry), `--chown`/`--chmod`, and RUN steps run as the
 * test's user whatever the stage's USER.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { basename, dirname, join, posix, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/load.js';
import {
  dockerignore,
  durationMs,
  finalStage,
  find,
  last,
  leadingFlags,
  parseCommand,
  parseCopy,
  parseDockerfile,
  parseEnv,
  parseHealthcheck,
  splitArg,
  stageEnv,
  substitute,
  type Command,
  type Dockerfile,
  type Stage,
} from './dockerfile.js';
import { live } from './support/requests.js';
import { freePort, npmStartNodeArgs } from './support/start-command.js';
import { until } from './support/waits.js';

const ROOT = resolve(import.meta.dirname, '..');
const DOCKERFILE_TEXT = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const IGNORE_TEXT = existsSync(join(ROOT, '.dockerignore')) ? readFileSync(join(ROOT, '.dockerignore'), 'utf8') : '';
const DF: Dockerfile = parseDockerfile(DOCKERFILE_TEXT);
const FINAL: Stage = finalStage(DF);
const excluded = dockerignore(IGNORE_TEXT);
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };

/** The base image every stage must build on. */
const BASE_IMAGE = 'node:20-bookworm-slim';
/** The whole build-and-run: two `npm ci`, a `tsc` build, a start and a drain. */
const CONTAINER_TIMEOUT_MS = 240_000;
/** `docker stop` sends the STOPSIGNAL and waits this long before SIGKILL. */
const DOCKER_STOP_GRACE_MS = 10_000;
const API_KEY = 'sk-container-test-0123456789abcdef';

/** Users of the official node images that this test can map to ids. */
const KNOWN_USERS: Record<string, number> = { root: 0, node: 1000 };

function userIds(user: string): { uid: number; gid: number } {
  const [u = '', g] = user.split(':');
  const id = (name: string) => {
    if (/^\d+$/.test(name)) return Number(name);
    const known = KNOWN_USERS[name];
    if (known === undefined) throw new Error(`USER ${user}: unknown user name "${name}" (known: ${Object.keys(KNOWN_USERS).join(', ')}, or a numeric id)`);
    return known;
  };
  const uid = id(u);
  return { uid, gid: g === undefined ? uid : id(g) };
}

function isRootUser(user: string | null): boolean {
  if (user === null) return true; // no USER: the base image's root
  return userIds(user).uid === 0;
}

/** The final stage's CMD, or the ENTRYPOINT + CMD combination, as Docker runs it. */
function startCommand(stage: Stage): readonly string[] {
  const cmd = last(stage, 'CMD');
  const entry = last(stage, 'ENTRYPOINT');
  const cmdArgv = cmd ? parseCommand(cmd.args).argv : [];
  if (!entry) return cmdArgv;
  const e = parseCommand(entry.args);
  return e.form === 'shell' ? e.argv : [...e.argv, ...cmdArgv];
}

/** `node` in a command is the image's node; the host's (same major, checked below) stands in. */
function hostArgv(argv: readonly string[]): [string, string[]] {
  const [bin = '', ...rest] = argv;
  return [bin === 'node' || bin === '/usr/local/bin/node' ? process.execPath : bin, rest];
}

/** Parent variables a build step legitimately needs on this machine (search path, npm's cache and registry, proxies). */
function hostBaseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  const keep = ['PATH', 'HOME', 'TMPDIR', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'npm_config_cache', 'npm_config_registry', 'npm_config_userconfig'];
  for (const k of keep) if (process.env[k] !== undefined) env[k] = process.env[k] as string;
  return env;
}

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  ms: number;
  timedOut: boolean;
}

function run(argv: readonly string[], options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number; timeoutMs?: number }): Promise<Ran> {
  const [bin, args] = hostArgv(argv);
  const started = performance.now();
  return new Promise((resolvePromise, reject) => {
    let output = '';
    let timedOut = false;
    const child = spawn(bin, args, { cwd: options.cwd, env: options.env, uid: options.uid, gid: options.gid, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    const timer = options.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, options.timeoutMs)
      : null;
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolvePromise({ code, signal, output, ms: performance.now() - started, timedOut });
    });
  });
}

/** State of one stage being built: its filesystem is a host directory standing for `/`. */
interface StageState {
  readonly stage: Stage;
  readonly root: string;
  workdir: string;
  env: Record<string, string>;
  args: Record<string, string>;
  shell: string[];
  user: string | null;
}

const hostPath = (s: StageState, containerPath: string) => join(s.root, posix.resolve(s.workdir, containerPath));

/** COPY/ADD from the build context (filtered by .dockerignore) or `--from` an earlier stage. */
function copyStep(s: StageState, args: string, built: StageState[], context: string): void {
  const spec = parseCopy(substitute(args, { ...s.args, ...s.env }));
  const from = spec.flags.from;
  let fromRoot: string;
  let fromBase: string;
  let filter: ((hostSrc: string) => boolean) | undefined;
  if (from !== undefined) {
    const source = built.find((b) => b.stage.name === from.toLowerCase() || String(b.stage.index) === from);
    if (!source) throw new Error(`COPY --from=${from}: not an earlier stage (copying from an image is not supported here)`);
    fromRoot = source.root;
    fromBase = '/';
  } else {
    fromRoot = context;
    fromBase = '';
    filter = (hostSrc) => {
      const rel = relative(context, hostSrc);
      return rel === '' || !excluded(rel.split('\\').join('/'));
    };
  }
  const sources: string[] = [];
  for (const src of spec.sources) {
    const rel = fromBase ? posix.resolve(fromBase, src) : posix.normalize(src);
    if (/[*?[]/.test(rel)) {
      const dir = posix.dirname(rel);
      const pattern = new RegExp(`^${posix.basename(rel).replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')}$`);
      const hostDir = join(fromRoot, dir);
      const hits = existsSync(hostDir) ? readdirSync(hostDir).filter((n) => pattern.test(n)).map((n) => join(hostDir, n)) : [];
      sources.push(...hits.filter((h) => !filter || filter(h)));
    } else {
      const h = join(fromRoot, rel);
      if (existsSync(h) && (!filter || filter(h))) sources.push(h);
      else throw new Error(`COPY ${args}: source "${src}" not found${filter ? ' in the build context (or excluded by .dockerignore)' : ''}`);
    }
  }
  if (sources.length === 0) throw new Error(`COPY ${args}: no source matched`);
  const destIsDir = spec.dest.endsWith('/') || spec.dest === '.' || spec.sources.length > 1;
  const dest = hostPath(s, spec.dest);
  for (const src of sources) {
    const isDir = statSync(src).isDirectory();
    let target: string;
    if (isDir) target = dest; // a directory's contents go into the destination
    else if (destIsDir || (existsSync(dest) && statSync(dest).isDirectory())) target = join(dest, basename(src));
    else target = dest;
    mkdirSync(isDir ? target : dirname(target), { recursive: true });
    cpSync(src, target, { recursive: true, force: true, verbatimSymlinks: true, filter });
  }
}

async function runStep(s: StageState, args: string, log: string[]): Promise<void> {
  const { flags, rest } = leadingFlags(args);
  for (const flag of Object.keys(flags)) if (!['mount', 'network', 'security'].includes(flag)) throw new Error(`RUN --${flag} is not supported here`);
  const command = parseCommand(rest, s.shell);
  const env = {
    ...hostBaseEnv(),
    // The image's npm cache mount stands for the local cache: use it first, ask the registry only for what it lacks.
    npm_config_prefer_offline: 'true',
    npm_config_update_notifier: 'false',
    ...s.args,
    ...s.env,
  };
  const cwd = join(s.root, s.workdir);
  mkdirSync(cwd, { recursive: true });
  const ran = await run(command.argv, { cwd, env });
  log.push(`stage ${s.stage.name ?? s.stage.index}: RUN ${rest} (${(ran.ms / 1000).toFixed(1)} s)`);
  if (ran.code !== 0) throw new Error(`stage ${s.stage.name ?? s.stage.index}: RUN ${rest} exited with ${ran.code ?? ran.signal}:\n${ran.output.slice(-4000)}`);
}

/** Follows every stage of the Dockerfile in order; returns the states by stage index. */
async function buildImage(df: Dockerfile, context: string, work: string, log: string[]): Promise<StageState[]> {
  const built: StageState[] = [];
  for (const stage of df.stages) {
    const root = join(work, `stage-${stage.index}${stage.name ? `-${stage.name}` : ''}`);
    mkdirSync(root, { recursive: true });
    const parent = built.find((b) => b.stage.name !== null && b.stage.name === stage.from.toLowerCase());
    const s: StageState = parent
      ? { stage, root, workdir: parent.workdir, env: { ...parent.env }, args: {}, shell: [...parent.shell], user: parent.user }
      : { stage, root, workdir: '/', env: {}, args: {}, shell: ['/bin/sh', '-c'], user: null };
    if (parent) cpSync(parent.root, root, { recursive: true, verbatimSymlinks: true });
    for (const ins of stage.instructions) {
      const vars = { ...s.args, ...s.env };
      switch (ins.keyword) {
        case 'ARG': {
          const [name, value] = splitArg(ins.args);
          s.args[name] = value ?? df.globalArgs[name] ?? '';
          break;
        }
        case 'ENV':
          for (const [k, v] of Object.entries(parseEnv(ins.args))) s.env[k] = substitute(v, { ...s.args, ...s.env });
          break;
        case 'WORKDIR':
          s.workdir = posix.resolve(s.workdir, substitute(ins.args, vars));
          mkdirSync(join(root, s.workdir), { recursive: true });
          break;
        case 'COPY':
        case 'ADD':
          copyStep(s, ins.args, built, context);
          break;
        case 'RUN':
          await runStep(s, ins.args, log);
          break;
        case 'SHELL':
          s.shell = JSON.parse(ins.args) as string[];
          break;
        case 'USER':
          s.user = substitute(ins.args, vars).trim();
          break;
        case 'CMD':
        case 'ENTRYPOINT':
        case 'HEALTHCHECK':
        case 'STOPSIGNAL':
        case 'EXPOSE':
        case 'LABEL':
        case 'VOLUME':
          break; // image metadata, read where it is used
        default:
          throw new Error(`Dockerfile line ${ins.line}: ${ins.keyword} is not supported by this test's builder`);
      }
    }
    built.push(s);
  }
  return built;
}

/** A repository copy standing for `docker build .`'s context: everything .dockerignore lets through. */
function makeContext(dest: string): void {
  cpSync(ROOT, dest, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (src) => {
      const rel = relative(ROOT, src).split('\\').join('/');
      return rel === '' || !excluded(rel);
    },
  });
}

// ---- the Dockerfile as written ----------------------------------------------

describe('the Dockerfile', () => {
  it(`builds every stage on ${BASE_IMAGE}`, () => {
    expect(DF.stages.length, 'a multi-stage build').toBeGreaterThanOrEqual(2);
    const stageNames = new Set(DF.stages.map((s) => s.name).filter((n): n is string => n !== null));
    const bases = DF.stages.filter((s) => !stageNames.has(s.from.toLowerCase())).map((s) => s.from);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toBe(BASE_IMAGE);
  });

  it('the host node that stands in for the image has the base image major version', () => {
    const major = /^node:(\d+)/.exec(BASE_IMAGE)?.[1];
    expect(process.versions.node.split('.')[0], `host node ${process.version} vs ${BASE_IMAGE}`).toBe(major);
  });

  it('the final stage installs production dependencies only and takes the build output from an earlier stage', () => {
    const runs = find(FINAL, 'RUN').map((r) => leadingFlags(r.args).rest);
    const installs = runs.filter((r) => /\bnpm\s+(ci|install|i)\b/.test(r));
    expect(installs.length, 'the runtime installs its dependencies').toBeGreaterThan(0);
    for (const r of installs) expect(r, 'runtime npm installs omit dev dependencies').toMatch(/--omit[= ]dev\b/);
    expect(runs.some((r) => /\bnpm\s+run\s+build\b|\btsc\b/.test(r)), 'no compiling in the runtime stage').toBe(false);
    const fromBuild = find(FINAL, 'COPY').map((c) => parseCopy(c.args)).filter((c) => c.flags.from !== undefined);
    expect(fromBuild.some((c) => c.sources.some((src) => /(^|\/)dist\/?$/.test(src))), 'dist/ comes from the build stage').toBe(true);
  });

  it('runs as a non-root USER', () => {
    const user = last(FINAL, 'USER');
    expect(user, 'the final stage sets USER').not.toBeNull();
    expect(isRootUser(user!.args.trim()), `USER ${user!.args}`).toBe(false);
  });

  it('stops on SIGTERM', () => {
    expect(last(FINAL, 'STOPSIGNAL')?.args.trim()).toBe('SIGTERM');
  });

  it('starts node itself with the exec form, so the process (PID 1) receives the STOPSIGNAL', () => {
    const cmd = last(FINAL, 'CMD');
    expect(cmd).not.toBeNull();
    expect(parseCommand(cmd!.args).form).toBe('exec');
    const entry = last(FINAL, 'ENTRYPOINT');
    if (entry) expect(parseCommand(entry.args).form).toBe('exec');
    expect(startCommand(FINAL)[0]).toBe('node');
  });

  it('runs node with the same flags as npm start and the bench, so the measured memory is what ships', async () => {
    const npmStart = npmStartNodeArgs(ROOT);
    expect(startCommand(FINAL).slice(1)).toEqual(npmStart);
    expect(startCommand(FINAL)).toContain('--max-semi-space-size=4');
    expect(startCommand(FINAL)).toContain('--v8-pool-size=1');
    expect(startCommand(FINAL)).toContain('--no-allocation-site-pretenuring');
    const { START_ARGS } = (await import(pathToFileURL(join(ROOT, 'loadtest/start-args.mjs')).href)) as { START_ARGS: string[] };
    expect(START_ARGS).toEqual(npmStart);
    // The bench, ab.mjs and the profiler start the gateway with these, not a copy of them.
    for (const script of ['bench.mjs', 'ab.mjs', 'profile.mjs']) {
      expect(readFileSync(join(ROOT, 'loadtest', script), 'utf8'), script).toMatch(/import \{ START_(ARGS|FLAGS) \} from '\.\/start-args\.mjs';/);
    }
  });

  it('has a HEALTHCHECK on /health/live run by node (no curl or wget in the slim image), with a timeout', () => {
    const hc = last(FINAL, 'HEALTHCHECK');
    expect(hc, 'the final stage has a HEALTHCHECK').not.toBeNull();
    const parsed = parseHealthcheck(hc!.args);
    expect(parsed, 'not HEALTHCHECK NONE').not.toBeNull();
    expect(parsed!.command.form).toBe('exec');
    expect(parsed!.command.argv[0]).toBe('node');
    expect(parsed!.command.text).not.toMatch(/\b(curl|wget)\b/);
    // Liveness only: /health and /ready run checks and may be 503 on a healthy process.
    expect(parsed!.command.text).toMatch(/\/health\/live\b/);
    expect(parsed!.command.text).not.toMatch(/\/ready\b|\/health['"`]/);
    expect(durationMs(parsed!.options.timeout ?? '30s')).toBeLessThanOrEqual(10_000);
  });

  it('listens on the port it EXPOSEs, which is the server default', () => {
    const env = stageEnv(DF, FINAL);
    const port = Number(env.PORT ?? DEFAULTS.port);
    expect(port).toBe(DEFAULTS.port);
    const exposed = find(FINAL, 'EXPOSE').flatMap((e) => e.args.split(/\s+/)).map((p) => Number(p.split('/')[0]));
    expect(exposed).toContain(port);
    expect(env.NODE_ENV).toBe('production');
  });

  it('.dockerignore keeps build output, dependencies, VCS data and env files out of the context, and lets every COPY source in', () => {
    for (const path of ['node_modules/x/index.js', 'dist/server.js', '.git/HEAD', '.env', '.env.local']) expect(excluded(path), path).toBe(true);
    const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { include: string[] };
    for (const dir of tsconfig.include) expect(excluded(dir), `${dir} (compiled by the build)`).toBe(false);
    for (const stage of DF.stages) {
      for (const copy of [...find(stage, 'COPY'), ...find(stage, 'ADD')].map((c) => parseCopy(c.args))) {
        if (copy.flags.from !== undefined) continue;
        for (const src of copy.sources) if (src !== '.') expect(excluded(posix.normalize(src)), `COPY ${src}`).toBe(false);
      }
    }
  });
});

// ---- the image, built and run ------------------------------------------------

interface Server {
  child: ChildProcess;
  output: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited: () => boolean;
}

describe('the image, built from the Dockerfile and run without Docker', { timeout: CONTAINER_TIMEOUT_MS }, () => {
  let work = '';
  let runtime: StageState;
  let port = 0;
  let server: Server | null = null;
  let runEnv: Record<string, string> = {};
  let ids: { uid?: number; gid?: number } = {};
  const log: string[] = [];

  const healthcheck = (): Promise<Ran> => {
    const parsed = parseHealthcheck(last(FINAL, 'HEALTHCHECK')!.args)!;
    const timeoutMs = durationMs(parsed.options.timeout ?? '30s');
    const command: Command = parsed.command;
    // Docker runs the check inside the container: its env, its workdir, its user.
    return run(command.argv, { cwd: join(runtime.root, runtime.workdir), env: runEnv, ...ids, timeoutMs });
  };

  beforeAll(async () => {
    const started = performance.now();
    work = mkdtempSync(join(tmpdir(), 'switchyard-image-'));
    chmodSync(work, 0o755); // the image's USER must reach /app
    const context = join(work, 'context');
    makeContext(context);
    const stages = await buildImage(DF, context, join(work, 'stages'), log);
    runtime = stages.at(-1) as StageState;
    for (const s of stages) if (s !== runtime) rmSync(s.root, { recursive: true, force: true });

    port = await freePort();
    // `docker run -e …`: the image's ENV, then the run's variables on top.
    runEnv = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', ...runtime.env, PORT: String(port), HOST: '127.0.0.1', GATEWAY_API_KEY: API_KEY, GATEWAY_WORKERS: '2' };
    const user = runtime.user;
    if (process.getuid?.() === 0 && user !== null) ids = userIds(user);
    const [bin, args] = hostArgv(startCommand(runtime.stage));
    let output = '';
    let done = false;
    const child = spawn(bin, args, { cwd: join(runtime.root, runtime.workdir), env: runEnv, ...ids, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child.on('exit', (code, signal) => {
        done = true;
        r({ code, signal });
      }),
    );
    server = { child, output: () => output, exit, exited: () => done };
    await until(async () => {
      if (done) throw new Error(`the CMD exited before it answered /health/live on port ${port}:\n${output.slice(-4000)}`);
      return live(port);
    }, `the CMD to answer /health/live on port ${port}`, 20_000, 50).catch((err: Error) => {
      throw new Error(`${err.message}:\n${output.slice(-4000)}`);
    });
    log.push(`built and started in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    console.info(`[container] ${log.join('\n[container] ')}`);
  }, CONTAINER_TIMEOUT_MS);

  afterAll(async () => {
    if (server && !server.exited()) {
      server.child.kill('SIGKILL');
      await server.exit;
    }
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the runtime stage holds dist/ and the production dependencies only', () => {
    const app = join(runtime.root, runtime.workdir);
    expect(existsSync(join(app, 'dist/server.js'))).toBe(true);
    expect(existsSync(join(app, 'dist/worker/entry.js'))).toBe(true);
    expect(existsSync(join(app, 'dist/worker/entry.cjs')), 'the loader piscina is given').toBe(true);
    expect(existsSync(join(app, 'src')), 'no TypeScript sources in the runtime image').toBe(false);
    for (const dep of Object.keys(PKG.dependencies ?? {})) expect(existsSync(join(app, 'node_modules', dep, 'package.json')), `dependency ${dep}`).toBe(true);
    for (const dep of Object.keys(PKG.devDependencies ?? {})) expect(existsSync(join(app, 'node_modules', dep)), `devDependency ${dep}`).toBe(false);
  });

  it('the CMD answers /health/live (as the image USER when the test runs as root)', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/health/live`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ object: 'health', status: 'ok' });
    expect(res.headers.get('server')).toMatch(/^switchyard\//);
    if (ids.uid !== undefined && existsSync(`/proc/${server!.child.pid}/status`)) {
      const uidLine = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${server!.child.pid}/status`, 'utf8'));
      expect(Number(uidLine?.[1]), 'the process runs as the image USER').toBe(ids.uid);
    }
  });

  it('serves the demo config: /ready is 200, the native uWS binary loaded, and a chat completion (plain and streamed) works', async () => {
    const ready = await fetch(`http://127.0.0.1:${port}/ready`);
    expect(ready.status).toBe(200);
    await ready.arrayBuffer();
    const status = (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as { uws_native?: boolean };
    expect(status.uws_native, 'uWebSockets.js native binary in the runtime install').toBe(true);

    const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'demo-chat', messages: [{ role: 'user', content: 'Hello' }] }) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; choices: Array<{ message: { content: string } }> };
    expect(body.object).toBe('chat.completion');
    // The demo's mock: its eight words, the prompt's among them.
    expect(body.choices[0]?.message.content).toBe('This is a mock reply to: Hello This');

    const stream = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'demo-chat', stream: true, messages: [{ role: 'user', content: 'Hi' }] }) });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await stream.text();
    expect(text).toContain('"chat.completion.chunk"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);

    const denied = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(denied.status).toBe(401);
    await denied.arrayBuffer();
  });

  it('the HEALTHCHECK command, as written, exits 0 within its --timeout', async () => {
    const ran = await healthcheck();
    expect(ran.timedOut, ran.output).toBe(false);
    expect(ran.code, ran.output).toBe(0);
  });

  it("the STOPSIGNAL ends it with exit code 0 within docker stop's grace period; the HEALTHCHECK then fails", async () => {
    const signal = (last(FINAL, 'STOPSIGNAL')?.args.trim() ?? 'SIGTERM') as NodeJS.Signals;
    const s = server!;
    const sent = performance.now();
    s.child.kill(signal);
    const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), DOCKER_STOP_GRACE_MS).unref());
    const result = await Promise.race([s.exit, timeout]);
    expect(result, `still running ${DOCKER_STOP_GRACE_MS} ms after ${signal}:\n${s.output().slice(-2000)}`).not.toBe('timeout');
    expect(result).toEqual({ code: 0, signal: null });
    log.push(`${signal} → exit in ${((performance.now() - sent) / 1000).toFixed(1)} s`);
    expect(await live(port)).toBe(false);
    const ran = await healthcheck();
    expect(ran.code, 'the HEALTHCHECK reports a stopped server').not.toBe(0);
  });
});
