/**
 * Bedrock on the standard AWS credential chain (issue 33, part 2; CONTRACT.md,
 * Native providers): a deployment with no aws_* params and no AWS_* keys in
 * the environment signs with what the SDK's own chain finds, as AWS workloads
 * have it. The real gateway runs as its own process (the chain reads the
 * process environment, which every worker thread shares), in front of the
 * fake Bedrock runtime (which verifies every SigV4 signature, session token
 * included) and the fake STS and container credentials endpoints (proved by
 * the SDK's chain in test/support/aws-credential-fakes.test.ts):
 * - web identity (EKS IRSA): AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, STS
 *   reached through the SDK's endpoint override AWS_ENDPOINT_URL_STS;
 * - container credentials (EKS Pod Identity): AWS_CONTAINER_CREDENTIALS_FULL_URI
 *   + AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE;
 * - credentials near their expiry are refreshed before it, and the calls are
 *   signed with the new set from then on;
 * - a chain with no source, or one that STS refuses, answers 502
 *   upstream_credentials_unavailable naming the sources tried, shows it in
 *   /status/models and in one log line, and recovers when the token does;
 * - readiness: such a pod is ready once the chain has produced credentials,
 *   before any call, and not ready while it fails.
 * No test lets the chain reach the instance metadata address
 * (AWS_EC2_METADATA_DISABLED=true), read a real ~/.aws (HOME and the shared
 * files point into a temporary directory), or any address but loopback; no
 * token, key or secret appears in any answer or log line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAIN_WITH_NO_SOURCE, isolatedAwsEnv, startFakeContainerCredentials, startFakeSts, temporaryCredentials, type FakeContainerCredentials, type FakeSts, type TemporaryCredentials } from './support/aws-credential-fakes.js';
import { startBedrockUpstream, type BedrockUpstream } from './support/bedrock-upstream.js';
import { startTestGatewayProcess, type TestGatewayProcess } from './support/gateway.js';
import type { FakeRequest } from './support/http-fake.js';
import { until } from './support/waits.js';

const MODEL = 'anthropic.claude-fake-v1:0';
const ROLE_ARN = 'arn:aws:iam::123456789012:role/switchyard-bedrock';
const WEB_TOKEN = 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImlycmEifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Z2F0ZXdheTpzd2l0Y2h5YXJkIn0.aXJzYS1zaWduYXR1cmUtMDEyMzQ1Njc4OQ';
const STALE_TOKEN = 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImlycmEifQ.eyJzdWIiOiJzdGFsZSJ9.c3RhbGUtc2lnbmF0dXJlLTAxMjM0NTY3ODk';
const POD_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.cG9kLWlkZW50aXR5LWZha2UtMDEyMzQ1Njc4OQ.cG9kLXNpZ25hdHVyZS0wMTIzNDU2Nzg5';
const HOUR = 3_600_000;

let dir: string;
let bedrock: BedrockUpstream;
let sts: FakeSts;
let container: FakeContainerCredentials;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-chain-e2e-'));
  bedrock = await startBedrockUpstream();
  sts = await startFakeSts({ token: WEB_TOKEN, roleArn: ROLE_ARN });
  container = await startFakeContainerCredentials({ token: POD_TOKEN });
});
afterAll(async () => {
  await Promise.all([bedrock.close(), sts.close(), container.close()]);
  rmSync(dir, { recursive: true, force: true });
});

/**
 * No AWS credentials of any kind (spawnGateway passes no AWS_* variable of this process on), no
 * instance metadata, no real ~/.aws, one region.
 */
const isolated = (): Record<string, string> => isolatedAwsEnv(dir);

/** A token file as the kubelet mounts it (its content may change: a rotation). */
function tokenFile(name: string, token: string): string {
  const path = join(dir, name);
  writeFileSync(path, token);
  return path;
}

const webIdentity = (file: string): Record<string, string> => ({ AWS_WEB_IDENTITY_TOKEN_FILE: file, AWS_ROLE_ARN: ROLE_ARN, AWS_ENDPOINT_URL_STS: sts.url });

/** The gateway as its own process: one alias, a bedrock deployment with a region and nothing else. */
function startGateway(env: Record<string, string>, workers = 1): Promise<TestGatewayProcess> {
  const yaml = `
model_list:
  - model_name: claude
    params: { model: bedrock/${MODEL}, api_base: ${bedrock.url}, aws_region_name: us-east-1 }
health: { cache_ttl: 0 }
`;
  return startTestGatewayProcess({ yaml, workers, env: { ...isolated(), ...env } });
}

/** The Bedrock fake reset to take calls signed with `trusted` (besides its fixed identities), and a gateway started with `env`. */
function chainGateway(trusted: readonly TemporaryCredentials[], env: Record<string, string>, workers?: number): Promise<TestGatewayProcess> {
  bedrock.reset();
  for (const set of trusted) bedrock.trust(set);
  return startGateway(env, workers);
}

const chat = (gw: TestGatewayProcess, content: string, stream = false) => gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'claude', messages: [{ role: 'user', content }], stream }) });

/** The key id a request to the Bedrock fake was signed with, and the session token it carried. */
function signedWith(req: FakeRequest): { keyId: string | undefined; token: unknown; signedHeaders: string | undefined } {
  const authorization = String(req.headers.authorization);
  return { keyId: /Credential=([^/]+)\//.exec(authorization)?.[1], token: req.headers['x-amz-security-token'], signedHeaders: /SignedHeaders=([a-z0-9;-]+)/.exec(authorization)?.[1] };
}

/** /ready until a health run has reported provider_credentials (the first may still be under way). */
async function readiness(gw: TestGatewayProcess): Promise<{ status: number; check: Record<string, unknown> }> {
  for (let i = 0; i < 100; i++) {
    const res = await gw.fetch('/ready', { auth: false });
    const report = (await res.json()) as { checks: Array<Record<string, unknown>> };
    const check = report.checks.find((c) => c.name === 'provider_credentials');
    if (check !== undefined) return { status: res.status, check };
  }
  throw new Error('no health run reported provider_credentials');
}

/** The log lines of an event, once one has been written (the logger flushes every 200 ms at the latest). */
async function logged(gw: TestGatewayProcess, event: string): Promise<Array<Record<string, unknown>>> {
  return until(() => {
    const lines = gw.proc.lines().filter((line) => line.event === event);
    return lines.length > 0 && lines;
  }, `a ${event} line`, 3000, 10);
}

async function deploymentCredentials(gw: TestGatewayProcess): Promise<Record<string, unknown>> {
  const status = (await (await gw.fetch('/status/models/claude')).json()) as { credentials: string; credentials_source: string; deployments: Array<{ credentials: Record<string, unknown> }> };
  expect(status).toMatchObject({ credentials: 'aws_chain', credentials_source: 'aws_chain', routable: true });
  return status.deployments[0]?.credentials as Record<string, unknown>;
}

/** Neither a token nor a key nor a secret, in any form, in the process's output or in what the reporting routes answer. */
async function expectNoSecret(gw: TestGatewayProcess, secrets: readonly string[], answers: readonly string[] = []): Promise<void> {
  const texts = [gw.proc.stdout(), gw.proc.stderr(), ...answers];
  for (const path of ['/status', '/status/models', '/status/models/claude', '/health', '/ready', '/metrics', '/v1/models']) {
    const res = await gw.fetch(path);
    texts.push(`${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${await res.text()}`);
  }
  const all = texts.join('\n');
  for (const secret of secrets) {
    for (const form of [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('hex')]) expect(all.includes(form), `${form.slice(0, 12)}… leaked`).toBe(false);
  }
}

const secretsOf = (set: TemporaryCredentials) => [set.accessKeyId, set.secretAccessKey, set.sessionToken];

describe('web identity (EKS IRSA): AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN, STS through AWS_ENDPOINT_URL_STS', () => {
  const set = temporaryCredentials(HOUR);
  let gw: TestGatewayProcess;
  beforeAll(async () => {
    sts.reset(set);
    gw = await chainGateway([set], webIdentity(tokenFile('irsa-token', WEB_TOKEN)), 2);
  });
  afterAll(() => gw.close());

  it('is ready before any call: readiness asks a worker to resolve the chain, which calls STS once; status shows the credentials, never them', async () => {
    const { status, check } = await readiness(gw);
    expect(status, JSON.stringify(check)).toBe(200);
    expect(check.status).toBe('healthy');
    expect(sts.served()).toHaveLength(1);
    expect(bedrock.received).toEqual([]);
    expect(await deploymentCredentials(gw)).toEqual({ source: 'aws_chain', state: 'ok', expires_at: set.expiration.toISOString(), sdk_provider: 'fromTokenFile', error: null });
  });

  it('every call, whole or streamed, is signed with the temporary credentials STS gave, session token included (the fake verifies each signature)', async () => {
    const whole = await chat(gw, 'irsa');
    expect(whole.status).toBe(200);
    expect(((await whole.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe('Hello! You said: irsa');
    const streamed = await chat(gw, 'irsa stream', true);
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('data: [DONE]');
    expect(bedrock.refused).toEqual([]);
    const calls = bedrock.converse();
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(signedWith(call)).toEqual({ keyId: set.accessKeyId, token: set.sessionToken, signedHeaders: 'accept;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token' });
    }
  });

  it('no token, key or secret in any log line or answer', async () => {
    await expectNoSecret(gw, [WEB_TOKEN, ...secretsOf(set)]);
  });
});

describe('container credentials (EKS Pod Identity, ECS): AWS_CONTAINER_CREDENTIALS_FULL_URI with AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE', () => {
  const set = temporaryCredentials(HOUR);
  let gw: TestGatewayProcess;
  beforeAll(async () => {
    container.reset(set);
    gw = await chainGateway([set], { AWS_CONTAINER_CREDENTIALS_FULL_URI: container.url, AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: tokenFile('pod-token', POD_TOKEN) });
  });
  afterAll(() => gw.close());

  it('a call is signed with the credentials the endpoint gave for the pod token; status names the SDK provider', async () => {
    const res = await chat(gw, 'pod');
    expect(res.status).toBe(200);
    expect(bedrock.refused).toEqual([]);
    expect(container.served().map((r) => r.headers.authorization)).toEqual([POD_TOKEN]);
    expect(signedWith(bedrock.converse()[0] as FakeRequest)).toMatchObject({ keyId: set.accessKeyId, token: set.sessionToken });
    expect(await deploymentCredentials(gw)).toEqual({ source: 'aws_chain', state: 'ok', expires_at: set.expiration.toISOString(), sdk_provider: 'fromHttp/fromContainerMetadata', error: null });
    await expectNoSecret(gw, [POD_TOKEN, ...secretsOf(set)]);
  });
});

describe('inline (GATEWAY_WORKERS=0): the session on the front thread runs the same chain', () => {
  const set = temporaryCredentials(HOUR);
  let gw: TestGatewayProcess;
  beforeAll(async () => {
    sts.reset(set);
    gw = await chainGateway([set], webIdentity(tokenFile('inline-token', WEB_TOKEN)), 0);
  });
  afterAll(() => gw.close());

  it('ready through the chain, and a call signed with its credentials', async () => {
    expect((await readiness(gw)).status).toBe(200);
    expect((await chat(gw, 'inline')).status).toBe(200);
    expect(bedrock.refused).toEqual([]);
    expect(signedWith(bedrock.converse()[0] as FakeRequest)).toMatchObject({ keyId: set.accessKeyId, token: set.sessionToken });
    expect(sts.served()).toHaveLength(1);
    await expectNoSecret(gw, [WEB_TOKEN, ...secretsOf(set)]);
  });
});

describe('expiry and refresh', () => {
  // The SDK fetches new credentials once the ones it has are within 5 minutes of their expiry.
  const soon = temporaryCredentials(4 * 60_000);
  const later = temporaryCredentials(HOUR);
  let gw: TestGatewayProcess;
  beforeAll(async () => {
    sts.reset(soon, later);
    gw = await chainGateway([soon, later], webIdentity(tokenFile('refresh-token', WEB_TOKEN)));
  });
  afterAll(() => gw.close());

  it('credentials near their expiry are replaced before it: the calls are signed with the first set, then with the second from the refresh on, each with its own session token', async () => {
    expect((await chat(gw, 'one')).status).toBe(200);
    expect(await deploymentCredentials(gw)).toMatchObject({ state: 'ok', expires_at: soon.expiration.toISOString() });
    // The first set is within 5 minutes of its expiry: this call is signed with it, and the SDK fetches the next beside.
    expect((await chat(gw, 'two')).status).toBe(200);
    await sts.waitFor(() => sts.served().length === 2);
    // Calls until one is signed with the new set (the refresh's answer may still be on its way to the worker).
    for (let i = 0; i < 20 && signedWith(bedrock.converse().at(-1) as FakeRequest).keyId !== later.accessKeyId; i++) expect((await chat(gw, `more ${i}`)).status).toBe(200);
    expect((await chat(gw, 'after')).status).toBe(200);
    expect(bedrock.refused).toEqual([]);
    const keys = bedrock.converse().map((r) => signedWith(r));
    const switched = keys.findIndex((k) => k.keyId === later.accessKeyId);
    expect(switched).toBeGreaterThanOrEqual(2);
    expect(keys.slice(0, switched).every((k) => k.keyId === soon.accessKeyId && k.token === soon.sessionToken)).toBe(true);
    expect(keys.slice(switched).every((k) => k.keyId === later.accessKeyId && k.token === later.sessionToken)).toBe(true);
    // Before the first set expired, and without a third STS call.
    expect(Date.now()).toBeLessThan(soon.expiration.getTime());
    expect(sts.served()).toHaveLength(2);
    expect(await deploymentCredentials(gw)).toMatchObject({ state: 'ok', expires_at: later.expiration.toISOString(), sdk_provider: 'fromTokenFile' });
    await expectNoSecret(gw, [WEB_TOKEN, ...secretsOf(soon), ...secretsOf(later)]);
  });
});

describe('a chain with no source at all', () => {
  let gw: TestGatewayProcess;
  beforeAll(async () => {
    gw = await chainGateway([], {});
  });
  afterAll(() => gw.close());

  it('is not ready: provider_credentials names the sources the chain tried', async () => {
    const { status, check } = await readiness(gw);
    expect(status).toBe(503);
    expect(check).toMatchObject({ status: 'unhealthy', reason: 'no configured route has provider credentials; the AWS credential chain gave none (us-east-1: tried fromEnv, fromSSO, fromIni, fromProcess, fromTokenFile, remoteProvider; why each gave none: /status/models)' });
  });

  it('a call answers 502 upstream_credentials_unavailable naming them; status shows the failure; one log line says it, not one per call', async () => {
    for (const stream of [false, true]) {
      const res = await chat(gw, 'none', stream);
      expect(res.status).toBe(502);
      expect(await res.json()).toEqual({ error: { message: CHAIN_WITH_NO_SOURCE, type: 'gateway_error', code: 'upstream_credentials_unavailable' } });
    }
    expect(bedrock.received).toEqual([]);
    expect(await deploymentCredentials(gw)).toEqual({ source: 'aws_chain', state: 'failed', expires_at: null, sdk_provider: null, error: CHAIN_WITH_NO_SOURCE });
    const failed = await logged(gw, 'aws_credentials_failed');
    expect(failed).toEqual([expect.objectContaining({ level: 50, region: 'us-east-1', tried: ['fromEnv', 'fromSSO', 'fromIni', 'fromProcess', 'fromTokenFile', 'remoteProvider'], error: CHAIN_WITH_NO_SOURCE })]);
    expect(failed[0]?.msg).toBe('the AWS credential chain (us-east-1) gave no credentials; tried fromEnv, fromSSO, fromIni, fromProcess, fromTokenFile, remoteProvider');
  });
});

describe('a chain that STS refuses, then takes once the token file is rotated', () => {
  const set = temporaryCredentials(HOUR);
  let gw: TestGatewayProcess;
  let file: string;
  beforeAll(async () => {
    sts.reset(set);
    file = tokenFile('rotated-token', STALE_TOKEN);
    gw = await chainGateway([set], webIdentity(file));
  });
  afterAll(() => gw.close());

  it('refused: 502 naming the sources up to the web identity token file and STS\'s refusal, no token in the answer, status or log; not ready', async () => {
    const res = await chat(gw, 'stale');
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('upstream_credentials_unavailable');
    expect(body.error.message).toMatch(/^the AWS credential chain gave no credentials; tried fromEnv \(Unable to find environment variable credentials\), fromSSO \(.+\), fromIni \(.+\), fromProcess \(.+\), fromTokenFile \(InvalidIdentityTokenException: The web identity token that was passed could not be validated by AWS\. .+\)$/);
    expect(sts.refused.every((r) => r.startsWith('InvalidIdentityToken:'))).toBe(true);
    expect(await deploymentCredentials(gw)).toMatchObject({ state: 'failed', error: body.error.message });
    expect((await readiness(gw)).status).toBe(503);
    expect(await logged(gw, 'aws_credentials_failed')).toEqual([expect.objectContaining({ error: body.error.message })]);
    await expectNoSecret(gw, [STALE_TOKEN, WEB_TOKEN, ...secretsOf(set)], [JSON.stringify(body)]);
  });

  it('the kubelet rotates the token: the next call is served, the pod is ready, and one log line says the chain recovered', async () => {
    writeFileSync(file, WEB_TOKEN);
    expect((await chat(gw, 'rotated')).status).toBe(200);
    expect(signedWith(bedrock.converse()[0] as FakeRequest)).toMatchObject({ keyId: set.accessKeyId, token: set.sessionToken });
    expect((await readiness(gw)).status).toBe(200);
    expect(await deploymentCredentials(gw)).toMatchObject({ state: 'ok', error: null, sdk_provider: 'fromTokenFile' });
    expect(await logged(gw, 'aws_credentials_recovered')).toEqual([expect.objectContaining({ level: 30, region: 'us-east-1', source: 'fromTokenFile' })]);
    await expectNoSecret(gw, [STALE_TOKEN, WEB_TOKEN, ...secretsOf(set)]);
  });
});
