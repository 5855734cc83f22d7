// What each thread loads at start, read off the compiled modules' static imports (dynamic
// `import()` is what loads a module later, on demand) and off what tools/bundle.mjs put in each
// bundle. A package in the wrong thread's start graph costs that thread its RSS and start
// time: undici ~20 MB, zod ~11 MB per isolate.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnGateway } from './support/gateway-process.js';
import { REFUSED_PORT } from './support/start-command.js';
import { until } from './support/waits.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const STATIC_IMPORT = /^\s*(?:import|export)\s+(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;

/** The packages a module and its static relative imports load, by package name. */
function packagesLoadedAtStart(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
      if (specifier === undefined) continue;
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
      else if (!specifier.startsWith('node:')) packages.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] as string));
    }
  };
  visit(join(root, entry));
  return packages;
}

/** The packages esbuild bundled into a file: it heads each bundled file's code with a comment naming its path. */
function bundledPackages(file: string): Set<string> {
  const names = new Set<string>();
  for (const [, name] of readFileSync(join(root, file), 'utf8').matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) names.add(name as string);
  return names;
}

/** The files of undici bundled into a file, by their path inside the package. */
function bundledUndiciFiles(file: string): string[] {
  return [...readFileSync(join(root, file), 'utf8').matchAll(/^\/\/ node_modules\/undici\/(\S+)$/gm)].map(([, path]) => path as string);
}

const workerBundle = () => readdirSync(join(root, 'dist/worker')).filter((f) => f.endsWith('.js'));

describe('what each thread loads at start (dist/, built by npm test)', () => {
  it('a provider worker runs one bundled file with msgpackr and undici in it; zod is in a chunk it imports only for a body the hand checks do not pass', () => {
    const entry = readFileSync(join(root, 'dist/worker/entry.js'), 'utf8');
    const inEntry = bundledPackages('dist/worker/entry.js');
    expect(inEntry).toContain('msgpackr');
    expect(inEntry).toContain('undici');
    expect(inEntry).not.toContain('zod');
    const zodChunks = workerBundle().filter((f) => bundledPackages(`dist/worker/${f}`).has('zod'));
    expect(zodChunks).toHaveLength(1);
    const chunk = zodChunks[0] as string;
    expect(entry).toContain(`import("./${chunk}")`);
    const staticImports = [...entry.matchAll(STATIC_IMPORT)].map(([, specifier]) => specifier);
    expect(staticImports).not.toContain(`./${chunk}`);
  });

  it("piscina loads a worker through dist/worker/entry.cjs: CommonJS, so piscina's require() never takes Node's require(esm) path (which aborted a CI process once); it imports entry.js and hands the attach task to entry.js's default export", async () => {
    const require = createRequire(import.meta.url);
    const loader = join(root, 'dist/worker/entry.cjs');
    const attach = require(loader) as (task: unknown) => Promise<void>;
    expect(typeof attach).toBe('function');
    // A CommonJS module: required, it is in require's cache under its own (real) name, with no ES module namespace.
    const cached = require.cache[require.resolve(loader)];
    expect(cached?.loaded).toBe(true);
    expect(Object.prototype.toString.call(cached?.exports)).not.toBe('[object Module]');
    // What answers is entry.js's attach: a task of another protocol version is refused by it.
    await expect(attach({ protocol: -1 })).rejects.toThrow(/protocol mismatch: front speaks -1/);
  });

  it("a provider worker bundles undici's Pool and what it needs, not undici's index (fetch, WebSocket, caches: 3× the load time)", () => {
    const files = bundledUndiciFiles('dist/worker/entry.js');
    expect(files).toContain('lib/dispatcher/pool.js');
    expect(files).not.toContain('index.js');
    expect(files).not.toContain('lib/web/fetch/index.js');
    // Pool's HTTP/1 client needs a few of fetch's helpers (body.js and what it imports), none of these.
    expect(files.filter((f) => /^lib\/(web\/(websocket|cache|eventsource)|mock|interceptor)\//.test(f))).toEqual([]);
  });

  it("the AWS packages (bedrock's signer and event-stream codec) are in no thread's start: a worker imports their chunks on its first bedrock call, an inline front from node_modules", () => {
    const smithy = (file: string) => [...bundledPackages(file)].filter((name) => name.startsWith('@smithy/'));
    expect(smithy('dist/worker/entry.js')).toEqual([]);
    expect(smithy('dist/server.js')).toEqual([]);
    const signerChunk = workerBundle().find((f) => bundledPackages(`dist/worker/${f}`).has('@smithy/signature-v4'));
    expect(signerChunk).toBeDefined();
    const entry = readFileSync(join(root, 'dist/worker/entry.js'), 'utf8');
    expect(entry).toContain(`import("./${signerChunk as string}")`);
    expect([...entry.matchAll(STATIC_IMPORT)].map(([, specifier]) => specifier)).not.toContain(`./${signerChunk as string}`);
    const front = readFileSync(join(root, 'dist/server.js'), 'utf8');
    expect(front).toContain('import("@smithy/signature-v4")');
    expect([...front.matchAll(STATIC_IMPORT)].map(([, specifier]) => specifier).filter((s) => s?.startsWith('@smithy/'))).toEqual([]);
  });

  it("the o200k tokenizer (gpt-tokenizer, count_tokens' local estimate) is in no thread's start: a worker imports its chunk on its first count, an inline front from node_modules", () => {
    expect(bundledPackages('dist/worker/entry.js')).not.toContain('gpt-tokenizer');
    expect(bundledPackages('dist/server.js')).not.toContain('gpt-tokenizer');
    const chunks = workerBundle().filter((f) => bundledPackages(`dist/worker/${f}`).has('gpt-tokenizer'));
    expect(chunks).toHaveLength(1);
    const entry = readFileSync(join(root, 'dist/worker/entry.js'), 'utf8');
    expect(entry).toContain(`import("./${chunks[0] as string}")`);
    expect([...entry.matchAll(STATIC_IMPORT)].map(([, specifier]) => specifier)).not.toContain(`./${chunks[0] as string}`);
    const front = readFileSync(join(root, 'dist/server.js'), 'utf8');
    expect(front).toContain('import("gpt-tokenizer/encoding/o200k_base")');
    expect([...front.matchAll(STATIC_IMPORT)].map(([, specifier]) => specifier).filter((s) => s?.startsWith('gpt-tokenizer'))).toEqual([]);
    // tsc's output, which the library export runs: no static import on either thread's start.
    expect(packagesLoadedAtStart('dist/workers/entry.js')).not.toContain('gpt-tokenizer');
    expect(packagesLoadedAtStart('dist/src/main.js')).not.toContain('gpt-tokenizer');
  });

  it("the AWS credential chain (@aws-sdk/credential-provider-node) is in no bundle and no thread's start: a worker and an inline front import it from node_modules, with import()", () => {
    const awsSdk = (file: string) => [...bundledPackages(file)].filter((name) => name.startsWith('@aws-sdk/'));
    for (const file of ['dist/server.js', ...workerBundle().map((f) => `dist/worker/${f}`)]) expect(awsSdk(file), file).toEqual([]);
    for (const file of ['dist/worker/entry.js', 'dist/server.js']) {
      const text = readFileSync(join(root, file), 'utf8');
      expect(text, file).toContain('import("@aws-sdk/credential-provider-node")');
      expect([...text.matchAll(STATIC_IMPORT)].map(([, specifier]) => specifier).filter((s) => s?.startsWith('@aws-sdk/')), file).toEqual([]);
    }
    // tsc's output, which the library export runs: no static import of it on either thread's start.
    expect([...packagesLoadedAtStart('dist/workers/entry.js')].filter((name) => name.startsWith('@aws-sdk/'))).toEqual([]);
    expect([...packagesLoadedAtStart('dist/src/main.js')].filter((name) => name.startsWith('@aws-sdk/'))).toEqual([]);
  });

  it('a running gateway loads the AWS credential chain in the worker that makes the first call of a bedrock deployment without keys, and nowhere else', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-aws-probe-'));
    const config = join(dir, 'gateway.yaml');
    // The chain finds nothing here (no instance metadata, no ~/.aws), so it never leaves the process; loading it is what is counted.
    writeFileSync(config, `model_list:\n  - model_name: chat\n    params: { model: mock/chat }\n  - model_name: claude\n    params: { model: bedrock/anthropic.claude-fake-v1:0, api_base: "http://127.0.0.1:${REFUSED_PORT}", aws_region_name: us-east-1 }\n`);
    const proc = spawnGateway({
      env: {
        GATEWAY_API_KEY: 'k',
        GATEWAY_WORKERS: '2',
        GATEWAY_DRAIN_DELAY: '0',
        GATEWAY_CONFIG: config,
        NODE_OPTIONS: `--require=${join(root, 'test/support/aws-sdk-probe.cjs')}`,
        AWS_SDK_PROBE_DIR: dir,
        HOME: dir,
        AWS_CONFIG_FILE: join(dir, 'no-config'),
        AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-credentials'),
        AWS_EC2_METADATA_DISABLED: 'true',
      },
    });
    const loadedBy = () => Object.fromEntries(readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => [f.replace(/\.json$/, ''), JSON.parse(readFileSync(join(dir, f), 'utf8')) as string[]]));
    try {
      const { port } = await proc.listening();
      const chat = (model: string) =>
        fetch(`http://127.0.0.1:${String(port)}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
      expect((await chat('chat')).status).toBe(200);
      const answer = await chat('claude');
      expect(answer.status).toBe(502);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('upstream_credentials_unavailable');
      const chainLoaded = () => Object.entries(loadedBy()).filter(([, names]) => names.includes('@aws-sdk/credential-provider-node'));
      await until(() => chainLoaded().length > 0, 'a thread that loaded the credential chain', 2000, 10);
      const threads = loadedBy();
      expect(Object.keys(threads).sort(), JSON.stringify(threads)).toEqual(['front', expect.stringMatching(/^worker-\d+$/), expect.stringMatching(/^worker-\d+$/)]);
      expect(chainLoaded().map(([thread]) => thread)).toEqual([expect.stringMatching(/^worker-\d+$/)]);
      // The front and the worker that served no bedrock call loaded no AWS SDK package at all.
      expect(Object.entries(threads).filter(([, names]) => names.length > 0)).toEqual(chainLoaded());
    } finally {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the front loads uWS, zod (config, manifest) and prom-client but not undici: the worker session is imported only in inline mode; no OpenTelemetry package either', () => {
    const front = packagesLoadedAtStart('dist/src/main.js');
    expect(front).toContain('uWebSockets.js');
    expect(front).toContain('zod');
    expect(front).toContain('prom-client');
    expect(front).not.toContain('undici');
    expect([...front].filter((name) => name.startsWith('@opentelemetry/'))).toEqual([]);
    // The Redis client is imported (import()) only with a redis_url (src/shared-state/fleet.ts).
    expect(front).not.toContain('@redis/client');
  });

  it('npm start runs the front bundled in one file (dist/server.js), piscina in it, with only the native addon and OpenTelemetry left to node_modules', () => {
    const bundled = bundledPackages('dist/server.js');
    for (const name of ['zod', 'prom-client', 'pino', 'yaml', 'msgpackr', 'piscina']) expect(bundled).toContain(name);
    expect(bundled).not.toContain('uWebSockets.js');
    // Tracing's SDK is imported (import()) from node_modules when tracing starts, never bundled into the front.
    expect([...bundled].filter((name) => name.startsWith('@opentelemetry/'))).toEqual([]);
    expect([...bundled].filter((name) => name.startsWith('@redis/'))).toEqual([]);
    for (const name of workerBundle()) expect(readFileSync(join(root, 'dist/worker', name), 'utf8')).not.toContain('@opentelemetry/');
    // undici's Pool is there for inline mode's session, behind the import() that only inline mode makes.
    expect(bundledUndiciFiles('dist/server.js')).toContain('lib/dispatcher/pool.js');
  });

  it('a running front with tracing off loads no OpenTelemetry module, not even the API prom-client requires; with tracing on it loads the SDK', async () => {
    const probe = join(root, 'test/support/opentelemetry-probe.mjs');
    const loaded = async (env: Record<string, string>): Promise<number> => {
      const proc = spawnGateway({ env: { GATEWAY_API_KEY: 'k', GATEWAY_WORKERS: '1', GATEWAY_DRAIN_DELAY: '0', NODE_OPTIONS: `--import=${probe}`, ...env } });
      try {
        const { port } = await proc.listening();
        // The request path and a scrape (prom-client's CPU metric is the one that requires the API) run first.
        const chat = await fetch(`http://127.0.0.1:${String(port)}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'demo-chat', messages: [{ role: 'user', content: 'hi' }] }),
        });
        expect(chat.status).toBe(200);
        expect((await fetch(`http://127.0.0.1:${String(port)}/metrics`)).status).toBe(200);
      } finally {
        await proc.stop();
      }
      const line = /opentelemetry modules loaded: (\d+)/.exec(proc.stderr());
      expect(line, proc.stderr()).not.toBeNull();
      return Number(line?.[1]);
    };
    expect(await loaded({})).toBe(0);
    // Nothing listens on the discard port: the spans are dropped, which is no matter here.
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toBeGreaterThan(50);
  });

  it('a running front loads the Redis client only with a redis_url (CONTRACT.md, Shared state across pods)', async () => {
    const probe = join(root, 'test/support/redis-client-probe.mjs');
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-redis-graph-'));
    const loaded = async (yaml: string | null): Promise<number> => {
      const env: Record<string, string> = { GATEWAY_API_KEY: 'k', GATEWAY_WORKERS: '1', GATEWAY_DRAIN_DELAY: '0', NODE_OPTIONS: `--import=${probe}` };
      if (yaml !== null) {
        writeFileSync(join(dir, 'config.yaml'), yaml);
        env.GATEWAY_CONFIG = join(dir, 'config.yaml');
      }
      const proc = spawnGateway({ env });
      try {
        const { port } = await proc.listening();
        const chat = await fetch(`http://127.0.0.1:${String(port)}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
          body: JSON.stringify({ model: yaml === null ? 'demo-chat' : 'chat', messages: [{ role: 'user', content: 'hi' }] }),
        });
        expect(chat.status).toBe(200);
      } finally {
        await proc.stop();
      }
      const line = /redis client modules loaded: (\d+)/.exec(proc.stderr());
      expect(line, proc.stderr()).not.toBeNull();
      return Number(line?.[1]);
    };
    try {
      expect(await loaded(null)).toBe(0);
      // Nothing listens there: the pod serves on its own (degraded), and has loaded the client to try.
      expect(await loaded(`model_list:\n  - model_name: chat\n    params: { model: mock/chat, rpm: 100 }\nrouter_settings: { redis_url: "redis://127.0.0.1:${REFUSED_PORT}" }\n`)).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the bundles are ASCII only: one wider character would make V8 hold all of a file\'s source at two bytes each', () => {
    for (const file of ['dist/server.js', ...workerBundle().map((f) => `dist/worker/${f}`)]) {
      // eslint-disable-next-line no-control-regex -- ASCII is \x00 to \x7f, NUL included
      const wide = readFileSync(join(root, file), 'utf8').match(/[^\x00-\x7f]/gu) ?? [];
      expect(wide, file).toEqual([]);
    }
  });
});
