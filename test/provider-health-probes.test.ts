/**
 * The health probe of each translated provider (spec 001: an upstream check asks the provider
 * something free): one table, one row per provider, each row the probe's method, path and
 * credentials as its fake (test/support/<provider>-upstream.ts) checks them. One gateway serves
 * all four fakes, each at its own origin; with `cache_ttl: 0` every /health is one run, and a run
 * probes each origin exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANTHROPIC_KEY, ANTHROPIC_VERSION, startAnthropicUpstream } from './support/anthropic-upstream.js';
import { AZURE_KEY, startAzureUpstream } from './support/azure-upstream.js';
import { AWS_KEYS, BEDROCK_REGION, startBedrockUpstream } from './support/bedrock-upstream.js';
import { GEMINI_KEY, startGeminiUpstream } from './support/gemini-upstream.js';
import { useGateway } from './support/gateway.js';
import type { FakeRequest, FakeServer } from './support/http-fake.js';
import { until } from './support/waits.js';

interface Fake extends FakeServer {
  readonly url: string;
  reset(): void;
}

interface ProbeRow {
  readonly provider: string;
  /** What the probe is, for the test's name. */
  readonly probe: string;
  start(): Promise<Fake>;
  /** The deployment's params, pointing at the fake. */
  params(url: string): string;
  readonly method: string;
  readonly path: string;
  /** Its query and credentials, as the provider's API reference has them. */
  expectProbe(probe: FakeRequest, fake: Fake): void;
}

const ROWS: readonly ProbeRow[] = [
  {
    provider: 'anthropic',
    probe: 'the free model list, with x-api-key and anthropic-version',
    start: () => startAnthropicUpstream(),
    params: (url) => `model: anthropic/claude-fake-1, api_base: ${url}, api_key: ${ANTHROPIC_KEY}`,
    method: 'GET',
    path: '/v1/models',
    expectProbe: (probe) => {
      expect(probe.headers['x-api-key']).toBe(ANTHROPIC_KEY);
      expect(probe.headers['anthropic-version']).toBe(ANTHROPIC_VERSION);
      expect(probe.headers.authorization).toBeUndefined();
    },
  },
  {
    provider: 'azure',
    probe: 'the free model list, with api-version and api-key',
    start: () => startAzureUpstream(),
    params: (url) => `model: azure/gpt-4o-deploy, api_base: ${url}, api_key: ${AZURE_KEY}`,
    method: 'GET',
    path: '/openai/models',
    expectProbe: (probe) => {
      expect(probe.query.get('api-version')).toBe('2024-10-21');
      expect(probe.headers['api-key']).toBe(AZURE_KEY);
      expect(probe.headers.authorization).toBeUndefined();
    },
  },
  {
    provider: 'gemini',
    probe: 'the free model list (pageSize=1), with x-goog-api-key',
    start: () => startGeminiUpstream(),
    params: (url) => `model: gemini/gemini-2.5-flash, api_base: ${url}, api_key: ${GEMINI_KEY}`,
    method: 'GET',
    path: '/v1beta/models',
    expectProbe: (probe) => {
      expect(probe.query.get('pageSize')).toBe('1');
      expect(probe.headers['x-goog-api-key']).toBe(GEMINI_KEY);
      expect(probe.query.get('key')).toBeNull();
    },
  },
  {
    provider: 'bedrock',
    probe: 'ListAsyncInvokes (maxResults=1), which bills nothing, signed with SigV4',
    start: () => startBedrockUpstream(),
    params: (url) => `model: bedrock/anthropic.claude-fake-v1:0, api_base: ${url}, aws_access_key_id: ${AWS_KEYS.accessKeyId}, aws_secret_access_key: "${AWS_KEYS.secretAccessKey}", aws_region_name: ${BEDROCK_REGION}`,
    method: 'GET',
    path: '/async-invoke',
    expectProbe: (probe, fake) => {
      expect(probe.query.get('maxResults')).toBe('1');
      expect(String(probe.headers.authorization)).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${AWS_KEYS.accessKeyId}/\\d{8}/${BEDROCK_REGION}/bedrock/aws4_request, `));
      // The fake verified the signature with its own SigV4 verifier (test/support/sigv4.ts).
      expect((fake as Fake & { refused: string[] }).refused).toEqual([]);
    },
  },
];

const fakes = new Map<string, Fake>();
beforeAll(async () => {
  for (const row of ROWS) fakes.set(row.provider, await row.start());
});
afterAll(async () => {
  for (const fake of fakes.values()) await fake.close();
});

const { gw } = useGateway({
  upstreams: 0,
  gateway: () => ({
    yaml: `
model_list:${ROWS.map((row) => `
  - model_name: ${row.provider}
    params: { ${row.params((fakes.get(row.provider) as Fake).url)} }`).join('')}
health: { cache_ttl: 0 }
`,
  }),
});

interface Report {
  checks: Array<{ name: string; status: string; reason?: string }>;
}

/** One /health run whose upstream checks all completed (not the `health_run` stand-in of a run past the probe budget). */
async function completedRun(): Promise<Report> {
  const report = (await (await gw.fetch('/health', { auth: false })).json()) as Report;
  expect(report.checks.map((c) => c.name)).not.toContain('health_run');
  return report;
}

beforeAll(async () => {
  // Workers that have attached answer the pool's pings: only then is a run sure to finish within the probe budget.
  await until(async () => (await gw.fetch('/ready', { auth: false })).status === 200, 'the gateway ready', 5000, 25);
});

describe.each(ROWS)('$provider: the health probe', (row) => {
  it(`upstream:<origin> is ${row.probe}: one request per run`, async () => {
    const fake = fakes.get(row.provider) as Fake;
    fake.reset();
    const report = await completedRun();
    expect(report.checks.find((c) => c.name === `upstream:${new URL(fake.url).origin}`)).toEqual({ name: `upstream:${new URL(fake.url).origin}`, status: 'healthy', duration_ms: expect.any(Number) });
    // cache_ttl 0: this run probed once, and the probe is all the fake saw.
    expect(fake.received.map((r) => `${r.method} ${r.path}`)).toEqual([`${row.method} ${row.path}`]);
    row.expectProbe(fake.received[0] as FakeRequest, fake);
  });
});
