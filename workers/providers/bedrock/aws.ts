/**
 * The AWS pieces of the bedrock adapter, all from the AWS SDK's own
 * packages (CONTRACT.md, Native providers: no hand-written SigV4 or frame
 * parser):
 * - SigV4 with `@smithy/signature-v4` and Node's SHA-256 through
 *   `@smithy/hash-node` (what the SDK itself signs with on Node), one signer
 *   per credentials object, so its signing-key cache is reused;
 * - the AWS event stream of ConverseStream: each message's prelude, headers
 *   and both CRCs are read by `@smithy/eventstream-codec`. What is left to
 *   this file is cutting the byte stream at message boundaries (the first
 *   four bytes of a message are its total length), in a push parser the
 *   transport calls per chunk, so the relay keeps its flow control: the
 *   SDK's own splitter (getChunkedStream) pulls from an async iterator and
 *   allocates whatever length a prelude declares. Here at most one
 *   unfinished message is held, and one longer than the cap fails the
 *   stream before anything is allocated for it.
 * Loaded on a bedrock deployment's first call (index.ts), so other workers'
 * start costs nothing for it.
 */
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import type { Credentials, Upstream } from '../../../protocol/config.js';
import { settingsOf } from '../../../protocol/config.js';
import { GatewayError } from '../../../protocol/errors.js';
import type { StreamFraming } from '../http-attempt.js';
import type { StreamMessage } from './stream.js';

/** The SigV4 service name of Bedrock's runtime endpoint. */
const SERVICE = 'bedrock';

const signers = new WeakMap<Credentials, SignatureV4>();

function signerFor(credentials: Extract<Credentials, { kind: 'aws' }>, region: string): SignatureV4 {
  let signer = signers.get(credentials);
  if (signer === undefined) {
    const identity = { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey, ...(credentials.sessionToken === null ? {} : { sessionToken: credentials.sessionToken }) };
    signer = new SignatureV4({ credentials: identity, region, service: SERVICE, sha256: Hash.bind(null, 'sha256'), uriEscapePath: true });
    signers.set(credentials, signer);
  }
  return signer;
}

const bases = new Map<string, URL>();

function baseOf(apiBase: string): URL {
  let url = bases.get(apiBase);
  if (url === undefined) {
    url = new URL(apiBase);
    bases.set(apiBase, url);
  }
  return url;
}

/**
 * Adds a call's credentials to `headers`: a Bedrock API key as `Authorization: Bearer`, or a SigV4
 * signature of the request as it will be sent (method, `api_base` path + `path`, `query`, every
 * header given, the body). `host` is added, and signed, for SigV4.
 */
export async function authorize(
  upstream: Pick<Upstream, 'apiBase' | 'credentials' | 'settings'>,
  request: { readonly method: 'GET' | 'POST'; readonly path: string; readonly query: Readonly<Record<string, string>>; readonly body: string | null },
  headers: Record<string, string>,
  signingDate?: Date,
): Promise<void> {
  const { credentials } = upstream;
  if (credentials.kind === 'key') {
    headers.authorization = `Bearer ${credentials.key}`;
    return;
  }
  if (credentials.kind !== 'aws' || upstream.apiBase === null) return;
  const region = settingsOf(upstream, 'bedrock').region;
  const base = baseOf(upstream.apiBase);
  headers.host = base.host;
  const signed = await signerFor(credentials, region).sign(
    {
      method: request.method,
      protocol: base.protocol,
      hostname: base.hostname,
      ...(base.port === '' ? {} : { port: Number(base.port) }),
      path: base.pathname.replace(/\/+$/, '') + request.path,
      query: { ...request.query },
      headers: { ...headers },
      ...(request.body === null ? {} : { body: request.body }),
    },
    { signingRegion: region, signingService: SERVICE, ...(signingDate === undefined ? {} : { signingDate }) },
  );
  Object.assign(headers, signed.headers);
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** Bedrock's stream framing (`application/vnd.amazon.eventstream`) for the shared transport. */
export const EVENT_STREAM: StreamFraming<readonly StreamMessage[]> = {
  contentType: 'application/vnd.amazon.eventstream',
  parser: (maxMessageBytes) => new EventStreamParser(maxMessageBytes),
};

/** The least a message can be: prelude (8), prelude CRC (4), message CRC (4). */
const MIN_MESSAGE_BYTES = 16;
const NONE: readonly StreamMessage[] = [];

/** Whole event-stream messages out of the chunks as they come, decoded by the codec. */
export class EventStreamParser {
  readonly #max: number;
  /** The message under way, allocated at its declared length, and how much of it has come. */
  #partial: Uint8Array | null = null;
  #filled = 0;
  /** Up to three bytes of a prelude cut by a chunk's end. */
  #carry: Uint8Array | null = null;

  constructor(maxMessageBytes: number) {
    this.#max = maxMessageBytes;
  }

  push(chunk: Uint8Array): readonly StreamMessage[] {
    let bytes = chunk;
    if (this.#carry !== null) {
      bytes = new Uint8Array(this.#carry.length + chunk.length);
      bytes.set(this.#carry);
      bytes.set(chunk, this.#carry.length);
      this.#carry = null;
    }
    let out: StreamMessage[] | null = null;
    let offset = 0;
    if (this.#partial !== null) {
      const partial = this.#partial;
      const take = Math.min(partial.length - this.#filled, bytes.length);
      partial.set(bytes.subarray(0, take), this.#filled);
      this.#filled += take;
      offset = take;
      if (this.#filled < partial.length) return NONE;
      this.#partial = null;
      out = [decode(partial)];
    }
    while (bytes.length - offset >= 4) {
      const length = ((bytes[offset] as number) * 0x1000000) + (((bytes[offset + 1] as number) << 16) | ((bytes[offset + 2] as number) << 8) | (bytes[offset + 3] as number));
      if (length > this.#max) throw new GatewayError('upstream_response_too_large', `the provider stream sent an event-stream message of ${length} bytes`);
      if (length < MIN_MESSAGE_BYTES) throw new GatewayError('upstream_invalid_response', 'the provider stream is not a valid AWS event stream');
      if (bytes.length - offset < length) {
        this.#partial = new Uint8Array(length);
        this.#partial.set(bytes.subarray(offset));
        this.#filled = bytes.length - offset;
        return out ?? NONE;
      }
      (out ??= []).push(decode(bytes.subarray(offset, offset + length)));
      offset += length;
    }
    if (offset < bytes.length) this.#carry = bytes.slice(offset);
    return out ?? NONE;
  }

  /** The stream ended: a message cut short is a reset. */
  finish(): readonly StreamMessage[] {
    if (this.#partial !== null || this.#carry !== null) throw new GatewayError('upstream_reset', 'the provider stream ended inside an event-stream message');
    return NONE;
  }
}

/** One message (its CRCs checked by the codec) as the translator reads it. */
function decode(bytes: Uint8Array): StreamMessage {
  let message;
  try {
    message = codec.decode(bytes);
  } catch (err) {
    throw new GatewayError('upstream_invalid_response', `the provider stream is not a valid AWS event stream: ${(err as Error).message}`);
  }
  const header = (name: string): string => {
    const value = message.headers[name];
    return value !== undefined && value.type === 'string' ? value.value : '';
  };
  const messageType = header(':message-type');
  if (messageType === 'error') return { messageType, name: header(':error-code'), payload: header(':error-message') };
  return { messageType, name: header(messageType === 'exception' ? ':exception-type' : ':event-type'), payload: toUtf8(message.body) };
}
