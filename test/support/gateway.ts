/**
 * Starts the real gateway for a test: real uWS server on an ephemeral
 * loopback port, real worker threads, logs captured as parsed JSON lines.
 */
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { parseConfig, type GatewayConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { createLogger } from '../../src/logging.js';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js';

export const TEST_KEY = 'sk-gateway-test-key-0123456789';
export const UPSTREAM_KEY = 'sk-upstream-secret-abcdef';

export interface TestGateway {
  readonly gateway: Gateway;
  readonly config: GatewayConfig;
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly key: string;
  /** Every log line, raw. */
  readonly rawLogs: string[];
  /** Every log line, parsed. */
  logs(): Array<Record<string, unknown>>;
  /** The official openai SDK pointed at the gateway. */
  client(options?: { apiKey?: string; maxRetries?: number }): OpenAI;
  /** fetch against the gateway with the bearer token set (unless `auth: false`). */
  fetch(path: string, init?: RequestInit & { auth?: boolean }): Promise<Response>;
  close(): Promise<void>;
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
  yaml?: string;
  upstream?: FakeUpstream;
  env?: Record<string, string>;
  workers?: number;
}

export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const yaml = options.yaml ?? defaultYaml(options.upstream);
  const env = { GATEWAY_API_KEY: TEST_KEY, HOST: '127.0.0.1', PORT: '0', GATEWAY_WORKERS: String(options.workers ?? 2), LOG_LEVEL: 'info', ...options.env };
  const config = parseConfig(yaml, 'test-config.yaml', env);
  const rawLogs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) rawLogs.push(line);
      done();
    },
  });
  const log = createLogger(config.logLevel, sink);
  const gateway = await startGateway(config, log);
  const key = config.apiKeys[0] as string;
  return {
    gateway,
    config,
    url: gateway.url,
    key,
    rawLogs,
    logs: () => rawLogs.map((l) => JSON.parse(l) as Record<string, unknown>),
    client: (o = {}) => new OpenAI({ apiKey: o.apiKey ?? key, baseURL: `${gateway.url}/v1`, maxRetries: o.maxRetries ?? 0, timeout: 10_000 }),
    fetch: (path, init = {}) => {
      const { auth = true, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (auth && !headers.has('authorization')) headers.set('authorization', `Bearer ${key}`);
      if (rest.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
      return fetch(`${gateway.url}${path}`, { ...rest, headers });
    },
    close: () => gateway.close(),
  };
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

/**
 * A fake upstream and a gateway in front of it, for the enclosing `describe`
 * (or file): both start before its first test and close after its last, and
 * the upstream's record is reset before each test. `options` builds the
 * gateway's options from the upstream (for configs that name its URL).
 *
 * The two values are stand-ins until `beforeAll` has run (a Proxy that
 * forwards to the real object), so a block can destructure them once:
 * `const { gw, upstream } = useGatewayWithUpstream();`
 */
export function useGatewayWithUpstream(
  options: (upstream: FakeUpstream) => TestGatewayOptions | Promise<TestGatewayOptions> = () => ({}),
): { readonly gw: TestGateway; readonly upstream: FakeUpstream } {
  const started: { gw?: TestGateway; upstream?: FakeUpstream } = {};
  beforeAll(async () => {
    started.upstream = await startFakeUpstream();
    started.gw = await startTestGateway({ ...(await options(started.upstream)), upstream: started.upstream });
  });
  afterAll(async () => {
    await started.gw?.close();
    await started.upstream?.close();
  });
  beforeEach(() => started.upstream?.reset());
  return { gw: standIn(() => started.gw, 'gw'), upstream: standIn(() => started.upstream, 'upstream') };
}

function standIn<T extends object>(current: () => T | undefined, name: string): T {
  const target = (): T => {
    const value = current();
    if (value === undefined) throw new Error(`useGatewayWithUpstream: ${name} is used before beforeAll started it`);
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
