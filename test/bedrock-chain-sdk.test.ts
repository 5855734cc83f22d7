/**
 * The AWS credential chain of a bedrock deployment without keys
 * (workers/providers/bedrock/chain.ts), run with the SDK's real
 * defaultProvider in this process against the fake STS of
 * test/support/aws-credential-fakes.ts (itself proved by the SDK):
 * what it reports, when, and a failure's message, which names the sources
 * the SDK says it tried and carries no secret. The environment is the one
 * the chain reads: no instance metadata, no real ~/.aws.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { CHAIN_WITH_NO_SOURCE, startFakeSts, stubIsolatedAwsEnv, temporaryCredentials, type FakeSts } from './support/aws-credential-fakes.js';
import { importDefaultProvider, onChainOutcome, RegionChain, type ChainOutcome } from '../workers/providers/bedrock/chain.js';

const ROLE_ARN = 'arn:aws:iam::123456789012:role/switchyard-bedrock';
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Z3c6c3cifQ.c2lnLTAxMjM0NTY3ODlhYmNkZWY';
const HOUR = 3_600_000;

let dir: string;
let sts: FakeSts;
const outcomes: ChainOutcome[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-chain-'));
  writeFileSync(join(dir, 'token'), TOKEN);
  sts = await startFakeSts({ token: TOKEN, roleArn: ROLE_ARN });
  onChainOutcome((outcome) => outcomes.push(outcome));
});
afterAll(async () => {
  await sts.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  stubIsolatedAwsEnv(dir);
  outcomes.length = 0;
});
afterEach(() => vi.unstubAllEnvs());

const chain = () => new RegionChain('us-east-1', importDefaultProvider());
const webIdentity = (role = ROLE_ARN) => {
  vi.stubEnv('AWS_WEB_IDENTITY_TOKEN_FILE', join(dir, 'token'));
  vi.stubEnv('AWS_ROLE_ARN', role);
  vi.stubEnv('AWS_ENDPOINT_URL_STS', sts.url);
};

describe('the AWS credential chain of a region', () => {
  it('with no source at all: upstream_credentials_unavailable naming every source the SDK tried, in its order, with its reasons; reported once', async () => {
    const c = chain();
    const failure = await c.identity().catch((err: unknown) => err);
    expect(failure).toMatchObject({ name: 'GatewayError', code: 'upstream_credentials_unavailable', message: CHAIN_WITH_NO_SOURCE });
    // The same failure again is not reported again (the front logs changes, not requests).
    await expect(c.identity()).rejects.toThrow(CHAIN_WITH_NO_SOURCE);
    expect(outcomes).toEqual([{ region: 'us-east-1', state: 'failed', expiresAt: null, source: null, error: CHAIN_WITH_NO_SOURCE, tried: ['fromEnv', 'fromSSO', 'fromIni', 'fromProcess', 'fromTokenFile', 'remoteProvider'] }]);
    expect(await c.resolve()).toEqual(outcomes[0]);
  });

  it('web identity: the credentials STS gave, reported once with their expiry and the SDK provider that served', async () => {
    webIdentity();
    const set = temporaryCredentials(HOUR);
    sts.reset(set);
    const c = chain();
    const identity = await c.identity();
    expect(identity).toMatchObject({ accessKeyId: set.accessKeyId, sessionToken: set.sessionToken });
    expect(await c.identity()).toBe(identity);
    expect(sts.served()).toHaveLength(1);
    expect(outcomes).toEqual([{ region: 'us-east-1', state: 'ok', expiresAt: set.expiration.getTime(), source: 'fromTokenFile', error: null, tried: [] }]);
  });

  it('refreshed before expiry: within 5 minutes of it the next ask fetches a new set while the old one still signs; the new set is reported', async () => {
    webIdentity();
    const soon = temporaryCredentials(4 * 60_000);
    const later = temporaryCredentials(HOUR);
    sts.reset(soon, later);
    const c = chain();
    expect((await c.identity()).accessKeyId).toBe(soon.accessKeyId);
    // Near expiry: the SDK hands out the set it has and fetches the next one beside.
    expect((await c.identity()).accessKeyId).toBe(soon.accessKeyId);
    await sts.waitFor(() => sts.served().length === 2);
    let next = await c.identity();
    for (let i = 0; i < 20 && next.accessKeyId === soon.accessKeyId; i++) next = await new Promise<void>((r) => setImmediate(r)).then(() => c.identity());
    expect(next.accessKeyId).toBe(later.accessKeyId);
    expect(outcomes.map((o) => o.expiresAt)).toEqual([soon.expiration.getTime(), later.expiration.getTime()]);
  });

  it('a source that stops the chain with an error of its own (STS refusing the role) is named with that error; no token, key or secret in the message', async () => {
    webIdentity('arn:aws:iam::123456789012:role/not-this-one');
    const failure = (await chain().identity().catch((err: unknown) => err)) as Error;
    expect(failure.message).toMatch(/^the AWS credential chain gave no credentials; tried fromEnv \(.*\), fromSSO \(.*\), fromIni \(.*\), fromProcess \(.*\), fromTokenFile \(AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity\)$/);
    expect(failure.message).not.toContain(TOKEN);
    expect(failure.message).not.toContain(TOKEN.split('.')[1]);
  });
});
