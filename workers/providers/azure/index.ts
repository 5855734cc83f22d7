/**
 * `azure`: Azure OpenAI. The compatible format on the wire, at
 * `<api_base>/openai/deployments/<deployment>/{chat/completions,embeddings}?api-version=<api_version>`
 * with the key in an `api-key` header; the deployment name is the model id,
 * one encoded path segment. Answers, streams and errors are normalised
 * (azure/normalise.ts); its rate-limit headers (`x-ratelimit-*`,
 * `retry-after`, `retry-after-ms`) are already the allowlist's names.
 */
import { providerKey, settingsOf, type Upstream } from '../../../protocol/config.js';
import type { AzureSettings } from './config.js';
import type { Usage } from '../../../protocol/frames.js';
import { GatewayError } from '../../../protocol/errors.js';
import { allowlistedHeaders } from '../../rate-limit-headers.js';
import { checkCompatible, usageOf } from '../../response-body.js';
import { decodedEvents, serializeEvents, type SseBatch } from '../../sse.js';
import type { Provider } from '../adapter.js';
import { bodyText, isRecord, parseBody } from '../compatible.js';
import { httpAttempt, type HttpDialect, type StreamRelay } from '../http-attempt.js';
import { pathSegment } from '../path.js';
import { AzureStreamNormaliser, azureError, normaliseCompletion } from './normalise.js';

const OPERATIONS = { chat: 'chat/completions', embeddings: 'embeddings' } as const;
const encoder = new TextEncoder();

const apiVersion = (upstream: Pick<Upstream, 'settings'>): string => encodeURIComponent(settingsOf<AzureSettings>(upstream).apiVersion);

function apiKey(headers: Record<string, string>, upstream: Pick<Upstream, 'credentials'>): void {
  const key = providerKey(upstream.credentials);
  if (key !== null) headers['api-key'] = key;
}

const dialect: HttpDialect = {
  request(call, headers) {
    // A Responses API call reaches azure translated to chat (its config.ts: no pass-through yet).
    if (call.op === 'responses') throw new GatewayError('unsupported_operation', 'the azure provider does not pass the Responses API through');
    // Anthropic's Messages reach azure translated to chat (workers/inbound/messages/).
    if (call.op === 'messages' || call.op === 'count_tokens') throw new GatewayError('unsupported_operation', 'the azure provider does not speak the Messages API');
    apiKey(headers, call.upstream);
    const path = `/openai/deployments/${pathSegment(call.upstream.upstreamModel)}/${OPERATIONS[call.op]}?api-version=${apiVersion(call.upstream)}`;
    return { path, body: JSON.stringify(call.body) };
  },
  headers: allowlistedHeaders,
  error: (status, body) => azureError(status, bodyText(body)),
  reply(call, body) {
    // Embeddings carry no annotations: passed on as read.
    if (call.op === 'embeddings') return { body, usage: checkCompatible(call.op, body) };
    const answer = parseBody(body);
    if (!isRecord(answer) || !Array.isArray(answer.choices)) throw new GatewayError('upstream_invalid_response', 'the provider response has no "choices" array');
    return { body: encoder.encode(JSON.stringify(normaliseCompletion(answer))), usage: usageOf(answer) };
  },
  stream: () => new AzureRelay(),
  readsServerErrors: true,
};

/** Every event normalised; usage taken from the chunk that carries it. */
export class AzureRelay implements StreamRelay {
  readonly #normaliser = new AzureStreamNormaliser();

  batch(batch: SseBatch): Uint8Array | null {
    const { events } = decodedEvents(batch);
    const out: string[] = [];
    for (const data of events) {
      const normalised = this.#normaliser.event(data);
      if (normalised !== null) out.push(normalised);
    }
    return out.length === 0 ? null : encoder.encode(serializeEvents(out));
  }

  end(rest: SseBatch): Uint8Array | null {
    return this.batch(rest);
  }

  usage(): Usage | null {
    return this.#normaliser.usage;
  }
}

export const azureProvider: Provider = {
  call: (call, sink) => httpAttempt(dialect, call, sink),
  // Models - List, free: https://learn.microsoft.com/rest/api/azureopenai/models/list
  probe(target) {
    const headers: Record<string, string> = { accept: 'application/json' };
    apiKey(headers, target);
    return { path: `/openai/models?api-version=${apiVersion(target)}`, headers };
  },
};
