/**
 * The bedrock adapter's second kind of call: Anthropic's Messages API to a
 * Claude model on Bedrock (the model id contains `anthropic.`), through
 * InvokeModel / InvokeModelWithResponseStream (CONTRACT.md, Anthropic
 * Messages API (inbound), "To a `bedrock` deployment of an Anthropic
 * model"; AWS's "Anthropic Claude Messages API" model parameters page):
 *
 * - the body is the caller's Messages body with `model` and `stream`
 *   removed (the model is in the path, streaming is the action),
 *   `anthropic_version: "bedrock-2023-05-31"`, and the caller's
 *   `anthropic-beta` header values as the `anthropic_beta` array;
 * - a whole answer is Anthropic's Message as Bedrock returns it, passed on;
 * - each `chunk` frame of the event stream carries `{"bytes": <base64>}`,
 *   the JSON of one Anthropic event: decoded, it goes on as the SSE event it
 *   names (`event: <type>`), unchanged; an exception frame is the attempt's
 *   failure (errors.ts), before or after the commit;
 * - a 4xx goes back in the compatible envelope, which the Messages sink
 *   rewrites into Anthropic's shape (workers/inbound/messages/sink.ts).
 */
import type { HeaderList } from '../../../protocol/frames.js';
import { GatewayError } from '../../../protocol/errors.js';
import { bodyText, isRecord, tryParse } from '../compatible.js';
import type { HttpDialect } from '../http-attempt.js';
import type { ProviderCall } from '../adapter.js';
import { MessagesEvents, messageReplyUsage } from '../messages-passthrough.js';
import { TranslatingRelay } from '../translating-relay.js';
import { ERROR, EXCEPTION } from './stream.js';
import { streamExceptionFailure } from './errors.js';

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** Whether a bedrock deployment's model is one of Anthropic's (a model id, an inference profile or an ARN). */
export const isAnthropicModel = (modelId: string): boolean => modelId.includes('anthropic.');

/** The caller's `anthropic-beta` values (comma-separated, possibly in several headers) as a list. */
export function betasOf(headers: HeaderList): string[] {
  const betas: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] !== 'anthropic-beta') continue;
    for (const value of (headers[i + 1] as string).split(',')) if (value.trim().length > 0) betas.push(value.trim());
  }
  return betas;
}

/** The InvokeModel body of a Messages call (pure). */
export function invokeBody(body: Readonly<Record<string, unknown>>, headers: HeaderList): Record<string, unknown> {
  const { model: _model, stream: _stream, ...rest } = body;
  const out: Record<string, unknown> = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest };
  const betas = betasOf(headers);
  if (betas.length > 0) out.anthropic_beta = betas;
  return out;
}

/** A `chunk` frame's payload → the Anthropic event it carries (JSON text); exceptions are the attempt's failure. */
export function chunkEvent(name: string | null, data: string): string | null {
  if (name !== null && (name.startsWith(EXCEPTION) || name.startsWith(ERROR))) throw streamExceptionFailure(name.slice(name.indexOf(':') + 1), data);
  if (name !== 'chunk') return null;
  let bytes = bytesOf(data);
  if (bytes === null) {
    const payload = tryParse(data);
    if (!isRecord(payload) || typeof payload.bytes !== 'string') throw new GatewayError('upstream_invalid_response', 'the provider stream sent a chunk without bytes');
    bytes = payload.bytes;
  }
  return Buffer.from(bytes, 'base64').toString('utf8');
}

const BYTES_KEY = '{"bytes":"';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** What may follow the bytes: Bedrock's `p`, a padding of letters and digits that hides the event's length. */
const PADDING = /^(?:,"p":"[A-Za-z0-9]*")?\}$/;

/** The base64 of a chunk payload as Bedrock writes it (`{"bytes":"…"}`, `"p"` after it or not), read without the parse; null for any other text (parsed). */
function bytesOf(data: string): string | null {
  if (data.substring(0, BYTES_KEY.length) !== BYTES_KEY) return null;
  const close = data.indexOf('"', BYTES_KEY.length);
  if (close === -1) return null;
  const bytes = data.slice(BYTES_KEY.length, close);
  return BASE64.test(bytes) && PADDING.test(data.slice(close + 1)) ? bytes : null;
}

/** `POST /model/<id>/<action>`, authorized (index.ts). */
type Invoke = (call: ProviderCall, action: string, body: string, headers: Record<string, string>) => Promise<{ path: string; body: string }>;

/** The dialect, given how the adapter authorizes and addresses a request (index.ts's `invoke`). */
export function passthroughDialect(base: Pick<HttpDialect, 'headers' | 'error' | 'streamParser'>, invoke: Invoke): HttpDialect {
  return {
    request: (call, headers) => invoke(call, call.stream ? 'invoke-with-response-stream' : 'invoke', JSON.stringify(invokeBody(call.body, call.headers)), headers),
    headers: base.headers,
    error: base.error,
    reply: (_call, body) => ({ body, usage: messageReplyUsage(bodyText(body)) }),
    stream: () => new TranslatingRelay(new MessagesEvents(chunkEvent)),
    ...(base.streamParser === undefined ? {} : { streamParser: base.streamParser }),
    streamContentType: 'application/vnd.amazon.eventstream',
    readsServerErrors: true,
  };
}
