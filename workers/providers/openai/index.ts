/**
 * `openai`: any OpenAI-compatible upstream (OpenAI, vLLM, Ollama, LM
 * Studio, Groq, Together, …) at the route's `api_base`. The body is
 * forwarded with only `model` rewritten; the answer is passed on in the
 * pieces undici read it in, checked but not re-encoded, and so is a stream
 * (openai/stream.ts). Credentials: `Authorization: Bearer`.
 */
import { providerKey, type Credentials } from '../../../protocol/config.js';
import { GatewayError } from '../../../protocol/errors.js';
import { allowlistedHeaders } from '../../rate-limit-headers.js';
import { checkCompatible, looksLikeJson } from '../../response-body.js';
import type { Provider } from '../adapter.js';
import { httpAttempt, type HttpDialect } from '../http-attempt.js';
import { PassThroughRelay } from './stream.js';

/** `responses`: only for a deployment with params.responses_api (workers/inbound/responses/ sends the rest as chat). */
const PATHS = { chat: '/chat/completions', embeddings: '/embeddings', responses: '/responses' } as const;

/** `Authorization: Bearer <key>`, or nothing for a keyless self-hosted upstream. */
function bearer(headers: Record<string, string>, credentials: Credentials): void {
  const key = providerKey(credentials);
  if (key !== null) headers.authorization = `Bearer ${key}`;
}

const dialect: HttpDialect = {
  request(call, headers) {
    // Anthropic's Messages reach an OpenAI-compatible upstream translated to chat (workers/inbound/messages/).
    if (call.op === 'messages' || call.op === 'count_tokens') throw new GatewayError('unsupported_operation', 'the openai provider does not speak the Messages API');
    bearer(headers, call.upstream.credentials);
    return { path: PATHS[call.op], body: JSON.stringify(call.body) };
  },
  headers: allowlistedHeaders,
  // Already the compatible error object (or the provider's own text): passed on as sent.
  error: (_status, body) => ({ contentType: looksLikeJson(body) ? 'application/json' : 'text/plain; charset=utf-8', body }),
  reply: (call, body) => ({ body, usage: checkCompatible(call.op, body) }),
  stream: () => new PassThroughRelay(),
  readsServerErrors: false,
};

export const openaiProvider: Provider = {
  call: (call, sink) => httpAttempt(dialect, call, sink),
  // The model list: what every OpenAI-compatible server has, and never billed.
  probe(target) {
    const headers: Record<string, string> = { accept: 'application/json' };
    bearer(headers, target.credentials);
    return { path: '/models', headers };
  },
};
