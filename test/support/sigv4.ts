/**
 * A SigV4 verifier written from AWS's description of the algorithm
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html),
 * for the Bedrock fake (bedrock-upstream.ts). It shares no code with the
 * signer the gateway uses (@smithy/signature-v4): only node:crypto's
 * SHA-256 and HMAC. It is checked against AWS's own published test suite
 * (sigv4.test.ts, the vectors in fixtures/aws-sigv4-suite.json), so a
 * request the fake takes is one AWS would take, whoever signed it.
 *
 * The request is read as it arrived: the request target undecoded, every
 * header line in order (a repeated name is repeated), the body's bytes.
 * For a service other than S3 (Bedrock's `bedrock`, the suite's `service`):
 * - the canonical URI is the path with `.` and `..` segments resolved and
 *   empty segments dropped, each segment URI-encoded as it was sent (so a
 *   `%3A` the client sent is signed as `%253A`, as the AWS SDKs sign it);
 * - the canonical query is every `name=value` pair decoded, then encoded
 *   (RFC 3986 unreserved characters kept), sorted by name, then value;
 * - canonical headers are the signed ones, names lower-cased, values
 *   trimmed with runs of spaces made one, a repeated header's values joined
 *   by `,` in the order sent;
 * - the payload hash is the SHA-256 of the body (or x-amz-content-sha256,
 *   which must then be that hash).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export interface SignedRequest {
  readonly method: string;
  /** The request target as sent: the path and the query, neither decoded. */
  readonly target: string;
  /** Every header line as [name, value], in the order sent. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array;
}

export interface SigV4Identity {
  readonly secretAccessKey: string;
  /** When set, the request must carry it as x-amz-security-token. */
  readonly sessionToken?: string;
}

export interface SigV4Scope {
  /** The signing name the service answers to (`bedrock`). */
  readonly service: string;
  readonly region: string;
  /** The secret of an access key id the service knows; undefined for one it does not. */
  identity(accessKeyId: string): SigV4Identity | undefined;
  /** The service's clock, ms since the epoch: a signature more than 5 minutes from it is refused. */
  readonly now: number;
}

/** Why AWS refuses a request: its error type and message. */
export interface SigV4Refusal {
  readonly type: 'MissingAuthenticationTokenException' | 'UnrecognizedClientException' | 'InvalidSignatureException' | 'IncompleteSignatureException';
  readonly message: string;
}

const MAX_SKEW_MS = 5 * 60_000;
const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 percent-encoding of every byte but the unreserved characters (A–Z a–z 0–9 - . _ ~). */
export function uriEncode(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Percent-decoding that leaves a malformed escape as it is (AWS does not refuse it; it signs what it reads). */
function percentDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The canonical URI of a path (not S3: dot segments resolved, empty segments dropped, each segment encoded as sent). */
export function canonicalUri(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const trailing = segments.length > 0 && path.endsWith('/') ? '/' : '';
  return `/${segments.map(uriEncode).join('/')}${trailing}`;
}

/** The canonical query string: each pair decoded then encoded, sorted by name, then value (code-unit order of the encoded ASCII). */
export function canonicalQuery(query: string): string {
  if (query === '') return '';
  const pairs = query
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const eq = part.indexOf('=');
      const name = eq === -1 ? part : part.slice(0, eq);
      const value = eq === -1 ? '' : part.slice(eq + 1);
      return [uriEncode(percentDecode(name)), uriEncode(percentDecode(value))] as const;
    });
  pairs.sort(([an, av], [bn, bv]) => (an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

/** A header's value as signed: trimmed, each run of spaces (and tabs) one space. */
const canonicalValue = (value: string): string => value.trim().replace(/[ \t]+/g, ' ');

/** The values of each header (by lower-cased name), in the order sent. */
function headerValues(headers: SignedRequest['headers']): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [name, value] of headers) {
    const key = name.toLowerCase();
    const list = out.get(key);
    if (list === undefined) out.set(key, [value]);
    else list.push(value);
  }
  return out;
}

/** The one value of a header (repeated values joined as signed), or undefined. */
function header(headers: SignedRequest['headers'], name: string): string | undefined {
  return headerValues(headers).get(name)?.map(canonicalValue).join(',');
}

/** The canonical request (task 1): null when a signed header is missing. */
export function canonicalRequest(req: SignedRequest, signedHeaders: readonly string[], payloadHash: string): string | null {
  const q = req.target.indexOf('?');
  const path = q === -1 ? req.target : req.target.slice(0, q);
  const query = q === -1 ? '' : req.target.slice(q + 1);
  const values = headerValues(req.headers);
  const lines: string[] = [];
  for (const name of signedHeaders) {
    const list = values.get(name);
    if (list === undefined) return null;
    lines.push(`${name}:${list.map(canonicalValue).join(',')}`);
  }
  return [req.method, canonicalUri(path), canonicalQuery(query), ...lines, '', signedHeaders.join(';'), payloadHash].join('\n');
}

/** The string to sign (task 2). */
export function stringToSign(amzDate: string, credentialScope: string, canonical: string): string {
  return ['AWS4-HMAC-SHA256', amzDate, credentialScope, sha256Hex(canonical)].join('\n');
}

/** The signature (tasks 3 and 4): the signing key derived from the secret, the day, the region and the service. */
export function signature(secretAccessKey: string, day: string, region: string, service: string, toSign: string): string {
  const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), service), 'aws4_request');
  return createHmac('sha256', key).update(toSign, 'utf8').digest('hex');
}

const invalid = (message: string): SigV4Refusal => ({ type: 'InvalidSignatureException', message });
const UNRECOGNIZED: SigV4Refusal = { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
const MISMATCH = invalid(
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
);

/** AWS's compact ISO 8601 form, as its messages quote times. */
const compact = (ms: number): string => new Date(ms).toISOString().replace(/[-:]|\.\d{3}/g, '');

/** Null when AWS would take the request's SigV4 signature (Authorization header); else its refusal. */
export function verifySigV4(req: SignedRequest, scope: SigV4Scope): SigV4Refusal | null {
  const authorization = header(req.headers, 'authorization');
  if (authorization === undefined) return { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const parsed = AUTHORIZATION.exec(authorization);
  if (parsed === null) return { type: 'IncompleteSignatureException', message: `Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters.` };
  const [, keyId, day, region, service, signedList, claimed] = parsed as unknown as [string, string, string, string, string, string, string];
  const identity = scope.identity(keyId);
  if (identity === undefined) return UNRECOGNIZED;
  if (service !== scope.service || region !== scope.region) return invalid(`Credential should be scoped to a valid region and service ('${region}', '${service}').`);
  if (identity.sessionToken !== undefined && header(req.headers, 'x-amz-security-token') !== identity.sessionToken) return UNRECOGNIZED;
  const signed = signedList.split(';');
  if (!signed.includes('host')) return invalid("'Host' must be a signed header.");
  if (signed.some((name, i) => i > 0 && (signed[i - 1] as string) >= name)) return invalid('SignedHeaders must be sorted and not repeat a header.');
  const amzDate = header(req.headers, 'x-amz-date') ?? '';
  const at = Date.parse(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  if (Number.isNaN(at) || !amzDate.startsWith(day)) return invalid('Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP');
  if (Math.abs(scope.now - at) > MAX_SKEW_MS) {
    const late = scope.now > at;
    return invalid(`Signature ${late ? 'expired' : 'not yet current'}: ${amzDate} is now ${late ? 'earlier' : 'later'} than ${compact(scope.now + (late ? -MAX_SKEW_MS : MAX_SKEW_MS))} (${compact(scope.now)} ${late ? '-' : '+'} 5 min.)`);
  }
  const bodyHash = sha256Hex(req.body);
  const claimedHash = header(req.headers, 'x-amz-content-sha256');
  if (claimedHash !== undefined && claimedHash !== bodyHash) return invalid('The provided x-amz-content-sha256 header does not match what was computed.');
  const canonical = canonicalRequest(req, signed, bodyHash);
  if (canonical === null) return invalid(`Signed header ${signed.find((name) => header(req.headers, name) === undefined)} is missing`);
  const expected = signature(identity.secretAccessKey, day, region, service, stringToSign(amzDate, `${day}/${region}/${service}/aws4_request`, canonical));
  return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(claimed, 'hex')) ? null : MISMATCH;
}

/**
 * A raw HTTP/1.1 request as the suite's .req/.sreq files write it: the request line (its target
 * may hold spaces and raw UTF-8, which the suite sends as they are), header lines (a line that
 * starts with white space continues the one before it, joined by a space), a blank line, the body.
 */
export function parseRawRequest(text: string): SignedRequest {
  const lines = text.split('\n');
  const requestLine = lines.shift() ?? '';
  const first = requestLine.indexOf(' ');
  const last = requestLine.lastIndexOf(' ');
  const headers: Array<[string, string]> = [];
  let line: string | undefined;
  while ((line = lines.shift()) !== undefined && line !== '') {
    if (/^[ \t]/.test(line) && headers.length > 0) {
      const previous = headers[headers.length - 1] as [string, string];
      previous[1] = `${previous[1]} ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    headers.push([line.slice(0, colon), line.slice(colon + 1)]);
  }
  return { method: requestLine.slice(0, first), target: requestLine.slice(first + 1, last), headers, body: Buffer.from(lines.join('\n'), 'utf8') };
}
