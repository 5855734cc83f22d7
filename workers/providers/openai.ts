/**
 * Any OpenAI-compatible upstream (OpenAI, vLLM, Ollama, LM Studio, Groq,
 * Together, …) at the route's `api_base`. The body is forwarded with only
 * `model` rewritten. One attempt: a success goes to the sink (a body
 * passed on in the pieces undici read it in); anything else is thrown,
 * classified (workers/routing/failure.ts) for the attempt loop.
 */
import { bearerKey } from '../../protocol/config.js';
import type { Usage } from '../../protocol/frames.js';
import { GatewayError } from '../../protocol/errors.js';
import { VERSION } from '../../protocol/version.js';
import { allowlistedHeaders } from '../rate-limit-headers.js';
import { checkCompatible, looksLikeJson, usageOf, usageValueAt } from '../response-body.js';
import { Deadlines } from '../deadlines.js';
import { SseParser, serializeEvents, serializeNamedEvents, type SseBatch } from '../sse.js';
import { utf8Text } from '../bytes.js';
import { toUpstreamError, upstreamExchange, UpstreamExchange, type UpstreamHead } from '../upstream-http.js';
import { AttemptFailure, providerFailure, retryAfterMs } from '../routing/failure.js';
import type { AttemptSink, ProviderAdapter, ProviderCall } from './adapter.js';

/** `responses`: only for a deployment with params.responses_api (workers/inbound/responses/ sends the rest as chat). */
const PATHS = { chat: '/chat/completions', embeddings: '/embeddings', responses: '/responses' } as const;
const USER_AGENT = `switchyard/${VERSION}`;
/** Cap on one SSE event, so an upstream that never ends an event cannot grow memory. */
const MAX_EVENT_BYTES = 8 * 1024 * 1024;

export const openaiAdapter: ProviderAdapter = {
  async call(call, sink) {
    const started = performance.now();
    const { upstream } = call;
    if (upstream.apiBase === null) throw new GatewayError('internal_error', 'this provider has no api_base');
    // call.control is "stop now": the client left, or a deadline passed (then its reason is the GatewayError).
    const { control } = call;
    const deadlines = new Deadlines((reason) => control.abort(reason), upstream.timeouts, call.budgetMs);
    const exchange = new UpstreamExchange(call.maxResponseBytes, deadlines, call.stream ? isEventStream : null);
    control.onAbort((reason) => exchange.abort(reason));
    let answered = false;
    try {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'x-request-id': call.requestId,
        accept: call.stream ? 'text/event-stream' : 'application/json',
      };
      // A keyless route (credentials not_required: a self-hosted vLLM, Ollama…) is called with no Authorization header.
      const key = bearerKey(upstream.credentials);
      if (key !== null) headers.authorization = `Bearer ${key}`;
      upstreamExchange(upstream.apiBase, upstream.timeouts.connectMs, 'POST', PATHS[call.op], JSON.stringify(call.body), headers, exchange);
      const { status, headers: responseHeaders } = await exchange.head;
      call.headersAt = performance.now();
      answered = true;
      const passHeaders = allowlistedHeaders(responseHeaders);
      if (status >= 300 && status < 400) throw new AttemptFailure('transient', 'upstream_redirect', 'the provider answered with a redirect, which the gateway does not follow', status, passHeaders);
      if (status >= 500 || status < 200 || status === 408) throw providerFailure(status, passHeaders, retryAfterMs(responseHeaders), '', null);
      if (status >= 400) {
        // CONTRACT.md: provider 4xx pass through with their status and body (when no other deployment should be tried).
        const body = await exchange.body;
        throw providerFailure(status, passHeaders, retryAfterMs(responseHeaders), looksLikeJson(body) ? 'application/json' : 'text/plain; charset=utf-8', body);
      }
      if (call.stream) {
        if (!isEventStream({ status, headers: responseHeaders })) {
          throw new GatewayError('upstream_invalid_response', 'the provider answered a stream request without an event stream');
        }
        sink.head(passHeaders);
        const usage = await relayEvents(exchange, call, sink, deadlines);
        sink.end(usage, performance.now() - started);
        return;
      }
      const body = await exchange.body;
      const usage = checkCompatible(call.op, body);
      sink.reply(status, 'application/json', passHeaders, body, usage, performance.now() - started);
    } catch (err) {
      if (control.aborted && control.reason instanceof GatewayError) throw control.reason;
      if (err instanceof AttemptFailure) throw err;
      throw toUpstreamError(err, answered);
    } finally {
      control.onAbort(null);
      deadlines.clear();
      // Whatever is not read by now is not wanted: the connection is dropped rather than drained.
      exchange.release();
    }
  },
};

/** A stream request's success answer: relayed as it comes; anything else is collected. */
const isEventStream = ({ status, headers }: UpstreamHead): boolean =>
  status >= 200 && status < 300 && String(headers['content-type'] ?? '').startsWith('text/event-stream');

const encoder = new TextEncoder();
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * Relays SSE events as they arrive: each upstream chunk's complete events
 * become one data frame, the chunk itself when it is already canonical.
 * Every event's data must be a JSON object (or `[DONE]`), checked by
 * structure as large bodies are (response-body.ts): parsing every chunk
 * cost 1.9 µs an event, most of what the worker did for a stream beyond
 * undici. Only an event that may carry usage is parsed. Pausing the flow
 * pauses the upstream read.
 */
async function relayEvents(exchange: UpstreamExchange, call: ProviderCall, sink: AttemptSink, deadlines: Deadlines): Promise<Usage | null> {
  const parser = new SseParser(Math.min(MAX_EVENT_BYTES, call.maxResponseBytes));
  // A Responses API stream names each event (`event: response.created`); the parser keeps only data, so the names are put back.
  const serialize = call.op === 'responses' ? serializeNamedEvents : serializeEvents;
  let usage: Usage | null = null;
  const check = (data: string) => {
    if (data === '[DONE]') return;
    if (!isJsonObjectShaped(data)) throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose data is not a JSON object');
    // Quotes inside a JSON string are escaped: an event whose text lacks `"usage"`, quotes included, has no usage key.
    if (data.includes('"usage"')) usage = usageOfEvent(data) ?? usage;
  };
  const forward = (batch: SseBatch) => {
    if (batch.verbatim) {
      checkInPlace(batch.chunk, batch.bounds, check);
      // The chunk as a piece: undici's read buffer is not ours to hand over (a thread hop copies it; in-thread it is only read).
      sink.data([batch.chunk]);
    } else if (batch.events.length > 0) {
      for (const data of batch.events) check(data);
      sink.data(encoder.encode(serialize(batch.events)));
    }
  };
  const follow = (paused: boolean) => {
    if (paused) {
      exchange.pause();
      deadlines.hold();
    } else {
      deadlines.release();
      exchange.resume();
    }
  };
  const off = call.flow.onChange(follow);
  if (call.flow.paused) follow(true);
  try {
    exchange.relay((chunk) => {
      try {
        forward(parser.push(chunk));
      } catch (err) {
        exchange.abort(err);
      }
    });
    await exchange.body;
    forward({ verbatim: false, events: parser.finish() });
    return usage;
  } finally {
    off();
  }
}

/**
 * The events of a verbatim chunk, checked on its bytes: one that is `{…}`
 * and has no usage passes undecoded; any other is decoded and given to
 * `check`. OpenAI's chunks carry `"usage":null` when the caller asked for
 * usage, all but the last: those are not parsed for it.
 */
function checkInPlace(chunk: Uint8Array, bounds: readonly number[], check: (data: string) => void): void {
  let key = usageValueAt(chunk, 0);
  for (let i = 0; i < bounds.length; i += 2) {
    const start = bounds[i] as number;
    const end = bounds[i + 1] as number;
    const carriesUsage = key !== -1 && key < end;
    if (carriesUsage || chunk[start] !== OPEN_BRACE || chunk[end - 1] !== CLOSE_BRACE) check(utf8Text(chunk, start, end));
    if (carriesUsage) key = usageValueAt(chunk, end);
  }
}

/** `{` … `}` around the data, JSON whitespace aside: what a truncated event or a text line is not. */
function isJsonObjectShaped(data: string): boolean {
  const text = data.charCodeAt(0) === OPEN_BRACE && data.charCodeAt(data.length - 1) === CLOSE_BRACE ? data : data.trim();
  return text.charCodeAt(0) === OPEN_BRACE && text.charCodeAt(text.length - 1) === CLOSE_BRACE;
}

function usageOfEvent(data: string): Usage | null {
  try {
    return usageOf(JSON.parse(data));
  } catch {
    throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose data is not JSON');
  }
}
