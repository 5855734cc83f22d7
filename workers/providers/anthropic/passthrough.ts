/**
 * The anthropic adapter's second kind of call: Anthropic's Messages API
 * passed through (CONTRACT.md, Anthropic Messages API (inbound), "To an
 * `anthropic` deployment: passed through"). The body goes as the caller
 * sent it with only `model` replaced (workers/inbound/messages/sink.ts made
 * it); the caller's `anthropic-version` and `anthropic-beta` go byte for
 * byte, the deployment's `anthropic_version` only when the caller sent
 * none; the answer, the stream's events and a 4xx come back as sent, a 529
 * as 529 when it is the last failure. `count_tokens` goes to Anthropic's
 * own `/v1/messages/count_tokens` the same way. Nothing is allowlisted:
 * fields and betas are an open list. No translator is involved: the
 * stream goes on as Anthropic's bytes (passthrough-relay.ts).
 */
import { providerKey, settingsOf } from '../../../protocol/config.js';
import type { HeaderList } from '../../../protocol/frames.js';
import { bodyText } from '../compatible.js';
import { streamEventLimit, type HttpDialect } from '../http-attempt.js';
import { messageReplyUsage } from '../messages-passthrough.js';
import { MessagesPassthroughRelay } from './passthrough-relay.js';
import type { AnthropicSettings } from './config.js';
import { anthropicHeaders } from './errors.js';

const PATHS = { messages: '/v1/messages', count_tokens: '/v1/messages/count_tokens' } as const;

/** The caller's header `name` from the call's flat list, or null. */
function callerHeader(headers: HeaderList, name: string): string | null {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1] as string;
  return null;
}

export const passthroughDialect: HttpDialect = {
  request(call, headers) {
    const key = providerKey(call.upstream.credentials);
    if (key !== null) headers['x-api-key'] = key;
    headers['anthropic-version'] = callerHeader(call.headers, 'anthropic-version') ?? settingsOf<AnthropicSettings>(call.upstream).anthropicVersion;
    const beta = callerHeader(call.headers, 'anthropic-beta');
    if (beta !== null) headers['anthropic-beta'] = beta;
    return { path: call.op === 'count_tokens' ? PATHS.count_tokens : PATHS.messages, body: JSON.stringify(call.body) };
  },
  headers: (raw) => anthropicHeaders(raw),
  // Anthropic's own error body, as sent.
  error: (_status, body) => ({ contentType: 'application/json', body }),
  reply: (call, body) => ({ body, usage: call.op === 'count_tokens' ? null : messageReplyUsage(bodyText(body)) }),
  // Anthropic's events as their bytes (passthrough-relay.ts).
  stream: (call) => new MessagesPassthroughRelay(streamEventLimit(call)),
  readsServerErrors: true,
  passesOverloaded: true,
};
