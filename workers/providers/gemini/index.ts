/**
 * `gemini`: Google's Gemini API, translated both ways, streams included:
 * `POST <api_base>/v1beta/models/<model>:generateContent`,
 * `:streamGenerateContent?alt=sse` and `:batchEmbedContents`, the model one
 * encoded path segment. Credentials: `x-goog-api-key` (never the `key`
 * query parameter, which would put the key in URLs and their logs). The
 * pure translators are request.ts, response.ts, stream.ts and
 * embeddings.ts; the stream's framing stream-parser.ts; errors errors.ts.
 * Gemini sends no rate-limit headers: the allowlist's own are kept, and a
 * 429's retry delay from its body.
 */
import { randomBytes } from 'node:crypto';
import { providerKey, type Upstream } from '../../../protocol/config.js';
import { GatewayError } from '../../../protocol/errors.js';
import { allowlistedHeaders } from '../../rate-limit-headers.js';
import { showsThinking, type Provider, type ProviderCall } from '../adapter.js';
import { bodyText, isRecord, parseBody } from '../compatible.js';
import { httpAttempt, type HttpDialect } from '../http-attempt.js';
import { pathSegment } from '../path.js';
import { TranslatingRelay } from '../translating-relay.js';
import { toBatchEmbedRequest, toEmbeddingList } from './embeddings.js';
import { geminiError } from './errors.js';
import { toGenerateContentRequest } from './request.js';
import { toChatCompletion, type ResponseOptions } from './response.js';
import { GenerateContentStreamTranslator } from './stream.js';
import { GeminiStreamParser } from './stream-parser.js';

const encoder = new TextEncoder();

function apiKey(headers: Record<string, string>, upstream: Pick<Upstream, 'credentials'>): void {
  const key = providerKey(upstream.credentials);
  if (key !== null) headers['x-goog-api-key'] = key;
}

/** What the answer's translation needs of the call: the clock, the model, fresh ids, whether thoughts were asked for. */
const answerOptions = (call: ProviderCall): ResponseOptions => ({
  created: Math.floor(Date.now() / 1000),
  model: call.upstream.upstreamModel,
  idSeed: randomBytes(9).toString('base64url'),
  thoughts: showsThinking(call.thinking),
});

const inputCount = (call: ProviderCall): number => (Array.isArray(call.body.input) ? call.body.input.length : 1);

const dialect: HttpDialect = {
  request(call, headers) {
    // A Responses API call reaches gemini translated to chat (workers/inbound/responses/).
    if (call.op === 'responses' || call.op === 'messages' || call.op === 'count_tokens') throw new GatewayError('unsupported_operation', 'the gemini provider takes chat completions and embeddings only');
    const model = call.upstream.upstreamModel;
    const at = `/v1beta/models/${pathSegment(model)}`;
    const body = call.op === 'embeddings' ? toBatchEmbedRequest(call.body, model) : toGenerateContentRequest(call.body, { dropParams: call.upstream.dropParams, droppable: call.droppable, thinking: call.thinking });
    apiKey(headers, call.upstream);
    if (call.op === 'embeddings') return { path: `${at}:batchEmbedContents`, body: JSON.stringify(body) };
    return { path: call.stream ? `${at}:streamGenerateContent?alt=sse` : `${at}:generateContent`, body: JSON.stringify(body) };
  },
  headers: allowlistedHeaders,
  error: (status, body) => geminiError(status, bodyText(body)),
  reply(call, body) {
    if (call.op === 'embeddings') {
      const list = toEmbeddingList(parseBody(body), { model: call.upstream.upstreamModel, base64: call.body.encoding_format === 'base64', inputs: inputCount(call) });
      return { body: encoder.encode(JSON.stringify(list)), usage: null };
    }
    const { completion, usage } = toChatCompletion(parseBody(body), answerOptions(call));
    return { body: encoder.encode(JSON.stringify(completion)), usage };
  },
  stream(call) {
    const options = call.body.stream_options;
    const includeUsage = isRecord(options) && options.include_usage === true;
    return new TranslatingRelay(new GenerateContentStreamTranslator({ ...answerOptions(call), includeUsage }));
  },
  streamParser: (maxEventBytes) => new GeminiStreamParser(maxEventBytes),
  readsServerErrors: true,
};

export const geminiProvider: Provider = {
  call: (call, sink) => httpAttempt(dialect, call, sink),
  // The model list (models.list, one model a page): free, and it checks the key.
  probe(target) {
    const headers: Record<string, string> = { accept: 'application/json' };
    apiKey(headers, target);
    return { path: '/v1beta/models?pageSize=1', headers };
  },
};
