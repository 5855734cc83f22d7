/**
 * The fake STS and container credentials endpoints (aws-credential-fakes.ts)
 * read by the SDK's own credential chain, @aws-sdk/credential-provider-node's
 * defaultProvider, configured the way EKS configures a pod: the chain finds
 * the fakes through the environment alone (AWS_WEB_IDENTITY_TOKEN_FILE,
 * AWS_ROLE_ARN and the STS endpoint override AWS_ENDPOINT_URL_STS; or
 * AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE),
 * reads their answers and their refusals as it reads AWS's. No test lets the
 * chain reach the instance metadata address (AWS_EC2_METADATA_DISABLED),
 * read a real ~/.aws (HOME and the shared files point into a temporary
 * directory) or any address but loopback.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startFakeContainerCredentials, startFakeSts, stubIsolatedAwsEnv, temporaryCredentials, type FakeContainerCredentials, type FakeSts } from './aws-credential-fakes.js';

const ROLE_ARN = 'arn:aws:iam::123456789012:role/switchyard-bedrock';
const WEB_TOKEN = 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImZha2UifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Z2F0ZXdheTpzd2l0Y2h5YXJkIn0.c2lnbmF0dXJlLWZha2UtMDEyMzQ1Njc4OQ';
const POD_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.cG9kLWlkZW50aXR5LWZha2U.cG9kLXNpZ25hdHVyZS0wMTIzNDU2Nzg5';
const HOUR = 3_600_000;

let dir: string;
let sts: FakeSts;
let container: FakeContainerCredentials;
const first = temporaryCredentials(HOUR);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-aws-fakes-'));
  writeFileSync(join(dir, 'web-identity-token'), WEB_TOKEN);
  writeFileSync(join(dir, 'pod-identity-token'), POD_TOKEN);
  sts = await startFakeSts({ token: WEB_TOKEN, roleArn: ROLE_ARN }, first);
  container = await startFakeContainerCredentials({ token: POD_TOKEN }, first);
});
afterAll(async () => {
  await sts.close();
  await container.close();
  rmSync(dir, { recursive: true, force: true });
});

/** An environment with no AWS credentials of any kind, nothing read from the host, no instance metadata. */
beforeEach(() => {
  stubIsolatedAwsEnv(dir);
  sts.reset(first);
  container.reset(first);
});
afterEach(() => vi.unstubAllEnvs());

const webIdentity = (token = join(dir, 'web-identity-token'), role = ROLE_ARN) => {
  vi.stubEnv('AWS_WEB_IDENTITY_TOKEN_FILE', token);
  vi.stubEnv('AWS_ROLE_ARN', role);
  vi.stubEnv('AWS_ROLE_SESSION_NAME', 'switchyard-test');
  vi.stubEnv('AWS_ENDPOINT_URL_STS', sts.url);
};

describe('the fake STS AssumeRoleWithWebIdentity, read by the SDK chain', () => {
  it('defaultProvider finds the web identity token and role in the environment, posts them to AWS_ENDPOINT_URL_STS, and reads the XML answer', async () => {
    webIdentity();
    const credentials = await defaultProvider()();
    expect(credentials).toMatchObject({ accessKeyId: first.accessKeyId, secretAccessKey: first.secretAccessKey, sessionToken: first.sessionToken, expiration: first.expiration });
    expect(sts.refused).toEqual([]);
    const [sent] = sts.served();
    expect(sent?.method).toBe('POST');
    expect(sent?.path).toBe('/');
    expect(sent?.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    const form = new URLSearchParams(sent?.raw.toString('utf8'));
    expect(Object.fromEntries(form)).toEqual({ Action: 'AssumeRoleWithWebIdentity', Version: '2011-06-15', RoleArn: ROLE_ARN, RoleSessionName: 'switchyard-test', WebIdentityToken: WEB_TOKEN });
    // The web identity call is not signed: the token is the proof.
    expect(sent?.headers.authorization).toBeUndefined();
  });

  it('AWS_ENDPOINT_URL (for every service) reaches it too; AWS_ENDPOINT_URL_STS wins over it', async () => {
    webIdentity();
    vi.stubEnv('AWS_ENDPOINT_URL_STS', undefined);
    vi.stubEnv('AWS_ENDPOINT_URL', sts.url);
    expect((await defaultProvider()()).accessKeyId).toBe(first.accessKeyId);
    vi.stubEnv('AWS_ENDPOINT_URL', 'http://127.0.0.1:9');
    vi.stubEnv('AWS_ENDPOINT_URL_STS', sts.url);
    expect((await defaultProvider()()).accessKeyId).toBe(first.accessKeyId);
    expect(sts.served()).toHaveLength(2);
  });

  it('the SDK reads its refusals as STS errors: a token it does not take, a role it may not assume', async () => {
    writeFileSync(join(dir, 'other-token'), 'eyJ.not-the-token.x');
    webIdentity(join(dir, 'other-token'));
    await expect(defaultProvider()()).rejects.toMatchObject({ name: 'InvalidIdentityTokenException', message: expect.stringMatching(/could not be validated/) });
    webIdentity(undefined, 'arn:aws:iam::123456789012:role/someone-else');
    await expect(defaultProvider()()).rejects.toMatchObject({ name: 'AccessDenied', message: 'Not authorized to perform sts:AssumeRoleWithWebIdentity' });
    expect(sts.served()).toEqual([]);
    expect(sts.refused).toHaveLength(2);
  });

  it('takes only what the SDK sends: another action, a missing token, another method or path are refused', async () => {
    const post = (body: string, path = '/', method = 'POST') => fetch(`${sts.url}${path}`, { method, headers: { 'content-type': 'application/x-www-form-urlencoded' }, ...(method === 'GET' ? {} : { body }) });
    const form = (fields: Record<string, string>) => new URLSearchParams({ Version: '2011-06-15', RoleArn: ROLE_ARN, RoleSessionName: 's', ...fields }).toString();
    const assumeRole = await post(form({ Action: 'AssumeRole' }));
    expect(assumeRole.status).toBe(400);
    expect(await assumeRole.text()).toMatch(/<Code>InvalidAction<\/Code>/);
    const noToken = await post(form({ Action: 'AssumeRoleWithWebIdentity' }));
    expect(noToken.status).toBe(400);
    expect(await noToken.text()).toMatch(/<Code>MissingParameter<\/Code>[\s\S]*WebIdentityToken/);
    expect((await post('', '/?Action=AssumeRoleWithWebIdentity', 'GET')).status).toBe(405);
    expect((await post(form({ Action: 'AssumeRoleWithWebIdentity', WebIdentityToken: WEB_TOKEN }), '/sts')).status).toBe(404);
    const right = await post(form({ Action: 'AssumeRoleWithWebIdentity', WebIdentityToken: WEB_TOKEN }));
    expect(right.status).toBe(200);
    expect(await right.text()).toContain(`<AccessKeyId>${first.accessKeyId}</AccessKeyId>`);
    expect(sts.refused.map((r) => r.split(':')[0])).toEqual(['InvalidAction', 'MissingParameter', 'InvalidAction', 'UnknownOperationException']);
  });

  it('hands out its sets in order, then the last again (what the expiry tests script)', async () => {
    webIdentity();
    const second = temporaryCredentials(2 * HOUR);
    sts.issue(first, second);
    expect((await defaultProvider()()).accessKeyId).toBe(first.accessKeyId);
    expect((await defaultProvider()()).accessKeyId).toBe(second.accessKeyId);
    expect((await defaultProvider()()).accessKeyId).toBe(second.accessKeyId);
  });
});

describe('the fake container credentials endpoint (EKS Pod Identity, ECS), read by the SDK chain', () => {
  const pod = (tokenFile = join(dir, 'pod-identity-token')) => {
    vi.stubEnv('AWS_CONTAINER_CREDENTIALS_FULL_URI', container.url);
    vi.stubEnv('AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE', tokenFile);
  };

  it('defaultProvider fetches AWS_CONTAINER_CREDENTIALS_FULL_URI with the token of AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE and reads the JSON answer', async () => {
    pod();
    const credentials = await defaultProvider()();
    expect(credentials).toMatchObject({ accessKeyId: first.accessKeyId, secretAccessKey: first.secretAccessKey, sessionToken: first.sessionToken, expiration: first.expiration });
    const [sent] = container.served();
    expect(sent?.method).toBe('GET');
    expect(sent?.headers.authorization).toBe(POD_TOKEN);
    expect(container.refused).toEqual([]);
  });

  it('a wrong token is refused, and the chain fails with no credentials (no retries: maxRetries 0)', async () => {
    writeFileSync(join(dir, 'wrong-pod-token'), 'eyJ.wrong.token');
    pod(join(dir, 'wrong-pod-token'));
    await expect(defaultProvider({ maxRetries: 0 })()).rejects.toThrow();
    expect(container.served()).toEqual([]);
    // fromHttp with the wrong token, then fromContainerMetadata, which sends AWS_CONTAINER_AUTHORIZATION_TOKEN only (unset here).
    expect(container.refused).toEqual(['AccessDeniedException: the service account token in Authorization is not valid', 'AccessDeniedException: the request carries no Authorization header']);
  });

  it('takes only a GET of its path', async () => {
    expect((await fetch(container.url, { method: 'POST', headers: { authorization: POD_TOKEN } })).status).toBe(405);
    expect((await fetch(`${container.url}/x`, { headers: { authorization: POD_TOKEN } })).status).toBe(404);
    expect((await fetch(container.url)).status).toBe(401);
    expect((await fetch(container.url, { headers: { authorization: POD_TOKEN } })).status).toBe(200);
  });
});
