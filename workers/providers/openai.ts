/**
 * Any OpenAI-compatible upstream (OpenAI, vLLM, Ollama, LM Studio, Groq,
 * Together, …) at the route's `api_base`. The body is forwarded with only
 * `model` rewritten. Provider 4xx pass through; 3xx, 5xx, timeouts,
 * resets and bodies that are not the compatible format become 502s.
 */
import type { Dispatcher } from 'undici';
import type { Usage } from '../../protocol/frames.js';
import { GatewayError } from '../../src/errors.js';
import { VERSION } from '../../src/version.js';
import { allowlistedHeaders } from '../rate-limit-headers.js';
import { checkCompatible, looksLikeJson, readBody, usageOf } from '../response-body.js';
import { Deadlines } from '../deadlines.js';
import { SseParser } from '../sse.js';
import { discard, toUpstreamError, upstreamRequest } from '../upstream-http.js';
import type { ProviderAdapter, ProviderCall, ResponseSink } from './adapter.js';

const PATHS = { chat: '/chat/completions', embeddings: '/embeddings' } as const;
const USER_AGENT = `switchyard/${VERSION}`;
/** Cap on one SSE event, so an upstream that never ends an event cannot grow memory. */
const MAX_EVENT_BYTES = 8 * 1024 * 1024;

export const openaiAdapter: ProviderAdapter = {
  async call(call, sink) {
    const started = performance.now();
    const { upstream } = call;
    // call.signal is "stop now": the client left, or a deadline passed (then its reason is the GatewayError).
    const deadlines = new Deadlines(call.abort, upstream.timeouts);
    let answered = false;
    try {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'x-request-id': call.requestId,
        accept: call.stream ? 'text/event-stream' : 'application/json',
      };
      if (upstream.apiKey) headers.authorization = `Bearer ${upstream.apiKey}`;
      const res = await upstreamRequest(upstream, PATHS[call.op], JSON.stringify(call.body), headers, call.signal);
      answered = true;
      deadlines.headersArrived();
      const limit = call.maxResponseBytes;
      const passHeaders = allowlistedHeaders(res.headers);
      const status = res.statusCode;
      if (status >= 300 && status < 400) {
        await discard(res.body);
        throw new GatewayError('upstream_redirect');
      }
      if (status >= 500 || status < 200) {
        await discard(res.body);
        throw new GatewayError('upstream_error', `the provider answered with status ${status}`);
      }
      if (status >= 400) {
        // CONTRACT.md: provider 4xx pass through with their status and body.
        const body = await readBody(res.body, res.headers['content-length'], limit, deadlines.touch);
        sink.reply(status, looksLikeJson(body) ? 'application/json' : 'text/plain; charset=utf-8', passHeaders, body, null, performance.now() - started);
        return;
      }
      if (call.stream) {
        const type = String(res.headers['content-type'] ?? '');
        if (!type.startsWith('text/event-stream')) {
          await discard(res.body);
          throw new GatewayError('upstream_invalid_response', 'the provider answered a stream request without an event stream');
        }
        sink.head(passHeaders);
        const usage = await relayEvents(res.body, call, sink, deadlines);
        sink.end(usage, performance.now() - started);
        return;
      }
      const body = await readBody(res.body, res.headers['content-length'], limit, deadlines.touch);
      const usage = checkCompatible(call.op, body);
      sink.reply(status, 'application/json', passHeaders, body, usage, performance.now() - started);
    } catch (err) {
      const reason: unknown = call.signal.reason;
      if (call.signal.aborted && reason instanceof GatewayError) throw reason;
      throw toUpstreamError(err, answered);
    } finally {
      deadlines.clear();
    }
  },
};

const encoder = new TextEncoder();

/**
 * Relays SSE events as they arrive: each upstream chunk's complete events
 * become one data frame. Pausing the flow pauses the upstream read.
 */
function relayEvents(body: Dispatcher.ResponseData['body'], call: ProviderCall, sink: ResponseSink, deadlines: Deadlines): Promise<Usage | null> {
  const parser = new SseParser(Math.min(MAX_EVENT_BYTES, call.maxResponseBytes));
  let usage: Usage | null = null;
  const forward = (events: string[]) => {
    if (events.length === 0) return;
    let out = '';
    for (const data of events) {
      if (data !== '[DONE]') {
        let json: unknown;
        try {
          json = JSON.parse(data);
        } catch {
          throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose data is not JSON');
        }
        usage = usageOf(json) ?? usage;
      }
      out += `data: ${data}\n\n`;
    }
    sink.data(encoder.encode(out));
  };
  return new Promise<Usage | null>((resolve, reject) => {
    const off = call.flow.onChange((paused) => {
      if (paused) {
        body.pause();
        deadlines.hold();
      } else {
        deadlines.release();
        body.resume();
      }
    });
    const fail = (err: unknown) => {
      off();
      body.destroy();
      reject(err);
    };
    body.on('data', (chunk: Buffer) => {
      deadlines.touch();
      try {
        forward(parser.push(chunk));
      } catch (err) {
        fail(err);
      }
    });
    body.once('end', () => {
      off();
      try {
        forward(parser.finish());
        resolve(usage);
      } catch (err) {
        reject(err);
      }
    });
    body.once('error', fail);
    if (call.flow.paused) {
      body.pause();
      deadlines.hold();
    }
  });
}
