/**
 * `bedrock`: AWS Bedrock's runtime API (CONTRACT.md, Native providers):
 * Converse (`POST /model/<id>/converse`), ConverseStream
 * (`/converse-stream`, an AWS event stream decoded and translated message
 * by message as it arrives) and InvokeModel embeddings (`/invoke`, Titan
 * and Cohere), each signed with SigV4 or sent with a Bedrock API key, on
 * the shared transport (http-attempt.ts). The pure translators are
 * request.ts, response.ts, stream.ts and embeddings.ts; errors are
 * errors.ts. The AWS packages (aws.ts: the signer, the event-stream codec;
 * chain.ts: the standard credential chain, for a deployment without keys)
 * are loaded on a bedrock deployment's first call or probe, so a worker or
 * an inline front that serves none never loads them
 * (test/module-graph.test.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../../../protocol/errors.js';
import type { Upstream } from '../../../protocol/config.js';
import { settingsOf } from '../../../protocol/config.js';
import type { HeaderList, Usage } from '../../../protocol/frames.js';
import { allowlistedHeaders } from '../../rate-limit-headers.js';
import type { AttemptSink, Provider, ProviderCall } from '../adapter.js';
import { includesUsage, jsonModeOf } from '../chat-request.js';
import { bodyText, embeddingList, parseBody } from '../compatible.js';
import { httpAttempt, type HttpDialect } from '../http-attempt.js';
import { pathSegment } from '../path.js';
import { TranslatingRelay } from '../translating-relay.js';
import { EventStreamParser, loadAwsLibraries, sign, type AwsLibraries } from './aws.js';
import { regionChain } from './chain.js';
import type { BedrockSettings } from './config.js';
import { BATCH_SIZE, embeddingFamily, embeddingRequest, embeddingTexts, embeddingVectors, type EmbeddingFamily } from './embeddings.js';
import { bedrockError, errorTypeOf } from './errors.js';
import { toConverseRequest } from './request.js';
import { toChatCompletion } from './response.js';
import { ConverseStreamTranslator } from './stream.js';
import { isAnthropicModel, passthroughDialect } from './passthrough.js';

const encoder = new TextEncoder();
const NO_QUERY: Readonly<Record<string, string>> = {};

let aws: AwsLibraries | null = null;
let loading: Promise<AwsLibraries> | null = null;

/** The AWS packages, imported once: the first caller waits for them. */
async function awsLibraries(): Promise<AwsLibraries> {
  aws ??= await (loading ??= loadAwsLibraries());
  return aws;
}

/**
 * A call's credentials into `headers`: a Bedrock API key as `Authorization: Bearer`, or a SigV4
 * signature (aws.ts) with the deployment's keys or the AWS credential chain's (chain.ts), which
 * throws `upstream_credentials_unavailable` when the chain has none. Every request is made through
 * here, so the AWS packages are loaded before any answer comes, the stream decoder included.
 */
async function authorize(upstream: Pick<Upstream, 'apiBase' | 'credentials' | 'settings'>, request: Parameters<typeof sign>[3], headers: Record<string, string>): Promise<void> {
  const { credentials, apiBase } = upstream;
  if (credentials.kind === 'key') headers.authorization = `Bearer ${credentials.key}`;
  const libraries = await awsLibraries();
  if (apiBase === null) return;
  const { region } = settingsOf<BedrockSettings>(upstream);
  if (credentials.kind === 'aws') await sign(libraries.signer(credentials, region), region, apiBase, request, headers);
  else if (credentials.kind === 'aws_chain') await sign(libraries.chainSigner(region, chainIdentity(region)), region, apiBase, request, headers);
}

/** The identity provider a region's chain signer asks: the chain is made on its first signature. */
const chainIdentity = (region: string) => () => regionChain(region).identity();

/** A stream's parser: the AWS event stream's messages as named events (aws.ts). */
function eventStreamParser(maxMessageBytes: number): EventStreamParser {
  if (aws === null) throw new GatewayError('internal_error', 'the event-stream decoder is not loaded');
  return new EventStreamParser(aws.decode, maxMessageBytes);
}

const created = (): number => Math.floor(Date.now() / 1000);
/** Converse answers with no id: the gateway's request id stands for it, so a caller's id finds the gateway's log line. */
const completionId = (call: ProviderCall): string => `chatcmpl-${call.requestId}`;

/** `POST /model/<id>/<action>`, authorized: the model id as one encoded segment (an ARN's `:` and `/` included). */
async function invoke(call: ProviderCall, action: string, body: string, headers: Record<string, string>): Promise<{ path: string; body: string }> {
  const path = `/model/${pathSegment(call.upstream.upstreamModel)}/${action}`;
  await authorize(call.upstream, { method: 'POST', path, query: NO_QUERY, body }, headers);
  return { path, body };
}

const errorOf = (status: number, body: readonly Uint8Array[], raw: IncomingHttpHeaders) => bedrockError(status, bodyText(body), errorTypeOf(raw['x-amzn-errortype']));

const converse: HttpDialect = {
  request(call, headers) {
    // A Responses API call reaches bedrock translated to chat (workers/inbound/responses/).
    if (call.op !== 'chat') throw new GatewayError('unsupported_operation', 'the bedrock provider takes chat completions and embeddings only');
    if (embeddingFamily(call.upstream.upstreamModel) !== null) throw new GatewayError('unsupported_operation', `${call.upstream.upstreamModel} is an embedding model: it takes /v1/embeddings`);
    const request = toConverseRequest(call.body, { dropParams: call.upstream.dropParams, droppable: call.droppable });
    return invoke(call, call.stream ? 'converse-stream' : 'converse', JSON.stringify(request), headers);
  },
  // Bedrock sends no rate-limit headers of its own; a retry-after would pass as it is.
  headers: (raw) => allowlistedHeaders(raw),
  error: errorOf,
  reply(call, body) {
    const { completion, usage } = toChatCompletion(parseBody(body), { id: completionId(call), model: call.upstream.upstreamModel, created: created(), jsonMode: jsonModeOf(call.body) });
    return { body: encoder.encode(JSON.stringify(completion)), usage };
  },
  stream(call) {
    return new TranslatingRelay(new ConverseStreamTranslator({ id: completionId(call), model: call.upstream.upstreamModel, created: created(), includeUsage: includesUsage(call.body), jsonMode: jsonModeOf(call.body) }));
  },
  streamParser: eventStreamParser,
  streamContentType: 'application/vnd.amazon.eventstream',
  readsServerErrors: true,
};

/** What the calls of one embeddings request gather: the vectors in input order, the tokens, the last answer's headers. */
interface Gathered {
  readonly vectors: number[][];
  tokens: number;
  headers: HeaderList;
  upstreamMs: number;
}

const EMPTY = new Uint8Array(0);

/** One InvokeModel call for one batch of texts; its vectors go to `gathered`. */
function invokeDialect(family: EmbeddingFamily, texts: readonly string[], gathered: Gathered): HttpDialect {
  return {
    request: (call, headers) => invoke(call, 'invoke', JSON.stringify(embeddingRequest(family, texts, call.body)), headers),
    headers: (raw) => allowlistedHeaders(raw),
    error: errorOf,
    reply(_call, body, raw) {
      const { vectors, tokens } = embeddingVectors(family, parseBody(body), texts.length);
      gathered.vectors.push(...vectors);
      // Bedrock counts the input of every InvokeModel answer in a header; Titan's body has it too.
      const counted = Number(raw['x-amzn-bedrock-input-token-count']);
      gathered.tokens += Number.isFinite(counted) && counted >= 0 ? counted : (tokens ?? 0);
      return { body: EMPTY, usage: null };
    },
    stream() {
      throw new GatewayError('internal_error', 'embeddings do not stream');
    },
    readsServerErrors: true,
  };
}

/**
 * Embeddings: the texts in batches of what the family takes per call (Titan 1, Cohere 96), one
 * call after another (the call's one abort listener follows each in turn), then one answer in
 * the compatible list. A failed call fails the attempt: the loop may retry it whole.
 */
async function embeddings(call: ProviderCall, sink: AttemptSink): Promise<void> {
  const model = call.upstream.upstreamModel;
  const family = embeddingFamily(model);
  if (family === null) throw new GatewayError('unsupported_operation', `embeddings through bedrock need an Amazon Titan text or Cohere embed model, not ${model}`);
  const texts = embeddingTexts(call.body.input);
  const gathered: Gathered = { vectors: [], tokens: 0, headers: [], upstreamMs: 0 };
  const collect: AttemptSink = {
    reply(_status, _type, headers, _body, _usage, upstreamMs) {
      gathered.headers = headers;
      gathered.upstreamMs += upstreamMs;
    },
    head: unexpected,
    data: unexpected,
    end: unexpected,
  };
  const size = BATCH_SIZE[family];
  for (let i = 0; i < texts.length; i += size) await httpAttempt(invokeDialect(family, texts.slice(i, i + size), gathered), call, collect);
  const usage: Usage = { prompt: gathered.tokens, completion: 0 };
  const body = embeddingList(gathered.vectors, model, gathered.tokens, call.body.encoding_format === 'base64');
  sink.reply(200, 'application/json', gathered.headers, encoder.encode(JSON.stringify(body)), usage, gathered.upstreamMs);
}

function unexpected(): never {
  throw new GatewayError('internal_error', 'an embeddings call answered as a stream');
}

/** Anthropic's Messages to a Claude model, through InvokeModel (passthrough.ts). */
const messages = passthroughDialect(converse, invoke);

export const bedrockProvider: Provider = {
  call(call, sink) {
    if (call.op === 'embeddings') return embeddings(call, sink);
    if (call.op === 'messages') {
      if (!isAnthropicModel(call.upstream.upstreamModel)) throw new GatewayError('unsupported_operation', `${call.upstream.upstreamModel} is not an Anthropic model: Messages reach it through Converse`);
      return httpAttempt(messages, call, sink);
    }
    return httpAttempt(converse, call, sink);
  },
  speaksMessages: (upstream) => isAnthropicModel(upstream.upstreamModel),
  /**
   * The free probe: ListAsyncInvokes (`GET /async-invoke?maxResults=1`), the one list of
   * bedrock-runtime: it bills nothing and checks the endpoint, the signature and the clock
   * (the model list, ListFoundationModels, is on the control plane's host, not api_base).
   */
  async probe(target) {
    const headers: Record<string, string> = { accept: 'application/json' };
    await authorize(target, { method: 'GET', path: '/async-invoke', query: { maxResults: '1' }, body: null }, headers);
    return { path: '/async-invoke?maxResults=1', headers };
  },
};
