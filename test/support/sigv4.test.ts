/**
 * The Bedrock fake's SigV4 verifier (sigv4.ts) against AWS's own published
 * test suite, not against the signer the gateway uses: every case of the
 * AWS Signature Version 4 test suite as botocore vendors it
 * (fixtures/aws-sigv4-suite.json says where), credentials AKIDEXAMPLE,
 * 20150830T123600Z, us-east-1, service "service".
 *
 * For each vector: the canonical request and string to sign the verifier
 * builds from the signed request (.sreq) are the suite's (.creq, .sts),
 * the signature it computes is the suite's (.authz), it ACCEPTS the .sreq,
 * and it REJECTS the .sreq with one byte of the signature, the date, a
 * signed header's value or the body changed. Then the same verifier as the
 * Bedrock fake runs it (service "bedrock", bedrockScope), on a request
 * signed at the fake's clock.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bedrockScope } from './bedrock-upstream.js';
import { canonicalRequest, parseRawRequest, signature, stringToSign, verifySigV4, type SignedRequest, type SigV4Scope } from './sigv4.js';

interface Suite {
  source: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  region: string;
  service: string;
  signedAt: string;
  cases: Array<{ name: string; sreq: string; creq: string; sts: string; authz: string }>;
}

const SUITE = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'aws-sigv4-suite.json'), 'utf8')) as Suite;
const SCOPE: SigV4Scope = {
  service: SUITE.service,
  region: SUITE.region,
  identity: (id) => (id === SUITE.credentials.accessKeyId ? { secretAccessKey: SUITE.credentials.secretAccessKey } : undefined),
  now: Date.parse(SUITE.signedAt),
};

/**
 * The one published vector whose .sreq does not carry its own .authz: get-vanilla-with-session-token's
 * .sreq signs x-amz-security-token but quotes get-vanilla's signature (computed without the token).
 * A verifier that accepts it would be wrong; with the .authz's signature it is accepted.
 */
const SREQ_NOT_ITS_AUTHZ = 'get-vanilla-with-session-token';

const headerOf = (req: SignedRequest, name: string) => req.headers.find(([n]) => n.toLowerCase() === name)?.[1]?.trim();
const withHeader = (req: SignedRequest, name: string, change: (value: string) => string): SignedRequest => ({
  ...req,
  headers: req.headers.map(([n, v]): readonly [string, string] => [n, n.toLowerCase() === name ? change(v) : v]),
});
/** The next hex digit (f wraps to 0): one byte of the text changed. */
const bump = (hex: string) => ((parseInt(hex, 16) + 1) % 16).toString(16);
const signedHeadersOf = (authz: string) => /SignedHeaders=([^,]+)/.exec(authz)![1]!.split(';');
const signatureOf = (authz: string) => /Signature=([0-9a-f]{64})/.exec(authz)![1]!;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe(`AWS SigV4 test suite (${SUITE.cases.length} vectors) through the Bedrock fake's verifier`, () => {
  it('the vendored suite is whole: every case has its four files, and the well-known ones are there', () => {
    expect(SUITE.cases.length).toBe(34);
    for (const name of ['get-vanilla', 'post-vanilla', 'post-x-www-form-urlencoded', 'get-header-key-duplicate', 'get-header-value-multiline', 'normalize-path/get-space', 'post-sts-token/post-sts-header-before']) {
      expect(SUITE.cases.map((c) => c.name)).toContain(name);
    }
    for (const c of SUITE.cases) for (const file of [c.sreq, c.creq, c.sts, c.authz]) expect(file.length).toBeGreaterThan(0);
  });

  describe.each(SUITE.cases.map((c) => [c.name, c] as const))('%s', (name, c) => {
    const req = parseRawRequest(c.sreq);
    const signed = signedHeadersOf(c.authz);

    it('canonical request, string to sign and signature are the suite\'s (.creq, .sts, .authz)', () => {
      const canonical = canonicalRequest(req, signed, sha256(req.body));
      expect(canonical).toBe(c.creq);
      const toSign = stringToSign(headerOf(req, 'x-amz-date')!, `20150830/${SUITE.region}/${SUITE.service}/aws4_request`, canonical!);
      expect(toSign).toBe(c.sts);
      expect(signature(SUITE.credentials.secretAccessKey, '20150830', SUITE.region, SUITE.service, toSign)).toBe(signatureOf(c.authz));
    });

    if (name === SREQ_NOT_ITS_AUTHZ) {
      it('its .sreq quotes a signature made without the token it signs: REJECTED; with its .authz: accepted', () => {
        expect(verifySigV4(req, SCOPE)).toMatchObject({ type: 'InvalidSignatureException' });
        expect(verifySigV4(withHeader(req, 'authorization', () => c.authz), SCOPE)).toBeNull();
      });
      return;
    }

    it('the signed request (.sreq) is ACCEPTED', () => {
      expect(verifySigV4(req, SCOPE)).toBeNull();
    });

    it('REJECTED with one byte of the signature changed (each end of it)', () => {
      for (const at of [0, 63]) {
        const tampered = withHeader(req, 'authorization', (v) => v.replace(/Signature=([0-9a-f]{64})/, (_, sig: string) => `Signature=${sig.slice(0, at)}${bump(sig[at]!)}${sig.slice(at + 1)}`));
        expect(verifySigV4(tampered, SCOPE), `signature byte ${at}`).toMatchObject({ type: 'InvalidSignatureException', message: expect.stringMatching(/^The request signature we calculated does not match/) });
      }
    });

    it('REJECTED with the date one second later (same day, inside the clock skew)', () => {
      const tampered = withHeader(req, 'x-amz-date', (v) => v.replace('T123600Z', 'T123601Z'));
      expect(headerOf(tampered, 'x-amz-date')).toBe('20150830T123601Z');
      expect(verifySigV4(tampered, SCOPE)).toMatchObject({ type: 'InvalidSignatureException', message: expect.stringMatching(/^The request signature we calculated does not match/) });
    });

    it('REJECTED with one byte of each signed header\'s value changed', () => {
      for (const name of signed.filter((n) => n !== 'x-amz-date')) {
        const tampered = withHeader(req, name, (v) => `${v.trimEnd()}x`);
        expect(verifySigV4(tampered, SCOPE), name).toMatchObject({ type: 'InvalidSignatureException' });
      }
    });

    it('REJECTED with the body changed (one byte appended, or one byte of it changed)', () => {
      expect(verifySigV4({ ...req, body: Buffer.concat([req.body, Buffer.from('x')]) }, SCOPE)).toMatchObject({ type: 'InvalidSignatureException' });
      if (req.body.length > 0) {
        const body = Buffer.from(req.body);
        body[0] = (body[0]! + 1) & 0xff;
        expect(verifySigV4({ ...req, body }, SCOPE)).toMatchObject({ type: 'InvalidSignatureException' });
      }
    });
  });

  it('the credential scope must be the service\'s: the suite\'s vectors are refused by Bedrock\'s scope, and by another region', () => {
    const vanilla = parseRawRequest(SUITE.cases.find((c) => c.name === 'get-vanilla')!.sreq);
    expect(verifySigV4(vanilla, { ...SCOPE, service: 'bedrock' })).toMatchObject({ type: 'InvalidSignatureException', message: expect.stringContaining("('us-east-1', 'service')") });
    expect(verifySigV4(vanilla, { ...SCOPE, region: 'eu-west-1' })).toMatchObject({ type: 'InvalidSignatureException' });
    expect(verifySigV4(vanilla, { ...SCOPE, identity: () => undefined })).toMatchObject({ type: 'UnrecognizedClientException' });
    expect(verifySigV4(vanilla, { ...SCOPE, now: SCOPE.now + 6 * 60_000 })).toMatchObject({ message: expect.stringMatching(/^Signature expired: 20150830T123600Z is now earlier than/) });
    expect(verifySigV4({ ...vanilla, headers: vanilla.headers.filter(([n]) => n !== 'Authorization') }, SCOPE)).toMatchObject({ type: 'MissingAuthenticationTokenException' });
  });
});

describe("the Bedrock fake's scope (service bedrock)", () => {
  /** A request signed by the suite's algorithm, here with the fake's credentials and service, at the fake's clock. */
  function signedForBedrock(now: number): SignedRequest {
    const amzDate = new Date(now).toISOString().replace(/[-:]|\.\d{3}/g, '');
    const body = Buffer.from('{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}');
    const unsigned: SignedRequest = {
      method: 'POST',
      target: '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse',
      headers: [['Host', '127.0.0.1:4000'], ['Content-Type', 'application/json'], ['X-Amz-Date', amzDate]],
      body,
    };
    const names = ['content-type', 'host', 'x-amz-date'];
    const canonical = canonicalRequest(unsigned, names, sha256(body))!;
    // The model id's ":" was sent encoded, and is signed encoded once more (as the AWS SDKs sign Bedrock paths).
    expect(canonical.split('\n')[1]).toBe('/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse');
    const day = amzDate.slice(0, 8);
    const sig = signature('wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', day, 'us-east-1', 'bedrock', stringToSign(amzDate, `${day}/us-east-1/bedrock/aws4_request`, canonical));
    return { ...unsigned, headers: [...unsigned.headers, ['Authorization', `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/${day}/us-east-1/bedrock/aws4_request, SignedHeaders=${names.join(';')}, Signature=${sig}`]] };
  }

  it('accepts a request the suite\'s algorithm signs for bedrock, and rejects it with its signature or body changed', () => {
    const now = Date.parse('2026-03-01T10:00:00Z');
    const req = signedForBedrock(now);
    expect(verifySigV4(req, bedrockScope(now))).toBeNull();
    expect(verifySigV4(withHeader(req, 'authorization', (v) => v.replace(/.$/, (d) => bump(d))), bedrockScope(now))).toMatchObject({ type: 'InvalidSignatureException' });
    expect(verifySigV4({ ...req, body: Buffer.from('{}') }, bedrockScope(now))).toMatchObject({ type: 'InvalidSignatureException' });
    expect(verifySigV4(req, bedrockScope(now + 20 * 60_000))).toMatchObject({ message: expect.stringMatching(/^Signature expired/) });
  });
});
