/**
 * Starts the real gateway for a test: real uWS server on an ephemeral
 * loopback port, real worker threads, logs captured as parsed JSON lines.
 *
 * A test file wants `useGateway` (at the end): fake upstreams and a gateway
 * in front of them for a `describe` block, started and closed by vitest hooks.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { parseConfig, type GatewayConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { createLogger } from '../../src/logging.js';
import { startFakeUpstream, UPSTREAM_KEY, type FakeUpstream, type RecordedRequest } from './fake-upstream.js';
import { spawnGateway, type GatewayProcess, type SpawnGatewayOptions } from './gateway-process.js';

export const TEST_KEY = 'sk-gateway-test-key-0123456789';
/** The key the fake upstreams take (fake-upstream.ts), which `defaultYaml` gives its upstream aliases. */
export { UPSTREAM_KEY };

/** What a test talks to, whichever way the gateway runs. */
export interface GatewayEndpoint {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly port: number;
  /** The bearer token the gateway accepts (its first key). */
  readonly key: string;
  /** The official openai SDK pointed at the gateway. */
  client(options?: { apiKey?: string; maxRetries?: number }): OpenAI;
  /** fetch against the gateway with the bearer token set (unless `auth: false`). */
  fetch(path: string, init?: RequestInit & { auth?: boolean }): Promise<Response>;
  close(): Promise<void>;
}

/** A gateway in this process: its internals are at hand. */
export interface TestGateway extends GatewayEndpoint {
  readonly gateway: Gateway;
  readonly config: GatewayConfig;
  /** Every log line, raw. */
  readonly rawLogs: string[];
  /** Every log line, parsed. */
  logs(): Array<Record<string, unknown>>;
}

/** The built server as a child process (`useGateway({ process: … })`). */
export interface TestGatewayProcess extends GatewayEndpoint {
  readonly proc: GatewayProcess;
}

/** A config with upstream-backed and mock-backed aliases; `upstream` fills in the api_base. */
export function defaultYaml(upstream?: FakeUpstream): string {
  const up = upstream
    ? `
  - model_name: up-chat
    params: { model: openai/fake-model, api_base: ${upstream.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: up-embed
    params: { model: openai/fake-embed, api_base: ${upstream.url}, api_key: ${UPSTREAM_KEY} }`
    : '';
  const rules = upstream
    ? `
route_rules:
  - provider: openai
    models: ["gpt-*", "o3*"]
    params: { api_base: ${upstream.url}, api_key: ${UPSTREAM_KEY} }`
    : '';
  return `
model_list:${up}
  - model_name: mock-chat
    params: { model: mock/chat-small, mock_stream_chunks: 5 }
  - model_name: mock-embed
    params: { model: mock/embed-small, mock_embedding_dimensions: 8 }
${rules}
`;
}

export interface TestGatewayOptions {
  /** The config file's text (default: `defaultYaml(upstream)`). */
  yaml?: string;
  upstream?: FakeUpstream;
  /** Variables on top of the test defaults (TEST_KEY, PORT=0, LOG_LEVEL=info…). */
  env?: Record<string, string>;
  /** GATEWAY_WORKERS (default 2; 0 runs the session inline). */
  workers?: number;
}

/** The gateway's environment for a test: the defaults, then `defaults`, then the test's own `env`. */
function testEnv(options: TestGatewayOptions, defaults: Record<string, string> = {}): Record<string, string> {
  return { GATEWAY_API_KEY: TEST_KEY, HOST: '127.0.0.1', PORT: '0', GATEWAY_WORKERS: String(options.workers ?? 2), LOG_LEVEL: 'info', ...defaults, ...options.env };
}

/** The SDK client and the authenticated fetch of a gateway at `url` that accepts `key`. */
function endpoint(url: string, key: string, close: () => Promise<void>): GatewayEndpoint {
  return {
    url,
    port: Number(new URL(url).port),
    key,
    client: (o = {}) => new OpenAI({ apiKey: o.apiKey ?? key, baseURL: `${url}/v1`, maxRetries: o.maxRetries ?? 0, timeout: 10_000 }),
    fetch: (path, init = {}) => {
      const { auth = true, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (auth && !headers.has('authorization')) headers.set('authorization', `Bearer ${key}`);
      if (rest.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
      return fetch(`${url}${path}`, { ...rest, headers });
    },
    close,
  };
}

/** Starts a gateway in this process; the caller closes it. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const yaml = options.yaml ?? defaultYaml(options.upstream);
  const config = parseConfig(yaml, 'test-config.yaml', testEnv(options));
  const rawLogs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) rawLogs.push(line);
      done();
    },
  });
  const log = createLogger(config.logLevel, sink);
  const gateway = await startGateway(config, log);
  return {
    ...endpoint(gateway.url, config.apiKeys[0] as string, () => gateway.close()),
    gateway,
    config,
    rawLogs,
    logs: () => rawLogs.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** What `useGateway({ process })` passes on to `spawnGateway` (the config and env come from the gateway's options). */
export type ProcessOptions = Pick<SpawnGatewayOptions, 'npmStart' | 'onLine' | 'keepStdout'>;

/**
 * Starts the built server as a child process with the config written to a temporary file and
 * GATEWAY_DRAIN_DELAY=0; resolves once it has logged its `listening` line. The caller closes it.
 */
export async function startTestGatewayProcess(options: TestGatewayOptions & ProcessOptions = {}): Promise<TestGatewayProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-gateway-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, options.yaml ?? defaultYaml(options.upstream));
  const env = testEnv(options, { GATEWAY_DRAIN_DELAY: '0' });
  const proc = spawnGateway({ npmStart: options.npmStart, onLine: options.onLine, keepStdout: options.keepStdout, env: { ...env, GATEWAY_CONFIG: file } });
  const close = async () => {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const { port } = await proc.listening();
    return { ...endpoint(`http://127.0.0.1:${String(port)}`, env.GATEWAY_API_KEY as string, close), proc };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Asserts that neither the gateway key nor the upstream key appears, raw,
 * URL-encoded, base64, base64url or hex, in any captured log line or in the
 * answers of the routes that report on the gateway.
 */
export async function expectNoKeyLeak(gw: TestGateway, keys: readonly string[] = [TEST_KEY, UPSTREAM_KEY]): Promise<void> {
  const texts: string[] = [gw.rawLogs.join('\n')];
  for (const path of ['/metrics', '/status', '/status/models', '/health', '/ready', '/v1/models']) {
    const res = await gw.fetch(path, { signal: AbortSignal.timeout(5000) });
    texts.push(`${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${await res.text()}`);
  }
  const all = texts.join('\n');
  for (const key of keys) {
    for (const form of [key, encodeURIComponent(key), Buffer.from(key).toString('base64'), Buffer.from(key).toString('base64url'), Buffer.from(key).toString('hex')]) {
      expect(all.includes(form), `${form} leaked`).toBe(false);
    }
  }
}

/** N fake upstreams, as a tuple (`[a, b]` for 2) when N is a literal. */
export type Upstreams<N extends number, R extends FakeUpstream[] = []> = number extends N ? FakeUpstream[] : R['length'] extends N ? R : Upstreams<N, [...R, FakeUpstream]>;

/** The gateway's options, as they are or built from the upstreams once they run (for configs that name their URLs). */
export type GatewayOptionsSource<N extends number = 1> = TestGatewayOptions | ((...upstreams: Upstreams<N>) => TestGatewayOptions | Promise<TestGatewayOptions>);

export interface UseGatewayOptions<N extends number = 1> {
  /** How many fake upstreams to start first (default 1); `upstream` is the first. */
  upstreams?: N;
  /** The key the upstreams take (default UPSTREAM_KEY); null: keyless (a self-hosted server that asks for none). */
  upstreamKey?: string | null;
  /**
   * The gateway's options (yaml, env, workers). Its `upstream` defaults to the first upstream, so
   * the default config points at it. `false`: no gateway in `beforeAll`; the tests start theirs with `start`.
   */
  gateway?: GatewayOptionsSource<N> | false;
  /** Reset every upstream (record, behaviour, counters) before each test (default true). */
  resetUpstreams?: boolean;
  /** Run the built server as a child process (`true`, or with `npm start`'s flags and a line callback) instead of in this process. */
  process?: ProcessOptions | true;
}

export interface GatewayFixture<G extends GatewayEndpoint, N extends number = 1> {
  readonly gw: G;
  /** The first upstream. */
  readonly upstream: FakeUpstream;
  readonly upstreams: Readonly<Upstreams<N>>;
  /** Starts another gateway in this process (options as for the fixture's own), closed with the fixture. */
  start(options?: TestGatewayOptions): Promise<TestGateway>;
}

/**
 * Fake upstreams and a gateway in front of them, for the enclosing `describe`
 * (or file): they start before its first test and close after its last, and
 * the upstreams are reset before each test. After each test, a request an
 * upstream refused (a wrong or missing key, a path it does not serve) and the
 * test did not take (`upstream.takeRefusals()`) fails it. Everything the fixture returns is
 * a stand-in until `beforeAll` has run (a Proxy that forwards to the real
 * object), so a block can destructure it once, at registration.
 *
 * @example
 * describe('chat', () => {
 *   // One upstream, the default config (up-chat, up-embed, mock-chat, mock-embed, gpt-* rule), two workers.
 *   const { gw, upstream } = useGateway();
 *   it('forwards', async () => {
 *     await gw.client().chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'hi' }] });
 *     expect(upstream.requests).toHaveLength(1);
 *   });
 * });
 *
 * // A config that names the upstream, extra env, inline mode:
 * useGateway({ gateway: (upstream) => ({ yaml: `${defaultYaml(upstream)}\nhealth: { cache_ttl: 0 }\n`, env: { GATEWAY_MAX_BODY_BYTES: '1024' }, workers: 0 }) });
 * // No upstream, mock aliases only:            useGateway({ upstreams: 0, gateway: { yaml } });
 * // Two upstreams:                             const { upstreams: [a, b] } = useGateway({ upstreams: 2, gateway: (a, b) => ({ yaml }) });
 * // Upstreams that take another key, or none:  useGateway({ upstreamKey: 'sk-other', gateway: … }); useGateway({ upstreamKey: null, gateway: … })
 * // Gateways started by the tests themselves:  const { start } = useGateway({ gateway: false }); … const gw = await start({ yaml });
 * // The built server as a process (npm start): const { gw } = useGateway({ process: { npmStart: true } }); gw.proc.pid
 *
 * A gateway that must live for one test only stays `startTestGateway` with a `try`/`finally` close;
 * a process whose start may fail is `spawnGateway` (./gateway-process.ts).
 */
export function useGateway<N extends number = 1>(options: UseGatewayOptions<N> & { process: ProcessOptions | true; gateway?: GatewayOptionsSource<N> }): GatewayFixture<TestGatewayProcess, N>;
export function useGateway<N extends number = 1>(options?: UseGatewayOptions<N> & { process?: undefined }): GatewayFixture<TestGateway, N>;
export function useGateway(options: UseGatewayOptions<number> = {}): GatewayFixture<GatewayEndpoint, number> {
  const count = options.upstreams ?? 1;
  const started: { upstreams: FakeUpstream[]; gw?: GatewayEndpoint; more: TestGateway[] } = { upstreams: [], more: [] };
  const first = () => started.upstreams[0];
  beforeAll(async () => {
    for (let i = 0; i < count; i++) started.upstreams.push(await startFakeUpstream({ key: options.upstreamKey }));
    const source = options.gateway ?? {};
    if (source === false) return;
    const built = { upstream: first(), ...(typeof source === 'function' ? await source(...started.upstreams) : source) };
    const child = options.process;
    started.gw = child ? await startTestGatewayProcess({ ...built, ...(child === true ? {} : child) }) : await startTestGateway(built);
  });
  afterAll(async () => {
    for (const gw of [...started.more.splice(0), started.gw]) await gw?.close();
    for (const upstream of started.upstreams.splice(0)) await upstream.close();
  });
  if (options.resetUpstreams !== false) beforeEach(() => started.upstreams.forEach((upstream) => upstream.reset()));
  // A request the gateway sent with a wrong key or to a path the provider does not serve fails the test that sent it
  // (issue 34, point 2), whatever the test asserts; a test that provokes a refusal on purpose takes it (takeRefusals).
  afterEach(() => started.upstreams.forEach((upstream, i) => expectNoRefusals(upstream, `upstreams[${i}]`)));
  return {
    gw: standIn(() => started.gw, 'gw'),
    upstream: standIn(first, 'upstream'),
    upstreams: Array.from({ length: count }, (_, i) => standIn(() => started.upstreams[i], `upstreams[${i}]`)),
    start: async (more = {}) => {
      const gw = await startTestGateway({ upstream: first(), ...more });
      started.more.push(gw);
      return gw;
    },
  };
}

/** @deprecated `useGateway({ gateway: options })`, which this is; kept for test files written against it on branches not merged yet. */
export function useGatewayWithUpstream(options: (upstream: FakeUpstream) => TestGatewayOptions | Promise<TestGatewayOptions> = () => ({})): GatewayFixture<TestGateway> {
  return useGateway({ gateway: options });
}

/** `METHOD path (refused: why, key: …)`, one line per request, for an assertion's diff. */
export function describeRequests(requests: readonly RecordedRequest[]): string[] {
  return requests.map((r) => `${r.method} ${r.path} (${r.refused === null ? 'served' : `refused: ${r.refused}`}, key: ${r.key ?? 'none'})`);
}

/** Fails when `upstream` refused a request (a wrong or missing key, a path it does not serve) that no test took. */
export function expectNoRefusals(upstream: FakeUpstream, name = 'upstream'): void {
  expect(describeRequests(upstream.refusals()), `${name} refused these requests, as the real service would`).toEqual([]);
}

function standIn<T extends object>(current: () => T | undefined, name: string): T {
  const target = (): T => {
    const value = current();
    if (value === undefined) throw new Error(`useGateway: ${name} is used before beforeAll started it (or was not asked for)`);
    return value;
  };
  return new Proxy({} as T, {
    get(_, property) {
      const real = target();
      const value: unknown = Reflect.get(real, property, real);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(real) : value;
    },
    has: (_, property) => Reflect.has(target(), property),
  });
}
