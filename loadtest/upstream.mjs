// A fast fake OpenAI-compatible upstream for load runs (uWebSockets.js, so it
// costs less than the gateway it measures). Answers are fixed bytes.
// Usage: node loadtest/upstream.mjs [port]   (prints "listening <port>")
//
// Slow streams: a stream request for the model "bench-slow", or any stream request under the
// path prefix /slow (e.g. POST /slow/v1/chat/completions, so a gateway's api_base can select it),
// is answered with SLOW_CHUNKS chunks (default 20) SLOW_INTERVAL_MS apart (default 500 ms): the
// first with the headers, then one per interval, `data: [DONE]` with the last. This holds many
// streams open at once at a low event rate (the memory scenario of npm run bench).
//
// Failing: any request under /fail (POST /fail/v1/chat/completions) is answered 500, for the
// routing scenario of npm run bench where one deployment of a pair fails every call.
//
// Pausing: a request under /pause (POST /pause/v1/chat/completions) is answered as chat, but the first
// one after each whole second is answered 429 with `retry-after-ms: 50`: a provider asking for a pause,
// for the routing scenario where a lone deployment does that. GET /pause/stats answers
// {pauses, calls, early}: `early` counts the calls that arrived more than 5 ms into a pause (so sent
// after the gateway read the 429, not already on their way) and before its end; it must stay 0.
//
// Paced streams: a stream request under /paced (POST /paced/v1/chat/completions) gets its 20 chunks
// one per turn of the event loop, each in its own write, as a provider sends tokens as it makes
// them; every other stream request gets all 20 in one write.
//
// STREAM_USAGE=1: every stream chunk is written as OpenAI writes it for a request with
// `stream_options.include_usage`, with `"usage":null` (and OpenAI's `system_fingerprint` and
// `logprobs`), and the one-write stream ends with OpenAI's usage chunk: for A/B runs of what a
// gateway pays to find the usage; the bench leaves it off.
//
// POST /v1/responses answers a fixed Responses API object (not streamed): the pass-through
// deployment's upstream, and the direct path of the Responses scenarios.
//
// POST /anthropic/v1/messages answers as Anthropic's Messages API does (the `anthropic` provider's
// upstream in the native-provider scenarios): the same text and usage as a Message, or as its named
// event stream with the same 20 text deltas (ping included), in one write.
//
// POST /bedrock/model/<id>/converse and /converse-stream answer as Bedrock's Converse API does (the
// `bedrock` provider's upstream in the native-provider scenarios): the same text and usage as a
// Converse answer, or as an AWS event stream (encoded once, at start, with @smithy/eventstream-codec)
// with the same 20 text deltas, each event padded with `p` as Bedrock pads them, in one write. The
// signature is not checked (test/support/bedrock-upstream.ts, the proved fake, checks it).
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import uws from 'uWebSockets.js';

const port = Number(process.argv[2] ?? 0);
const slowChunks = Number(process.env.SLOW_CHUNKS ?? 20);
const slowInterval = Number(process.env.SLOW_INTERVAL_MS ?? 500);
const chat = JSON.stringify({
  id: 'chatcmpl-bench', object: 'chat.completion', created: 1700000000, model: 'bench-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the bench upstream.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 9, completion_tokens: 7, total_tokens: 16 },
});
// The Responses API answer of a deployment that serves it (params.responses_api), the same text and usage.
const response = JSON.stringify({
  id: 'resp_bench', object: 'response', created_at: 1700000000, status: 'completed', error: null, incomplete_details: null, model: 'bench-model',
  output: [{ id: 'msg_bench', type: 'message', status: 'completed', content: [{ type: 'output_text', annotations: [], text: 'Hello from the bench upstream.' }], role: 'assistant' }],
  usage: { input_tokens: 9, input_tokens_details: { cached_tokens: 0 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 16 },
});
const streamUsage = process.env.STREAM_USAGE === '1';
const chunkHead = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1700000000, model: 'bench-model' };
const chunk = (i) => `data: ${JSON.stringify({
  ...chunkHead,
  ...(streamUsage && { system_fingerprint: 'fp_bench' }),
  choices: [{ index: 0, delta: { content: `tok${i} ` }, ...(streamUsage && { logprobs: null }), finish_reason: null }],
  ...(streamUsage && { usage: null }),
})}\n\n`;
const usageChunk = `data: ${JSON.stringify({ ...chunkHead, system_fingerprint: 'fp_bench', choices: [], usage: { prompt_tokens: 9, completion_tokens: 20, total_tokens: 29 } })}\n\n`;
const stream20 = Array.from({ length: 20 }, (_, i) => chunk(i)).join('') + (streamUsage ? usageChunk : '') + 'data: [DONE]\n\n';
// Anthropic's wire format of the same answers (test/support/anthropic-upstream.ts is its proved fake).
const message = JSON.stringify({
  id: 'msg_bench', type: 'message', role: 'assistant', model: 'bench-model', content: [{ type: 'text', text: 'Hello from the bench upstream.' }],
  stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 9, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 7 },
});
const event = (name, data) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
const messageStream = [
  event('message_start', { message: { id: 'msg_bench', type: 'message', role: 'assistant', model: 'bench-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 9, output_tokens: 1 } } }),
  event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  event('ping', {}),
  ...Array.from({ length: 20 }, (_, i) => event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `tok${i} ` } })),
  event('content_block_stop', { index: 0 }),
  event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }),
  event('message_stop', {}),
].join('');
// Bedrock's wire format of the same answers.
const converse = JSON.stringify({
  output: { message: { role: 'assistant', content: [{ text: 'Hello from the bench upstream.' }] } },
  stopReason: 'end_turn', usage: { inputTokens: 9, outputTokens: 7, totalTokens: 16 }, metrics: { latencyMs: 100 },
});
const codec = new EventStreamCodec(toUtf8, fromUtf8);
const frame = (type, payload, i) => codec.encode({
  headers: { ':event-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' }, ':message-type': { type: 'string', value: 'event' } },
  body: fromUtf8(JSON.stringify({ ...payload, p: 'abcdefghijklmnopqrstuvwxyz'.slice(0, 4 + (i * 7) % 20) })),
});
const converseStream = Buffer.concat([
  frame('messageStart', { role: 'assistant' }, 0),
  ...Array.from({ length: 20 }, (_, i) => frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: `tok${i} ` } }, i + 1)),
  frame('contentBlockStop', { contentBlockIndex: 0 }, 21),
  frame('messageStop', { stopReason: 'end_turn' }, 22),
  frame('metadata', { usage: { inputTokens: 9, outputTokens: 20, totalTokens: 29 }, metrics: { latencyMs: 100 } }, 23),
]);
const vector = Array.from({ length: 1536 }, (_, i) => Math.round(Math.sin(i) * 1e6) / 1e6);
const embeddings = JSON.stringify({
  object: 'list', model: 'bench-embed',
  data: Array.from({ length: 16 }, (_, index) => ({ object: 'embedding', index, embedding: vector })),
  usage: { prompt_tokens: 64, total_tokens: 64 },
});
const models = JSON.stringify({ object: 'list', data: [{ id: 'bench-model', object: 'model', created: 0, owned_by: 'bench' }] });

function readBody(res, done) {
  let size = 0;
  const parts = [];
  res.onAborted(() => {
    res.aborted = true;
    if (res.timer) clearInterval(res.timer);
  });
  res.onData((ab, last) => {
    size += ab.byteLength;
    // Only the first bytes matter: is this a stream request, and for which model?
    if (parts.length < 2) parts.push(Buffer.from(ab.slice(0, 256)).toString());
    if (last) {
      const head = parts.join('');
      const stream = /"stream"\s*:\s*true/.test(head);
      const slow = /"model"\s*:\s*"bench-slow"/.test(head);
      if (!res.aborted) done(stream, size, slow);
    }
  });
}

function slowStream(res) {
  let sent = 0;
  const next = () => {
    if (res.aborted) return;
    sent++;
    res.cork(() => {
      if (sent === 1) res.writeStatus('200 OK').writeHeader('content-type', 'text/event-stream');
      if (sent < slowChunks) res.write(chunk(sent - 1));
      else {
        clearInterval(res.timer);
        res.timer = undefined;
        res.end(chunk(sent - 1) + 'data: [DONE]\n\n');
      }
    });
  };
  next();
  if (slowChunks > 1) res.timer = setInterval(next, slowInterval);
}

/** The 20 chunks of a stream written one by one, each on its own turn (a provider sending tokens as it makes them, with no wait). */
function pacedStream(res) {
  let sent = 0;
  const next = () => {
    if (res.aborted) return;
    res.cork(() => {
      if (sent === 0) res.writeStatus('200 OK').writeHeader('content-type', 'text/event-stream');
      if (sent < 19) res.write(chunk(sent));
      else res.end(chunk(sent) + 'data: [DONE]\n\n');
    });
    if (++sent < 20) setImmediate(next);
  };
  next();
}

function chatRoute(forceSlow, paced = false) {
  return (res) => {
    readBody(res, (stream, _size, slow) => {
      if (stream && (slow || forceSlow)) return slowStream(res);
      if (stream && paced) return pacedStream(res);
      res.cork(() => {
        if (stream) res.writeStatus('200 OK').writeHeader('content-type', 'text/event-stream').end(stream20);
        else res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(chat);
      });
    });
  };
}

const app = uws.App();
app.post('/v1/chat/completions', chatRoute(false));
app.post('/slow/v1/chat/completions', chatRoute(true));
app.post('/paced/v1/chat/completions', chatRoute(false, true));
const failed = JSON.stringify({ error: { message: 'the bench upstream fails this deployment', type: 'server_error', code: null } });
app.post('/fail/v1/chat/completions', (res) => {
  readBody(res, () => res.cork(() => res.writeStatus('500 Internal Server Error').writeHeader('content-type', 'application/json').end(failed)));
});
const PAUSE_MS = 50;
const PAUSE_EVERY_MS = 1000;
const PAUSE_SLACK_MS = 5;
const pause = { pauses: 0, calls: 0, early: 0, at: -Infinity, until: 0 };
const limited = JSON.stringify({ error: { message: 'the bench upstream asks for a pause', type: 'requests', code: 'rate_limit_exceeded' } });
app.post('/pause/v1/chat/completions', (res) => {
  readBody(res, () => {
    const now = performance.now();
    pause.calls++;
    if (now > pause.at + PAUSE_SLACK_MS && now < pause.until) pause.early++;
    if (now - pause.at >= PAUSE_EVERY_MS) {
      pause.at = now;
      pause.until = now + PAUSE_MS;
      pause.pauses++;
      return res.cork(() => res.writeStatus('429 Too Many Requests').writeHeader('content-type', 'application/json').writeHeader('retry-after-ms', String(PAUSE_MS)).end(limited));
    }
    res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(chat));
  });
});
app.get('/pause/stats', (res) => {
  const { pauses, calls, early } = pause;
  res.writeHeader('content-type', 'application/json').end(JSON.stringify({ pauses, calls, early }));
});
app.post('/v1/embeddings', (res) => {
  readBody(res, () => res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(embeddings)));
});
app.post('/v1/responses', (res) => {
  readBody(res, () => res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(response)));
});
app.post('/anthropic/v1/messages', (res) => {
  readBody(res, (stream) => res.cork(() => {
    if (stream) res.writeStatus('200 OK').writeHeader('content-type', 'text/event-stream').end(messageStream);
    else res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(message);
  }));
});
app.post('/bedrock/model/:id/converse', (res) => {
  readBody(res, () => res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(converse)));
});
app.post('/bedrock/model/:id/converse-stream', (res) => {
  readBody(res, () => res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/vnd.amazon.eventstream').end(converseStream)));
});
app.get('/v1/models', (res) => res.writeHeader('content-type', 'application/json').end(models));
app.listen('127.0.0.1', port, (token) => {
  if (!token) {
    console.error('cannot listen');
    process.exit(1);
  }
  console.log(`listening ${uws.us_socket_local_port(token)}`);
});
