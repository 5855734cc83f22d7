/**
 * Fakes of the two AWS credential endpoints an AWS workload's credential
 * chain calls, on 127.0.0.1, in their real wire formats, proved by the
 * SDK's own chain (@aws-sdk/credential-provider-node's defaultProvider) in
 * aws-credential-fakes.test.ts:
 * - STS `AssumeRoleWithWebIdentity` (the AWS Query protocol, as EKS IRSA
 *   uses it: the SDK reads AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN and
 *   posts the token; its endpoint override, AWS_ENDPOINT_URL_STS, points
 *   it here): `POST /`, form-encoded `Action`, `Version`, `RoleArn`,
 *   `RoleSessionName`, `WebIdentityToken`; the answer is STS's XML
 *   (`AssumeRoleWithWebIdentityResponse`), a refusal STS's `ErrorResponse`
 *   (`InvalidIdentityToken`, `AccessDenied`, `MissingParameter`,
 *   `InvalidAction`). Only what the SDK sends is taken.
 * - container credentials as ECS and EKS Pod Identity serve them
 *   (AWS_CONTAINER_CREDENTIALS_FULL_URI, with the token of
 *   AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE in `Authorization`): `GET` of
 *   its path, JSON `{AccessKeyId, SecretAccessKey, Token, AccountId,
 *   Expiration}`; a missing or wrong token is refused (401).
 * Both hand out temporary credentials from a list, one set per request,
 * the last one again once the list is spent; no request goes anywhere but
 * loopback.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sendJson, startFakeServer, type FakeRequest, type FakeServer } from './http-fake.js';
import { join } from 'node:path';
import { vi } from 'vitest';

/**
 * What the SDK's chain (this version) says of an environment with no source at all, instance metadata
 * off, as the gateway words it (workers/providers/bedrock/chain.ts): the 502's message, status's error
 * and the log line's. A new SDK version that words it otherwise fails the tests that read it, on purpose.
 */
export const CHAIN_WITH_NO_SOURCE =
  'the AWS credential chain gave no credentials; tried fromEnv (Unable to find environment variable credentials), fromSSO (Skipping SSO provider in default chain (inputs do not include SSO fields)), fromIni (Could not resolve credentials using profile: [default] in configuration/credentials file(s)), fromProcess (Profile default could not be found in shared credentials file), fromTokenFile (Web identity configuration not specified), remoteProvider (EC2 Instance Metadata Service access disabled)';

/** A set of temporary credentials as STS or a container endpoint hands them out. */
export interface TemporaryCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
  readonly expiration: Date;
}

/** A fresh set that expires `expiresInMs` from now (ids like AWS's: ASIA and 16 more). */
export function temporaryCredentials(expiresInMs: number): TemporaryCredentials {
  const id = randomBytes(10).toString('hex').toUpperCase().slice(0, 16);
  return {
    accessKeyId: `ASIA${id}`,
    secretAccessKey: randomBytes(30).toString('base64'),
    sessionToken: `IQoJb3JpZ2luX2VjE${randomBytes(60).toString('base64')}`,
    // Whole seconds, as both endpoints write them.
    expiration: new Date(Math.floor((Date.now() + expiresInMs) / 1000) * 1000),
  };
}

interface Issuing extends FakeServer {
  /** Sets the credentials handed out next, one set per accepted request; the last is repeated. */
  issue(...sets: TemporaryCredentials[]): void;
  /** Accepted requests (answered with credentials). */
  served(): FakeRequest[];
  /** Requests refused, with the reason. */
  readonly refused: string[];
  /** Forgets what it received, served and refused; hands out `sets` from the first again. */
  reset(...sets: TemporaryCredentials[]): void;
}

export interface FakeSts extends Issuing {
  /** The endpoint for AWS_ENDPOINT_URL_STS. */
  readonly url: string;
}

export interface FakeContainerCredentials extends Issuing {
  /** The URI for AWS_CONTAINER_CREDENTIALS_FULL_URI. */
  readonly url: string;
}

/** Hands out the sets in order, repeating the last. */
function issuer(first: readonly TemporaryCredentials[]) {
  let sets = [...first];
  let next = 0;
  return {
    set(more: readonly TemporaryCredentials[]) {
      sets = [...more];
      next = 0;
    },
    take(): TemporaryCredentials {
      const set = sets[Math.min(next, sets.length - 1)];
      next++;
      if (set === undefined) throw new Error('the fake has no credentials to hand out: call issue() first');
      return set;
    },
  };
}

function resetter(server: FakeServer, refused: string[], served: FakeRequest[], credentials: ReturnType<typeof issuer>) {
  return (...sets: TemporaryCredentials[]) => {
    server.received.length = 0;
    refused.length = 0;
    served.length = 0;
    credentials.set(sets);
  };
}

const STS_NAMESPACE = 'https://sts.amazonaws.com/doc/2011-06-15/';
const STS_VERSION = '2011-06-15';

/**
 * Fake STS: `AssumeRoleWithWebIdentity` with this token for this role, answered with `sets`.
 *
 * @example
 * const sts = await startFakeSts({ token: 'eyJ…', roleArn: 'arn:aws:iam::123456789012:role/gw' }, temporaryCredentials(3_600_000));
 * // env: AWS_ENDPOINT_URL_STS=sts.url, AWS_WEB_IDENTITY_TOKEN_FILE=<file with the token>, AWS_ROLE_ARN=…
 */
export async function startFakeSts(expected: { readonly token: string; readonly roleArn: string }, ...sets: TemporaryCredentials[]): Promise<FakeSts> {
  const credentials = issuer(sets);
  const refused: string[] = [];
  const served: FakeRequest[] = [];
  let count = 0;
  const server = await startFakeServer((req, res) => {
    const requestId = `fa4e5700-0000-4000-8000-${String(++count).padStart(12, '0')}`;
    const refuse = (status: number, code: string, message: string) => {
      refused.push(`${code}: ${message}`);
      stsError(res, status, code, message, requestId);
    };
    if (req.path !== '/') return refuse(404, 'UnknownOperationException', `no operation at ${req.path}`);
    if (req.method !== 'POST') return refuse(405, 'InvalidAction', `STS takes this operation as a POST, not a ${req.method}`);
    if (!String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return refuse(400, 'InvalidParameterValue', 'the body must be application/x-www-form-urlencoded');
    const form = new URLSearchParams(req.raw.toString('utf8'));
    const action = form.get('Action');
    if (action !== 'AssumeRoleWithWebIdentity') return refuse(400, 'InvalidAction', `Could not find operation ${action ?? '(none)'} for version ${STS_VERSION}`);
    if (form.get('Version') !== STS_VERSION) return refuse(400, 'InvalidParameterValue', `Version ${form.get('Version') ?? '(none)'} is not supported`);
    for (const name of ['RoleArn', 'RoleSessionName', 'WebIdentityToken']) {
      if (!form.get(name)) return refuse(400, 'MissingParameter', `The request must contain the parameter ${name}`);
    }
    if (form.get('WebIdentityToken') !== expected.token) return refuse(400, 'InvalidIdentityToken', 'The web identity token that was passed could not be validated by AWS. Get a new identity token from the identity provider and then retry the request.');
    if (form.get('RoleArn') !== expected.roleArn) return refuse(403, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
    served.push(req);
    const set = credentials.take();
    const session = form.get('RoleSessionName') ?? '';
    const role = expected.roleArn.split('/').at(-1) ?? 'role';
    const xml = `<AssumeRoleWithWebIdentityResponse xmlns="${STS_NAMESPACE}">
  <AssumeRoleWithWebIdentityResult>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser>
      <AssumedRoleId>AROA3XFRBF535PLBIFPI4:${session}</AssumedRoleId>
      <Arn>arn:aws:sts::123456789012:assumed-role/${role}/${session}</Arn>
    </AssumedRoleUser>
    <Provider>arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE</Provider>
    <Credentials>
      <AccessKeyId>${set.accessKeyId}</AccessKeyId>
      <SecretAccessKey>${set.secretAccessKey}</SecretAccessKey>
      <SessionToken>${set.sessionToken}</SessionToken>
      <Expiration>${set.expiration.toISOString().replace(/\.\d{3}Z$/, 'Z')}</Expiration>
    </Credentials>
    <SubjectFromWebIdentityToken>system:serviceaccount:gateway:switchyard</SubjectFromWebIdentityToken>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata>
    <RequestId>${requestId}</RequestId>
  </ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>
`;
    res.writeHead(200, { 'content-type': 'text/xml', 'content-length': Buffer.byteLength(xml), 'x-amzn-requestid': requestId });
    res.end(xml);
  });
  return { ...server, url: server.origin, refused, issue: (...more) => credentials.set(more), served: () => [...served], reset: resetter(server, refused, served, credentials) };
}

function stsError(res: ServerResponse, status: number, code: string, message: string, requestId: string): void {
  const type = status >= 500 ? 'Receiver' : 'Sender';
  const xml = `<ErrorResponse xmlns="${STS_NAMESPACE}">
  <Error>
    <Type>${type}</Type>
    <Code>${code}</Code>
    <Message>${message}</Message>
  </Error>
  <RequestId>${requestId}</RequestId>
</ErrorResponse>
`;
  res.writeHead(status, { 'content-type': 'text/xml', 'content-length': Buffer.byteLength(xml), 'x-amzn-requestid': requestId });
  res.end(xml);
}

/** The path EKS Pod Identity's agent serves credentials at. */
export const CONTAINER_CREDENTIALS_PATH = '/v1/credentials';

/**
 * Fake container credentials endpoint (EKS Pod Identity's agent, ECS's): `GET` of its path with
 * this token in `Authorization`, answered with `sets`.
 */
export async function startFakeContainerCredentials(expected: { readonly token: string }, ...sets: TemporaryCredentials[]): Promise<FakeContainerCredentials> {
  const credentials = issuer(sets);
  const refused: string[] = [];
  const served: FakeRequest[] = [];
  const server = await startFakeServer((req, res) => {
    const refuse = (status: number, code: string, message: string) => {
      refused.push(`${code}: ${message}`);
      sendJson(res, status, { Code: code, Message: message });
    };
    if (req.path !== CONTAINER_CREDENTIALS_PATH) return refuse(404, 'NotFound', `no credentials at ${req.path}`);
    if (req.method !== 'GET') return refuse(405, 'MethodNotAllowed', `${req.method} is not allowed`);
    const authorization = req.headers.authorization;
    if (authorization === undefined) return refuse(401, 'AccessDeniedException', 'the request carries no Authorization header');
    if (authorization !== expected.token) return refuse(401, 'AccessDeniedException', 'the service account token in Authorization is not valid');
    served.push(req);
    const set = credentials.take();
    sendJson(res, 200, { AccessKeyId: set.accessKeyId, SecretAccessKey: set.secretAccessKey, Token: set.sessionToken, AccountId: '123456789012', Expiration: set.expiration.toISOString().replace(/\.\d{3}Z$/, 'Z') });
  });
  return { ...server, url: `${server.origin}${CONTAINER_CREDENTIALS_PATH}`, refused, issue: (...more) => credentials.set(more), served: () => [...served], reset: resetter(server, refused, served, credentials) };
}

/** An environment with no AWS credentials of any kind: nothing read from the host (HOME and the shared files point into `dir`), no instance metadata. */
export function isolatedAwsEnv(dir: string): Record<string, string> {
  return { HOME: dir, AWS_CONFIG_FILE: join(dir, 'no-config'), AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-credentials'), AWS_EC2_METADATA_DISABLED: 'true', AWS_REGION: 'us-east-1' };
}

/** `isolatedAwsEnv` for this process (vitest's stubEnv, undone by unstubAllEnvs), every AWS_ variable of the host removed first. */
export function stubIsolatedAwsEnv(dir: string): void {
  for (const name of Object.keys(process.env)) if (name.startsWith('AWS_')) vi.stubEnv(name, undefined);
  for (const [name, value] of Object.entries(isolatedAwsEnv(dir))) vi.stubEnv(name, value);
}
