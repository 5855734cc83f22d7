/**
 * A fake AWS Bedrock runtime API on 127.0.0.1, in the real wire format
 * (the Bedrock Runtime API reference: Converse, ConverseStream,
 * InvokeModel, ListAsyncInvokes, Errors; the shapes and event names of
 * @aws-sdk/client-bedrock-runtime), proved by the official SDK in
 * bedrock-upstream.test.ts:
 * - every request is authenticated as AWS does: a Bedrock API key as
 *   `Authorization: Bearer`, or a SigV4 signature VERIFIED by recomputing
 *   it from the request as received (method, target, the signed header
 *   lines, the body's bytes) and the fake's own credentials (two fixed
 *   identities, and any a test `trust`s: the temporary credentials of the
 *   STS and container credentials fakes, aws-credential-fakes.ts), by sigv4.ts:
 *   a verifier of its own, not the signer the gateway uses
 *   (@smithy/signature-v4), checked against AWS's published SigV4 test
 *   suite (sigv4.test.ts). A signature more than 5 minutes from the
 *   fake's clock (which a test may set apart) is refused as AWS refuses
 *   it. Refusals are 403s (`UnrecognizedClientException`,
 *   `InvalidSignatureException`, `MissingAuthenticationTokenException`);
 * - `POST /model/<id>/converse`: checks the request as Converse does (known
 *   fields, turns alternating from `user`, no blank text block, each
 *   assistant turn's `toolUse` answered by `toolResult` blocks in the next
 *   user turn, `toolConfig` present when tool blocks are) and answers a
 *   Converse answer; `/converse-stream` answers the same as an AWS event
 *   stream (application/vnd.amazon.eventstream) encoded with
 *   @smithy/eventstream-codec: `messageStart`, `contentBlockStart` (tool
 *   use), `contentBlockDelta` (text, tool input fragments, reasoning),
 *   `contentBlockStop`, `messageStop`, `metadata`, each with the random
 *   padding field `p` Bedrock adds; or an exception frame
 *   (`:message-type: exception`) mid-stream;
 * - `POST /model/<id>/invoke` for Titan text embeddings (`inputText`, one
 *   text) and Cohere embed (`texts`, `input_type`), with the
 *   `x-amzn-bedrock-input-token-count` header;
 * - `POST /model/<id>/invoke` and `/invoke-with-response-stream` for a
 *   Claude model (the id contains `anthropic.`): Anthropic's Messages body
 *   as Bedrock takes it (AWS's "Anthropic Claude Messages API" page:
 *   `anthropic_version: "bedrock-2023-05-31"` required, `anthropic_beta`
 *   a list of strings, no `model` or `stream`, the rest checked as the
 *   Anthropic fake checks it); the answer a Message, or an event stream
 *   whose `chunk` events carry `{"bytes": <base64 of one Anthropic event's
 *   JSON>}` (no pings; `message_stop` with
 *   `amazon-bedrock-invocationMetrics`), or an exception frame mid-stream;
 * - `GET /async-invoke`: ListAsyncInvokes, the gateway's free probe;
 * - errors as `{"message": …}` with `x-amzn-errortype` and
 *   `x-amzn-requestid`.
 */
import type { ServerResponse } from 'node:http';
import { EventStreamCodec, type MessageHeaders } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { messageEvents, messageOf, requestProblem as anthropicProblem, type AnthropicReply } from './anthropic-upstream.js';
import { sendJson, startFakeServer, type FakeRequest, type FakeServer } from './http-fake.js';
import { verifySigV4, type SignedRequest, type SigV4Refusal, type SigV4Scope } from './sigv4.js';

export const BEDROCK_REGION = 'us-east-1';
/** The fake's AWS credentials (the documentation's example key pair, as the SDK's tests use). */
export const AWS_KEYS = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' } as const;
/** A second identity whose requests must carry this session token. */
export const AWS_SESSION_KEYS = { accessKeyId: 'ASIAIOSFODNN7SESSION', secretAccessKey: 'session/secret/key+0123456789abcdefghijkl', sessionToken: 'FwoGZXIvYXdzEFAKE//session+token/0123456789abcdef==' } as const;
export const BEDROCK_API_KEY = 'ABSKQmVkcm9ja0FQSUtleS1mYWtlLTAxMjM0NTY3ODk=';

export type ConverseBlock =
  | { readonly text: string }
  | { readonly toolUse: { readonly toolUseId: string; readonly name: string; readonly input: Record<string, unknown> } }
  | { readonly reasoningContent: { readonly reasoningText: { readonly text: string; readonly signature: string } } };

export interface TokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadInputTokens?: number;
  readonly cacheWriteInputTokens?: number;
}

/** What the fake does with one Converse or ConverseStream request. */
export type BedrockReply =
  /**
   * An answer (JSON, or its event stream): `intervalMs` between stream frames (0: one write);
   * `cuts`: write the stream's bytes cut at these offsets instead, 1 ms apart.
   */
  | { readonly kind: 'message'; readonly content?: readonly ConverseBlock[]; readonly stopReason?: string; readonly usage?: TokenUsage; readonly intervalMs?: number; readonly cuts?: readonly number[] }
  /** An error answer: this status, Bedrock's error body and type header, and extra headers (retry-after…). */
  | { readonly kind: 'error'; readonly status: number; readonly type: string; readonly message: string; readonly headers?: Record<string, string> }
  /** A stream that sends an exception frame after messageStart (and after a text delta when `afterContent`). */
  | { readonly kind: 'exception'; readonly name: string; readonly message: string; readonly afterContent: boolean }
  /** A stream that ends cleanly but before messageStop (after a text delta). */
  | { readonly kind: 'cut-short' }
  /** Streams: messageStart, then nothing until the client leaves. */
  | { readonly kind: 'hang' };

/** What the fake does with one InvokeModel or InvokeModelWithResponseStream call of a Claude model. */
export type ClaudeReply =
  /** A Message (Anthropic's blocks), or its events when the call streams; `intervalMs` between frames (0: one write). */
  | (Extract<AnthropicReply, { kind: 'message' }> & { readonly intervalMs?: number })
  /** An error answer: this status, Bedrock's error body and type header, and extra headers. */
  | Extract<BedrockReply, { kind: 'error' }>
  /** A stream that sends an exception frame after message_start (and after a text delta when `afterContent`). */
  | Extract<BedrockReply, { kind: 'exception' }>;

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

export interface BedrockUpstream extends FakeServer {
  /** The `api_base` for a deployment (the origin: the adapter adds /model/…). */
  readonly url: string;
  /** Queues replies for the next Converse and ConverseStream requests, one each. */
  script(...replies: BedrockReply[]): void;
  /** The Converse and ConverseStream requests received (the model id decoded as `modelId`). */
  converse(): Array<FakeRequest & { modelId: string }>;
  /** Queues replies for the next InvokeModel / InvokeModelWithResponseStream calls of a Claude model, one each. */
  scriptClaude(...replies: ClaudeReply[]): void;
  /** The InvokeModel and InvokeModelWithResponseStream requests received. */
  invocations(): Array<FakeRequest & { modelId: string }>;
  /** Requests refused for their credentials or signature, with the reason. */
  readonly refused: string[];
  /** The fake's clock runs this far from the host's (a skewed client, seen from AWS). */
  skewMs: number;
  /** performance.now() when the last frame of the last stream was written. */
  lastFrameAt: number;
  /**
   * Takes requests signed with these keys too (temporary credentials from an STS or container
   * credentials fake: a request must then carry the session token), until `reset`.
   */
  trust(identity: Identity): void;
  reset(): void;
}

const KNOWN_FIELDS = new Set(['messages', 'system', 'inferenceConfig', 'toolConfig', 'guardrailConfig', 'additionalModelRequestFields', 'promptVariables', 'additionalModelResponseFieldPaths', 'requestMetadata', 'performanceConfig', 'serviceTier']);
const INFERENCE_FIELDS = new Set(['maxTokens', 'temperature', 'topP', 'stopSequences']);

const codec = new EventStreamCodec(toUtf8, fromUtf8);

export async function startBedrockUpstream(): Promise<BedrockUpstream> {
  const queue: BedrockReply[] = [];
  const claudeQueue: ClaudeReply[] = [];
  const refused: string[] = [];
  let served = 0;
  const state = { skewMs: 0, lastFrameAt: 0 };
  const identities = new Map(IDENTITIES);
  const server = await startFakeServer((req, res, { later, alive }) => {
    const requestId = `fake-${String(++served).padStart(4, '0')}-0000-0000-0000-000000000000`;
    const headers = { 'x-amzn-requestid': requestId };
    {
      const refusal = authenticate(req, Date.now() + state.skewMs, identities);
      if (refusal !== null) {
        refused.push(`${refusal.type}: ${refusal.message}`);
        return bedrockError(res, 403, refusal.type, refusal.message, headers);
      }
      if (req.method === 'GET' && req.path === '/async-invoke') return sendJson(res, 200, { asyncInvokeSummaries: [] }, headers);
      const route = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/.exec(req.path);
      if (req.method !== 'POST' || route === null) return bedrockError(res, 404, 'UnknownOperationException', `Unknown operation ${req.method} ${req.path}`, headers);
      const [, segment, action] = route as unknown as [string, string, string];
      const modelId = decodeURIComponent(segment);
      if (isClaude(modelId) && (action === 'invoke' || action === 'invoke-with-response-stream')) {
        const problem = claudeProblem(req.body, modelId);
        if (problem !== null) return bedrockError(res, 400, 'ValidationException', problem, headers);
        const reply = claudeQueue.shift() ?? { kind: 'message', content: [{ type: 'text', text: `Hello! You said: ${lastClaudeUserText(req.body)}` }] };
        if (reply.kind === 'error') return bedrockError(res, reply.status, reply.type, reply.message, { ...headers, ...reply.headers });
        const id = `msg_bdrk_${String(served).padStart(4, '0')}`;
        const model = claudeModelName(modelId);
        if (action === 'invoke') {
          if (reply.kind !== 'message') throw new Error(`a "${reply.kind}" reply needs a stream request`);
          const message = messageOf(id, model, reply);
          return sendJson(res, 200, message, { ...headers, 'x-amzn-bedrock-input-token-count': String(message.usage.input_tokens), 'x-amzn-bedrock-output-token-count': String(message.usage.output_tokens), 'x-amzn-bedrock-invocation-latency': '321' });
        }
        res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-bedrock-content-type': 'application/json', ...headers });
        const write = (frames: Uint8Array[], intervalMs: number) => writeFrames(res, frames, intervalMs, later, alive, true, () => (state.lastFrameAt = performance.now()));
        if (reply.kind === 'exception') {
          const start = messageEvents(id, model, { kind: 'message', content: [{ type: 'text', text: 'Partly' }] });
          return write([...start.slice(0, reply.afterContent ? 3 : 1).map(chunkFrame), exceptionFrame(reply.name, reply.message)], 0);
        }
        return write(claudeStreamFrames(id, model, reply), reply.intervalMs ?? 0);
      }
      if (action === 'invoke-with-response-stream') return bedrockError(res, 400, 'ValidationException', 'The model is unsupported for streaming.', headers);
      if (action === 'invoke') return invokeModel(res, modelId, req.body, headers);
      const problem = converseProblem(req.body);
      if (problem !== null) return bedrockError(res, 400, 'ValidationException', problem, headers);
      const reply = queue.shift() ?? { kind: 'message', content: [{ text: `Hello! You said: ${lastUserText(req.body)}` }] };
      if (reply.kind === 'error') return bedrockError(res, reply.status, reply.type, reply.message, { ...headers, ...reply.headers });
      if (action === 'converse') {
        if (reply.kind !== 'message') throw new Error(`a "${reply.kind}" reply needs a stream request`);
        return sendJson(res, 200, converseAnswer(reply), headers);
      }
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', ...headers });
      const write = (frames: Uint8Array[], intervalMs: number, end: boolean) => writeFrames(res, frames, intervalMs, later, alive, end, () => (state.lastFrameAt = performance.now()));
      switch (reply.kind) {
        case 'message': {
          const frames = streamFrames(reply);
          if (reply.cuts !== undefined) return writeCut(res, Buffer.concat(frames), reply.cuts, later, alive);
          return write(frames, reply.intervalMs ?? 0, true);
        }
        case 'exception':
          return write([eventFrame('messageStart', { role: 'assistant' }), ...(reply.afterContent ? [textDelta(0, 'Partly')] : []), exceptionFrame(reply.name, reply.message)], 0, true);
        case 'cut-short':
          return write([eventFrame('messageStart', { role: 'assistant' }), textDelta(0, 'Partly')], 0, true);
        case 'hang':
          return write([eventFrame('messageStart', { role: 'assistant' })], 0, false);
      }
    }
  });
  return {
    ...server,
    url: server.origin,
    refused,
    get skewMs() {
      return state.skewMs;
    },
    set skewMs(ms: number) {
      state.skewMs = ms;
    },
    get lastFrameAt() {
      return state.lastFrameAt;
    },
    script: (...replies) => void queue.push(...replies),
    scriptClaude: (...replies) => void claudeQueue.push(...replies),
    converse: () => withModel(server.received.filter((r) => /\/(converse|converse-stream)$/.test(r.path))),
    invocations: () => withModel(server.received.filter((r) => /\/(invoke|invoke-with-response-stream)$/.test(r.path))),
    trust: (identity) => void identities.set(identity.accessKeyId, identity),
    reset() {
      queue.length = 0;
      claudeQueue.length = 0;
      refused.length = 0;
      server.received.length = 0;
      state.skewMs = 0;
      identities.clear();
      for (const [id, identity] of IDENTITIES) identities.set(id, identity);
    },
  };
}

const withModel = (requests: FakeRequest[]) => requests.map((r) => Object.assign(r, { modelId: decodeURIComponent(r.path.split('/')[2] ?? '') }));

// ── authentication ──

export interface Identity {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

const IDENTITIES = new Map<string, Identity>([
  [AWS_KEYS.accessKeyId, AWS_KEYS],
  [AWS_SESSION_KEYS.accessKeyId, AWS_SESSION_KEYS],
]);

/** Bedrock runtime's SigV4 scope as seen by the fake, at the fake's clock `now`, taking the keys of `identities`. */
export const bedrockScope = (now: number, identities: ReadonlyMap<string, Identity> = IDENTITIES): SigV4Scope => ({ service: 'bedrock', region: BEDROCK_REGION, identity: (id) => identities.get(id), now });

/** A request the fake received, as the verifier reads it: target, header lines and body as they arrived. */
export function signedRequestOf(req: FakeRequest): SignedRequest {
  const headers: Array<[string, string]> = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string]);
  return { method: req.method, target: req.target, headers, body: req.raw };
}

/**
 * Null when AWS would take the request's credentials: a Bedrock API key as `Authorization:
 * Bearer`, or a SigV4 signature (sigv4.ts, checked against AWS's published suite); else its 403.
 */
function authenticate(req: FakeRequest, now: number, identities: ReadonlyMap<string, Identity>): SigV4Refusal | null {
  const authorization = String(req.headers.authorization ?? '');
  if (authorization.startsWith('Bearer ')) {
    return authorization.slice(7) === BEDROCK_API_KEY ? null : { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  }
  return verifySigV4(signedRequestOf(req), bedrockScope(now, identities));
}

// ── answers ──

function bedrockError(res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string>): void {
  sendJson(res, status, { message }, { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers });
}

const usageOf = (usage: TokenUsage | undefined) => {
  const u = { inputTokens: 12, outputTokens: 6, ...usage };
  return { ...u, totalTokens: u.inputTokens + u.outputTokens + (u.cacheReadInputTokens ?? 0) + (u.cacheWriteInputTokens ?? 0) };
};

const stopOf = (reply: Extract<BedrockReply, { kind: 'message' }>) => reply.stopReason ?? ((reply.content ?? []).some((b) => 'toolUse' in b) ? 'tool_use' : 'end_turn');

function converseAnswer(reply: Extract<BedrockReply, { kind: 'message' }>) {
  return { output: { message: { role: 'assistant', content: reply.content ?? [] } }, stopReason: stopOf(reply), usage: usageOf(reply.usage), metrics: { latencyMs: 321 } };
}

/** Bedrock pads every event with a random-length `p` field, so that lengths say nothing of the content. */
const padding = (n: number): string => 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'.slice(0, 1 + (n * 7) % 40);
let frameCount = 0;

function frame(headers: MessageHeaders, payload: unknown): Uint8Array {
  return codec.encode({ headers, body: fromUtf8(JSON.stringify(payload)) });
}

export function eventFrame(type: string, payload: Record<string, unknown>): Uint8Array {
  return frame(
    { ':event-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' }, ':message-type': { type: 'string', value: 'event' } },
    { ...payload, p: padding(frameCount++) },
  );
}

export function exceptionFrame(name: string, message: string): Uint8Array {
  return frame({ ':exception-type': { type: 'string', value: name }, ':content-type': { type: 'string', value: 'application/json' }, ':message-type': { type: 'string', value: 'exception' } }, { message });
}

const textDelta = (index: number, text: string) => eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { text } });

/** The frames of a streamed answer, in Bedrock's order (metadata last). */
export function streamFrames(reply: Extract<BedrockReply, { kind: 'message' }>): Uint8Array[] {
  const out = [eventFrame('messageStart', { role: 'assistant' })];
  (reply.content ?? []).forEach((block, index) => {
    if ('text' in block) {
      for (const piece of block.text.match(/\S+\s*|\s+/g) ?? []) out.push(textDelta(index, piece));
    } else if ('toolUse' in block) {
      out.push(eventFrame('contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: block.toolUse.toolUseId, name: block.toolUse.name } } }));
      for (const piece of JSON.stringify(block.toolUse.input).match(/[\s\S]{1,7}/g) ?? []) out.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: piece } } }));
    } else {
      out.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { text: block.reasoningContent.reasoningText.text } } }));
      out.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { signature: block.reasoningContent.reasoningText.signature } } }));
    }
    out.push(eventFrame('contentBlockStop', { contentBlockIndex: index }));
  });
  out.push(eventFrame('messageStop', { stopReason: stopOf(reply) }));
  out.push(eventFrame('metadata', { usage: usageOf(reply.usage), metrics: { latencyMs: 321 } }));
  return out;
}

function writeFrames(res: ServerResponse, frames: Uint8Array[], intervalMs: number, later: (ms: number, fn: () => void) => void, alive: () => boolean, end: boolean, wroteLast: () => void): void {
  const finish = () => {
    wroteLast();
    if (end) res.end();
  };
  if (intervalMs === 0) {
    res.write(Buffer.concat(frames));
    return finish();
  }
  let i = 0;
  const next = () => {
    if (!alive()) return;
    res.write(frames[i++]);
    if (i === frames.length) return finish();
    later(intervalMs, next);
  };
  next();
}

/** The bytes cut at `cuts`, each piece its own write 1 ms after the one before (so each is its own TCP read). */
function writeCut(res: ServerResponse, bytes: Buffer, cuts: readonly number[], later: (ms: number, fn: () => void) => void, alive: () => boolean): void {
  const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
  const pieces = [...points, bytes.length].map((end, i) => bytes.subarray(i === 0 ? 0 : (points[i - 1] as number), end));
  let i = 0;
  const next = () => {
    if (!alive()) return;
    res.write(pieces[i++]);
    if (i === pieces.length) return void res.end();
    later(1, next);
  };
  next();
}

// ── Claude through InvokeModel ──

/** Whether Bedrock serves the model id (a model, an inference profile or an ARN) with Anthropic's Messages body. */
const isClaude = (modelId: string): boolean => modelId.includes('anthropic.');

/** The `model` Bedrock's Claude answers name: the id without its provider prefix and version suffix. */
const claudeModelName = (modelId: string): string => modelId.replace(/^.*anthropic\./, '').replace(/-v\d+(:\d+)?$/, '');

/** One event of a streamed Claude answer as Bedrock frames it: a `chunk` event whose `bytes` are the event's JSON, base64. */
export const chunkFrame = (event: Record<string, unknown>): Uint8Array => eventFrame('chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64') });

/** The frames of a streamed Claude answer: Anthropic's events (no pings), message_stop with Bedrock's invocation metrics. */
export function claudeStreamFrames(id: string, model: string, reply: Extract<AnthropicReply, { kind: 'message' }>): Uint8Array[] {
  const events = messageEvents(id, model, reply);
  const usage = messageOf(id, model, reply).usage;
  return events.map((event) =>
    chunkFrame(event.type === 'message_stop' ? { ...event, 'amazon-bedrock-invocationMetrics': { inputTokenCount: usage.input_tokens, outputTokenCount: usage.output_tokens, invocationLatency: 321, firstByteLatency: 123 } } : event),
  );
}

/**
 * What Bedrock would refuse in a Claude InvokeModel body, as its ValidationException message
 * (Bedrock's own checks first: the version, the betas, no `model` or `stream`; then Anthropic's).
 */
export function claudeProblem(body: Record<string, unknown>, modelId: string): string | null {
  const malformed = (why: string) => `Malformed input request: ${why}, please reformat your input and try again.`;
  if (body.anthropic_version === undefined) return malformed('#: required key [anthropic_version] not found');
  if (body.anthropic_version !== BEDROCK_ANTHROPIC_VERSION) return malformed(`#/anthropic_version: ${String(body.anthropic_version)} is not a valid enum value`);
  for (const key of ['model', 'stream']) if (key in body) return malformed(`#: extraneous key [${key}] is not permitted`);
  const { anthropic_version: _version, anthropic_beta: betas, ...rest } = body;
  if (betas !== undefined && (!Array.isArray(betas) || betas.length === 0 || !betas.every((b) => typeof b === 'string' && b.length > 0 && b.trim() === b))) return malformed('#/anthropic_beta: expected a list of beta names');
  return anthropicProblem({ ...rest, model: modelId });
}

function lastClaudeUserText(body: Record<string, unknown>): string {
  const messages = body.messages as Array<{ role: string; content: unknown }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (last === undefined) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as Array<{ type: string; text?: string }>).filter((b) => b.type === 'text').map((b) => b.text).join(' ');
}

// ── embeddings ──

function invokeModel(res: ServerResponse, modelId: string, body: Record<string, unknown>, headers: Record<string, string>): void {
  const tokens = (texts: readonly string[]) => texts.reduce((n, t) => n + Math.max(1, Math.ceil(t.length / 4)), 0);
  if (/^amazon\.titan-embed-text/.test(modelId)) {
    const extra = Object.keys(body).filter((k) => !['inputText', 'dimensions', 'normalize', 'embeddingTypes'].includes(k));
    if (typeof body.inputText !== 'string' || extra.length > 0) return bedrockError(res, 400, 'ValidationException', `Malformed input request: ${extra.length > 0 ? `extraneous key [${extra[0]}] is not permitted` : 'required key [inputText] not found'}, please reformat your input and try again.`, headers);
    const dims = typeof body.dimensions === 'number' ? body.dimensions : 1024;
    const count = tokens([body.inputText]);
    return sendJson(res, 200, { embedding: vectorOf(body.inputText, dims), inputTextTokenCount: count }, { ...headers, 'x-amzn-bedrock-input-token-count': String(count) });
  }
  if (/^cohere\.embed-/.test(modelId)) {
    const texts = body.texts;
    if (!Array.isArray(texts) || texts.length === 0 || texts.length > 96 || !texts.every((t) => typeof t === 'string')) return bedrockError(res, 400, 'ValidationException', 'Malformed input request: #/texts: expected 1 to 96 strings, please reformat your input and try again.', headers);
    if (!['search_document', 'search_query', 'classification', 'clustering'].includes(String(body.input_type))) return bedrockError(res, 400, 'ValidationException', 'Malformed input request: #/input_type: required, please reformat your input and try again.', headers);
    const dims = typeof body.output_dimension === 'number' ? body.output_dimension : 1024;
    return sendJson(res, 200, { id: 'emb-fake', response_type: 'embeddings_floats', texts, embeddings: (texts as string[]).map((t) => vectorOf(t, dims)) }, { ...headers, 'x-amzn-bedrock-input-token-count': String(tokens(texts as string[])) });
  }
  return bedrockError(res, 400, 'ValidationException', `The provided model identifier is invalid.`, headers);
}

/** A vector seeded by the text, with values a float32 holds exactly (so base64 round-trips). */
export function vectorOf(text: string, dims: number): number[] {
  let h = 0;
  for (const c of text) h = (h * 31 + c.charCodeAt(0)) % 997;
  return Array.from({ length: dims }, (_, i) => ((h + i * 13) % 64) / 64 - 0.5);
}

// ── the request as Converse checks it ──

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function lastUserText(body: Record<string, unknown>): string {
  const messages = body.messages as Array<{ role: string; content: Array<Record<string, unknown>> }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return (last?.content ?? []).filter((b) => typeof b.text === 'string').map((b) => b.text).join(' ');
}

/**
 * What Converse would refuse in a request, as its ValidationException message; null for one it
 * takes. The rules the translation must respect (the API reference, and Bedrock's answers to
 * what breaks them): exported for the property test.
 */
export function converseProblem(body: Record<string, unknown>): string | null {
  for (const key of Object.keys(body)) if (!KNOWN_FIELDS.has(key)) return `1 validation error detected: Value at '${key}' failed to satisfy constraint: unknown field`;
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
  if (body.system !== undefined) {
    if (!Array.isArray(body.system)) return 'system: must be a list of system content blocks';
    for (const [i, block] of body.system.entries()) if (!isRecord(block) || typeof block.text !== 'string' || block.text.trim() === '') return `The text field in the SystemContentBlock object at system.${i} is blank. Add text to the text field, and try again.`;
  }
  if (body.inferenceConfig !== undefined) {
    if (!isRecord(body.inferenceConfig)) return 'inferenceConfig: must be an object';
    for (const key of Object.keys(body.inferenceConfig)) if (!INFERENCE_FIELDS.has(key)) return `inferenceConfig.${key}: unknown field`;
    const { maxTokens, stopSequences } = body.inferenceConfig;
    if (maxTokens !== undefined && (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1)) return 'inferenceConfig.maxTokens: must be an integer of at least 1';
    if (stopSequences !== undefined && (!Array.isArray(stopSequences) || stopSequences.some((s) => typeof s !== 'string' || s.length === 0))) return 'inferenceConfig.stopSequences: must be non-empty strings';
  }
  const toolNames = new Set<string>();
  if (body.toolConfig !== undefined) {
    const config = body.toolConfig;
    if (!isRecord(config) || !Array.isArray(config.tools) || config.tools.length === 0) return 'toolConfig.tools: must have at least one tool';
    for (const tool of config.tools) {
      const spec = isRecord(tool) ? tool.toolSpec : undefined;
      if (!isRecord(spec) || typeof spec.name !== 'string' || !isRecord(spec.inputSchema) || !isRecord(spec.inputSchema.json)) return 'toolConfig.tools: each tool needs a toolSpec with a name and inputSchema.json';
      if (spec.description !== undefined && (typeof spec.description !== 'string' || spec.description.length === 0)) return 'toolConfig.tools.toolSpec.description: must not be empty';
      toolNames.add(spec.name);
    }
    const choice = config.toolChoice;
    if (choice !== undefined) {
      if (!isRecord(choice) || Object.keys(choice).length !== 1) return 'toolConfig.toolChoice: must be one of auto, any, tool';
      if (isRecord(choice.tool) ? typeof choice.tool.name !== 'string' || !toolNames.has(choice.tool.name) : !isRecord(choice.auto) && !isRecord(choice.any)) return 'toolConfig.toolChoice: must be auto, any, or a tool of toolConfig.tools';
    }
  }
  let pending: Set<string> | null = null;
  let tools = false;
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant')) return `messages.${i}.role: must be user or assistant`;
    if (i === 0 && message.role !== 'user') return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
    if (i > 0 && (messages[i - 1] as Record<string, unknown>).role === message.role) return 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.';
    if (!Array.isArray(message.content) || message.content.length === 0) return `messages.${i}.content: must have at least one content block`;
    const answered = new Set<string>();
    const uses = new Set<string>();
    for (const [j, block] of message.content.entries()) {
      if (!isRecord(block) || Object.keys(block).length !== 1) return `messages.${i}.content.${j}: a content block has exactly one member`;
      if ('text' in block) {
        if (typeof block.text !== 'string' || block.text.trim() === '') return `The text field in the ContentBlock object at messages.${i}.content.${j} is blank. Add text to the text field, and try again.`;
      } else if (isRecord(block.image)) {
        if (message.role !== 'user' || !['png', 'jpeg', 'gif', 'webp'].includes(String(block.image.format)) || !isRecord(block.image.source) || typeof block.image.source.bytes !== 'string') return `messages.${i}.content.${j}.image: invalid image block`;
      } else if (isRecord(block.toolUse)) {
        tools = true;
        if (message.role !== 'assistant' || typeof block.toolUse.toolUseId !== 'string' || typeof block.toolUse.name !== 'string' || !isRecord(block.toolUse.input)) return `messages.${i}.content.${j}.toolUse: invalid toolUse block`;
        uses.add(block.toolUse.toolUseId);
      } else if (isRecord(block.toolResult)) {
        tools = true;
        const result = block.toolResult;
        if (message.role !== 'user' || typeof result.toolUseId !== 'string' || !Array.isArray(result.content)) return `messages.${i}.content.${j}.toolResult: invalid toolResult block`;
        for (const part of result.content) if (!isRecord(part) || typeof part.text !== 'string' || part.text.trim() === '') return `messages.${i}.content.${j}.toolResult.content: blank text`;
        answered.add(result.toolUseId);
      } else return `messages.${i}.content.${j}: unknown content block ${Object.keys(block)[0]}`;
    }
    if (pending !== null) {
      const missing = [...pending].filter((id) => !answered.has(id));
      if (missing.length > 0) return `Expected toolResult blocks at messages.${i}.content for the following Ids: ${missing.join(', ')}`;
    } else if (answered.size > 0) return `messages.${i}.content: toolResult blocks must answer the toolUse blocks of the turn before`;
    pending = message.role === 'assistant' && uses.size > 0 ? uses : null;
  }
  if (tools && body.toolConfig === undefined) return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.';
  return null;
}
