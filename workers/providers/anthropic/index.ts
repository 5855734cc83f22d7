/**
 * `anthropic`: the Messages API (`POST <api_base>/v1/messages`), two kinds
 * of call. A chat completions call (and a Responses call, which reaches it
 * as chat) is translated both ways, streams included: the pure translators
 * are request.ts, response.ts and stream.ts. A Messages call
 * (`POST /v1/messages`, the `messages` operation) and `count_tokens`
 * (`/v1/messages/count_tokens`) are passed through as the caller sent them
 * (passthrough.ts; `speaksMessages` tells the session so, and
 * workers/inbound/messages/sink.ts hands it the body and the caller's
 * anthropic-* headers). Credentials: `x-api-key`, with `anthropic-version`
 * (`anthropic_version`, default 2023-06-01; the caller's own on a
 * passthrough). Errors and rate-limit headers are errors.ts. No embeddings
 * API: 400 `unsupported_operation`.
 */
import { providerKey, settingsOf, type Upstream } from '../../../protocol/config.js';
import type { AnthropicSettings } from './config.js';
import { GatewayError } from '../../../protocol/errors.js';
import type { Provider } from '../adapter.js';
import { includesUsage, jsonModeOf } from '../chat-request.js';
import { bodyText, parseBody } from '../compatible.js';
import { httpAttempt, type HttpDialect } from '../http-attempt.js';
import { TranslatingRelay } from '../translating-relay.js';
import { anthropicError, anthropicHeaders } from './errors.js';
import { toMessagesRequest } from './request.js';
import { toChatCompletion } from './response.js';
import { MessagesStreamTranslator } from './stream.js';
import { passthroughDialect } from './passthrough.js';

const encoder = new TextEncoder();

function credentials(headers: Record<string, string>, upstream: Pick<Upstream, 'credentials' | 'settings'>): void {
  const key = providerKey(upstream.credentials);
  if (key !== null) headers['x-api-key'] = key;
  headers['anthropic-version'] = settingsOf<AnthropicSettings>(upstream).anthropicVersion;
}

const created = (): number => Math.floor(Date.now() / 1000);

const dialect: HttpDialect = {
  request(call, headers) {
    if (call.op === 'embeddings') throw new GatewayError('unsupported_operation', 'the anthropic provider has no embeddings API');
    // A Responses API call reaches anthropic translated to chat (workers/inbound/responses/).
    if (call.op !== 'chat') throw new GatewayError('unsupported_operation', 'the anthropic provider takes chat completions only');
    credentials(headers, call.upstream);
    const request = toMessagesRequest(call.body, { model: call.upstream.upstreamModel, dropParams: call.upstream.dropParams, droppable: call.droppable });
    return { path: '/v1/messages', body: JSON.stringify(request) };
  },
  headers: (raw) => anthropicHeaders(raw),
  error: (status, body) => anthropicError(status, bodyText(body)),
  reply(call, body) {
    const { completion, usage } = toChatCompletion(parseBody(body), { created: created(), jsonMode: jsonModeOf(call.body) });
    return { body: encoder.encode(JSON.stringify(completion)), usage };
  },
  stream(call) {
    return new TranslatingRelay(new MessagesStreamTranslator({ created: created(), includeUsage: includesUsage(call.body), jsonMode: jsonModeOf(call.body) }));
  },
  readsServerErrors: true,
};

export const anthropicProvider: Provider = {
  // Messages and count_tokens pass through (passthrough.ts); chat is translated to Messages.
  call: (call, sink) => httpAttempt(call.op === 'messages' || call.op === 'count_tokens' ? passthroughDialect : dialect, call, sink),
  speaksMessages: () => true,
  // The model list (GET /v1/models): free, and it checks the key.
  probe(target) {
    const headers: Record<string, string> = { accept: 'application/json' };
    credentials(headers, target);
    return { path: '/v1/models', headers };
  },
};
