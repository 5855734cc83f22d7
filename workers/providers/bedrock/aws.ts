/**
 * The AWS pieces of the bedrock adapter, all from the AWS SDK's own
 * packages (CONTRACT.md, Native providers: no hand-written SigV4 or frame
 * parser):
 * - SigV4 with `@smithy/signature-v4` and Node's SHA-256 through
 *   `@smithy/hash-node` (what the SDK itself signs with on Node), one signer
 *   per credentials object, so its signing-key cache is reused; for the AWS
 *   credential chain (chain.ts), one signer per region, which asks the
 *   chain for its identity at each signature (SignatureV4 takes a provider);
 * - the AWS event stream of ConverseStream: each message's prelude, headers
 *   and both CRCs are read by `@smithy/eventstream-codec` (with
 *   `@smithy/util-utf8`). What is left to this file is cutting the byte
 *   stream at message boundaries (the first four bytes of a message are its
 *   total length), in a push parser the transport calls per chunk, so the
 *   relay keeps its flow control: the SDK's own splitter (getChunkedStream)
 *   pulls from an async iterator and allocates whatever length a prelude
 *   declares. Here at most one unfinished message is held, and one longer
 *   than the cap fails the stream before anything is allocated for it. The
 *   messages go on as a batch of named events, as the SSE parser hands its
 *   events on, so the shared transport and translating relay take them as
 *   they are.
 * The packages are imported on a bedrock deployment's first call
 * (`loadAwsLibraries`), so a worker, or an inline front, that serves none
 * never loads them (test/module-graph.test.ts).
 */
import type { EventStreamCodec } from '@smithy/eventstream-codec';
import type { SignatureV4 } from '@smithy/signature-v4';
import type { Credentials } from '../../../protocol/config.js';
import { GatewayError } from '../../../protocol/errors.js';
import type { SseBatch } from '../../sse.js';
import type { ChainIdentity } from './chain.js';
import { ERROR, EXCEPTION } from './stream.js';

/** One decoded message as the translator reads it: its name (stream.ts says how exceptions and errors are named) and payload. */
export interface StreamMessage {
  readonly name: string;
  readonly data: string;
}

/** The SigV4 service name of Bedrock's runtime endpoint. */
const SERVICE = 'bedrock';

type AwsCredentials = Extract<Credentials, { kind: 'aws' }>;

/** What the AWS packages give the adapter, once imported. */
export interface AwsLibraries {
  /** The signer of a credentials object (one each, so its signing-key cache is reused). */
  signer(credentials: AwsCredentials, region: string): SignatureV4;
  /**
   * The signer of a region's AWS credential chain (one per region): `identity` is asked at each
   * signature, and the signing-key cache serves as long as the chain hands out the same keys.
   */
  chainSigner(region: string, identity: () => Promise<ChainIdentity>): SignatureV4;
  /** One whole event-stream message, its CRCs checked, as the translator reads it. */
  decode(bytes: Uint8Array): StreamMessage;
}

/**
 * A CommonJS package's exports, however it was imported: Node gives them by name (and whole as
 * `default`), a chunk esbuild split off for import() only as `default`.
 */
const exportsOf = <T extends object>(module: T): T => (module as { default?: T }).default ?? module;

export async function loadAwsLibraries(): Promise<AwsLibraries> {
  const [codecPackage, hashPackage, signerPackage, utf8Package] = await Promise.all([import('@smithy/eventstream-codec'), import('@smithy/hash-node'), import('@smithy/signature-v4'), import('@smithy/util-utf8')]);
  const { EventStreamCodec } = exportsOf(codecPackage);
  const { Hash } = exportsOf(hashPackage);
  const { SignatureV4 } = exportsOf(signerPackage);
  const { fromUtf8 } = exportsOf(utf8Package);
  const signers = new WeakMap<Credentials, SignatureV4>();
  const chainSigners = new Map<string, SignatureV4>();
  const sha256 = Hash.bind(null, 'sha256');
  // The codec takes its UTF-8 decoder as an argument: util-utf8's makes a Buffer per string, and a
  // message has seven (three header names and values, and the payload), 0.7 µs of its 2 µs decode.
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  return {
    signer(credentials, region) {
      let signer = signers.get(credentials);
      if (signer === undefined) {
        const identity = { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey, ...(credentials.sessionToken === null ? {} : { sessionToken: credentials.sessionToken }) };
        signer = new SignatureV4({ credentials: identity, region, service: SERVICE, sha256, uriEscapePath: true });
        signers.set(credentials, signer);
      }
      return signer;
    },
    chainSigner(region, identity) {
      let signer = chainSigners.get(region);
      if (signer === undefined) {
        signer = new SignatureV4({ credentials: identity, region, service: SERVICE, sha256, uriEscapePath: true });
        chainSigners.set(region, signer);
      }
      return signer;
    },
    decode: (bytes) => decode(codec, bytes),
  };
}

/**
 * The gateway's own headers on every upstream request: sent, not signed (as the SDK leaves its
 * trace header unsigned), so a proxy may rewrite them and signing costs a few µs less.
 */
const UNSIGNED = new Set<string>(['x-request-id', 'traceparent', 'tracestate']);

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
 * Signs a request as it will be sent (method, `api_base` path + `path`, `query`, every header
 * given, the body) with SigV4 and adds the signature's headers to `headers`; `host` is added, and
 * signed, too. A chain signer's failure to get credentials is thrown as the chain threw it.
 */
export async function sign(
  signer: SignatureV4,
  region: string,
  apiBase: string,
  request: { readonly method: 'GET' | 'POST'; readonly path: string; readonly query: Readonly<Record<string, string>>; readonly body: string | null },
  headers: Record<string, string>,
): Promise<void> {
  const base = baseOf(apiBase);
  headers.host = base.host;
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: base.protocol,
      hostname: base.hostname,
      ...(base.port === '' ? {} : { port: Number(base.port) }),
      path: base.pathname.replace(/\/+$/, '') + request.path,
      // The signer works on its own copy of the request (prepareRequest clones it).
      query: request.query,
      headers,
      ...(request.body === null ? {} : { body: request.body }),
    },
    { signingRegion: region, signingService: SERVICE, unsignableHeaders: UNSIGNED },
  );
  Object.assign(headers, signed.headers);
}

const text = new TextDecoder();
/** Bytes as text, invalid sequences replaced by U+FFFD (as util-utf8's toUtf8 does, on Buffer's decoder). */
const toUtf8 = (bytes: Uint8Array): string => text.decode(bytes);

/** The least a message can be: prelude (8), prelude CRC (4), message CRC (4). */
const MIN_MESSAGE_BYTES = 16;
/** What the parser hands on: always decoded events (never SSE's verbatim bytes). */
type Decoded = Extract<SseBatch, { readonly verbatim: false }>;

const NONE: Decoded = { verbatim: false, events: [], names: null };

/** The messages of one chunk as a batch of named events. */
function batchOf(messages: readonly StreamMessage[] | null): Decoded {
  if (messages === null) return NONE;
  return { verbatim: false, events: messages.map((m) => m.data), names: messages.map((m) => m.name) };
}

/** Whole event-stream messages out of the chunks as they come, decoded by the codec. */
export class EventStreamParser {
  readonly #decode: (bytes: Uint8Array) => StreamMessage;
  readonly #max: number;
  /** The message under way, allocated at its declared length, and how much of it has come. */
  #partial: Uint8Array | null = null;
  #filled = 0;
  /** Up to three bytes of a prelude cut by a chunk's end. */
  #carry: Uint8Array | null = null;

  constructor(decode: (bytes: Uint8Array) => StreamMessage, maxMessageBytes: number) {
    this.#decode = decode;
    this.#max = maxMessageBytes;
  }

  push(chunk: Uint8Array): Decoded {
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
      out = [this.#decode(partial)];
    }
    while (bytes.length - offset >= 4) {
      const length = ((bytes[offset] as number) * 0x1000000) + (((bytes[offset + 1] as number) << 16) | ((bytes[offset + 2] as number) << 8) | (bytes[offset + 3] as number));
      if (length > this.#max) throw new GatewayError('upstream_response_too_large', `the provider stream sent an event-stream message of ${length} bytes`);
      if (length < MIN_MESSAGE_BYTES) throw new GatewayError('upstream_invalid_response', 'the provider stream is not a valid AWS event stream');
      if (bytes.length - offset < length) {
        this.#partial = new Uint8Array(length);
        this.#partial.set(bytes.subarray(offset));
        this.#filled = bytes.length - offset;
        return batchOf(out);
      }
      (out ??= []).push(this.#decode(bytes.subarray(offset, offset + length)));
      offset += length;
    }
    if (offset < bytes.length) this.#carry = bytes.slice(offset);
    return batchOf(out);
  }

  /** The stream ended: a message cut short is a reset. */
  finish(): Decoded {
    if (this.#partial !== null || this.#carry !== null) throw new GatewayError('upstream_reset', 'the provider stream ended inside an event-stream message');
    return NONE;
  }
}

/** One message (its CRCs checked by the codec) as the translator reads it. */
function decode(codec: EventStreamCodec, bytes: Uint8Array): StreamMessage {
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
  if (messageType === 'event') return { name: header(':event-type'), data: toUtf8(message.body) };
  if (messageType === 'exception') return { name: EXCEPTION + header(':exception-type'), data: toUtf8(message.body) };
  if (messageType === 'error') return { name: ERROR + header(':error-code'), data: header(':error-message') };
  throw new GatewayError('upstream_invalid_response', `the provider stream sent a message of type "${messageType}"`);
}
