/**
 * Streaming (`stream: true`) end to end: the real gateway (uWS front + real
 * worker threads) in front of the fake upstream. Raw SSE, timing, slow-client
 * and disconnect cases use node:http directly; plain cases use the openai SDK.
 */
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultYaml, type TestGateway, useGateway } from './support/gateway.js';
import { chatBody } from './support/requests.js';
import { parseSse, sseData, streamedContent } from './support/sse.js';
import { EARLY_MS, MARGIN_MS, sleep, until } from './support/waits.js';

interface Piece {
  /** ms since the request was sent */
  t: number;
  text: string;
}

interface RawResult {
  status: number;
  headers: IncomingHttpHeaders;
  /** ms from request start to response headers */
  tHeaders: number;
  pieces: Piece[];
  text: string;
  /** the response ended cleanly ('end'), as opposed to an error/abort */
  ended: boolean;
}

/** Opens a raw POST to the gateway; the caller decides how to read the response. */
function openRaw(gw: TestGateway, body: string, path = '/v1/chat/completions'): { req: http.ClientRequest; response: Promise<http.IncomingMessage>; started: number } {
  const url = new URL(gw.url);
  const started = performance.now();
  const req = http.request({
    host: url.hostname,
    port: Number(url.port),
    path,
    method: 'POST',
    agent: false,
    headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  const response = new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  req.end(body);
  return { req, response, started };
}

/** POSTs and reads the whole response, noting when each network read arrived. */
async function rawPost(gw: TestGateway, body: string, onPiece?: (p: Piece, soFar: string) => void): Promise<RawResult> {
  const { response, started } = openRaw(gw, body);
  const res = await response;
  const tHeaders = performance.now() - started;
  const pieces: Piece[] = [];
  let text = '';
  const ended = await new Promise<boolean>((resolve) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      const p = { t: performance.now() - started, text: chunk };
      pieces.push(p);
      text += chunk;
      onPiece?.(p, text);
    });
    res.once('end', () => resolve(true));
    res.once('error', () => resolve(false));
    res.once('aborted', () => resolve(false));
  });
  return { status: res.statusCode ?? 0, headers: res.headers, tHeaders, pieces, text, ended };
}

interface ErrorEvent {
  error: { message: unknown; type: unknown; code: unknown };
}

/**
 * Checks a stream that failed after its first byte: it ended cleanly, every
 * event is data or comment, exactly one error event and it is the last
 * thing sent, no [DONE]. Returns the error.
 */
function expectSingleErrorEvent(r: RawResult): ErrorEvent['error'] {
  expect(r.status).toBe(200);
  expect(r.headers['content-type']).toMatch(/^text\/event-stream/);
  expect(r.ended).toBe(true);
  const parsed = parseSse(r.text);
  expect(parsed.invalid).toEqual([]);
  expect(parsed.cut).toBeNull();
  expect(r.text.endsWith('\n\n')).toBe(true);
  const data = sseData(r.text);
  expect(data).not.toContain('[DONE]');
  const errors = data.filter((d) => d.startsWith('{"error"'));
  expect(errors).toHaveLength(1);
  expect(data.at(-1)).toBe(errors[0]);
  // The last thing sent: no keep-alive after it either.
  expect(parsed.items.at(-1)).toEqual({ kind: 'event', event: { event: undefined, data: errors[0], id: undefined } });
  const event = JSON.parse(errors[0] as string) as ErrorEvent;
  expect(Object.keys(event)).toEqual(['error']);
  expect(event.error.type).toBe('gateway_error');
  expect(typeof event.error.message).toBe('string');
  expect((event.error.message as string).length).toBeGreaterThan(0);
  return event.error;
}

describe('streaming through the gateway', () => {
  // A stream is held until its first content or stream_commit_timeout: long here, so that a slow host moving an 8 MiB
  // event (huge-no-newline) cannot commit an empty head first.
  const { gw, upstream, start } = useGateway({ gateway: (upstream) => ({ yaml: `${defaultYaml(upstream)}\nrouter_settings: { stream_commit_timeout: 60 }\n` }) });
  afterEach(async () => {
    // Nothing left behind: no upstream request open, no call in flight in the pool.
    await upstream.waitFor(() => upstream.openRequests() === 0, 3000);
    await until(() => gw.gateway.context.pool.stats().inFlight === 0, 'pool inFlight back to 0', 3000);
  });

  it('a stream has the SSE headers and relays the provider events, ending with [DONE]', async () => {
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(r.headers['cache-control']).toBe('no-cache');
    expect(r.headers['x-accel-buffering']).toBe('no');
    expect(r.headers['x-request-id']).toMatch(/^[\x21-\x7e]{1,128}$/);
    expect(r.headers.server).toMatch(/^switchyard\//);
    // Streamed, not a whole body: no Content-Length.
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.ended).toBe(true);
    expect(parseSse(r.text)).toMatchObject({ invalid: [], cut: null, comments: [] });
    const data = sseData(r.text);
    expect(data.at(-1)).toBe('[DONE]');
    expect(data.filter((d) => d === '[DONE]')).toHaveLength(1);
    expect(streamedContent(r.text)).toBe('tok0 tok1 tok2 ');
    for (const d of data.slice(0, -1)) expect((JSON.parse(d) as { object: string }).object).toBe('chat.completion.chunk');
    // The upstream got a streaming request for its own model id.
    const seen = upstream.requests.at(-1)?.json as { model: string; stream: boolean };
    expect(seen.model).toBe('fake-model');
    expect(seen.stream).toBe(true);
  });

  it('relays chunk by chunk as they arrive: the first chunk reaches the client well before the upstream sends the last', async () => {
    // 5 content chunks + stop chunk + [DONE], one every 200 ms: the upstream needs ~1200 ms in all.
    upstream.behave({ kind: 'stream', chunks: 5, intervalMs: 200 });
    const firstSeen = new Map<string, number>();
    let upstreamBytesAtFirstChunk = -1;
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }), (p, soFar) => {
      for (const tok of ['tok0', 'tok1', 'tok2', 'tok3', 'tok4', '[DONE]']) {
        if (!firstSeen.has(tok) && soFar.includes(tok)) {
          firstSeen.set(tok, p.t);
          if (tok === 'tok0') upstreamBytesAtFirstChunk = upstream.bytesSent();
        }
      }
    });
    expect(r.status).toBe(200);
    expect(streamedContent(r.text)).toBe('tok0 tok1 tok2 tok3 tok4 ');
    const totalUpstreamBytes = upstream.bytesSent();
    const t = (k: string) => firstSeen.get(k) as number;
    // The first chunk arrived before the upstream had sent the rest of the stream.
    expect(upstreamBytesAtFirstChunk).toBeGreaterThan(0);
    expect(upstreamBytesAtFirstChunk).toBeLessThan(totalUpstreamBytes / 2);
    // Timing, client side: first chunk quickly, then the others spaced by the upstream's pacing.
    expect(t('tok0')).toBeLessThan(600);
    expect(t('[DONE]') - t('tok0')).toBeGreaterThanOrEqual(1000);
    const order = ['tok0', 'tok1', 'tok2', 'tok3', 'tok4', '[DONE]'].map(t);
    for (let i = 1; i < order.length; i++) expect((order[i] as number) - (order[i - 1] as number)).toBeGreaterThanOrEqual(120);
    // Each content chunk came in its own network read.
    expect(r.pieces.length).toBeGreaterThanOrEqual(6);
  });

  it('the openai SDK streams through the gateway and receives the usage chunk (stream_options.include_usage)', async () => {
    const stream = await gw.client().chat.completions.create({
      model: 'up-chat',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hello streaming world' }],
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('tok0 tok1 tok2 ');
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'stop')).toBe(true);
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    // Only the last chunk carries usage.
    expect(chunks.slice(0, -1).every((c) => c.usage === undefined || c.usage === null)).toBe(true);
    // The stream_options reached the provider.
    const seen = upstream.requests.at(-1)?.json as { stream_options?: { include_usage?: boolean } };
    expect(seen.stream_options?.include_usage).toBe(true);
  });

  it('the mock provider streams (mock-chat) with the SSE headers, a usage chunk and [DONE]', async () => {
    const { data: stream, response } = await gw
      .client()
      .chat.completions.create({ model: 'mock-chat', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello mock' }] })
      .withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThanOrEqual(7); // role, 5 words, stop, usage
    for (const c of chunks) expect(c.object).toBe('chat.completion.chunk');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('This is a mock reply');
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'stop')).toBe(true);
    expect(chunks.at(-1)?.choices).toEqual([]);
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 });
    // And raw: the mock stream ends with [DONE] like a real provider's.
    const r = await rawPost(gw, chatBody('mock-chat', { stream: true }));
    expect(r.status).toBe(200);
    expect(parseSse(r.text)).toMatchObject({ invalid: [], cut: null });
    expect(sseData(r.text).at(-1)).toBe('[DONE]');
    expect(streamedContent(r.text)).toBe('This is a mock reply');
  });

  it('returns the allowlisted rate-limit headers on a stream, and only those', async () => {
    upstream.behaveOnce({
      kind: 'headers',
      headers: {
        'x-ratelimit-limit-requests': '500',
        'x-ratelimit-remaining-requests': '499',
        'x-ratelimit-limit-tokens': '100000',
        'x-ratelimit-remaining-tokens': '99000',
        'x-ratelimit-reset-requests': '120ms',
        'x-ratelimit-reset-tokens': '2s',
        'retry-after': '3',
        'retry-after-ms': '3000',
        'x-internal-secret': 'do-not-leak',
        'set-cookie': 'session=abc',
      },
    });
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(r.headers['x-ratelimit-limit-requests']).toBe('500');
    expect(r.headers['x-ratelimit-remaining-requests']).toBe('499');
    expect(r.headers['x-ratelimit-limit-tokens']).toBe('100000');
    expect(r.headers['x-ratelimit-remaining-tokens']).toBe('99000');
    expect(r.headers['x-ratelimit-reset-requests']).toBe('120ms');
    expect(r.headers['x-ratelimit-reset-tokens']).toBe('2s');
    expect(r.headers['retry-after']).toBe('3');
    expect(r.headers['retry-after-ms']).toBe('3000');
    expect(r.headers['x-internal-secret']).toBeUndefined();
    expect(r.headers['set-cookie']).toBeUndefined();
    expect(r.headers['x-fake-upstream']).toBeUndefined();
    expect(streamedContent(r.text)).toBe('tok0 tok1 tok2 ');
    expect(sseData(r.text).at(-1)).toBe('[DONE]');
  });

  // CONTRACT.md, Routing: a 429 on the lone deployment asking for longer than max_retry_wait (10 s) is not waited
  // out: the caller gets it at once, as the provider sent it.
  it('an upstream 429 before the stream starts is a JSON 429 (with its rate-limit headers), not a 200 stream', async () => {
    // A gateway of its own: the 30 s back-off this begins must not reach the next tests.
    const gw = await start();
    const body = { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } };
    upstream.behave({ kind: 'status', status: 429, body, headers: { 'retry-after': '30', 'x-ratelimit-remaining-requests': '0' } });
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(r.status).toBe(429);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.headers['retry-after']).toBe('30');
    expect(r.headers['x-ratelimit-remaining-requests']).toBe('0');
    expect(JSON.parse(r.text)).toEqual(body);

    expect(r.headers['x-switchyard-attempts']).toBe('1');
    // The SDK sees it as a rate-limit error, not as a stream (here the gateway's own 429: the deployment still backs off).
    upstream.behave({ kind: 'status', status: 429, body, headers: { 'retry-after': '30' } });
    const err = await gw
      .client()
      .chat.completions.create({ model: 'up-chat', stream: true, messages: [{ role: 'user', content: 'x' }] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).status).toBe(429);
  });

  it('an upstream 500 before the stream starts is a JSON 502 upstream_error, not a 200 stream', async () => {
    upstream.behave({ kind: 'status', status: 500 });
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(r.status).toBe(502);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    const j = JSON.parse(r.text) as ErrorEvent;
    expect(j.error.type).toBe('gateway_error');
    expect(j.error.code).toBe('upstream_error');
    expect(typeof j.error.message).toBe('string');
  });

  it.each([
    { how: 'reset mid-body', behaviour: { kind: 'stream-then-reset', after: 2 } },
    // Head, two chunks and a chunk-size line that is not hex in one write: the chunks are not dropped with the response.
    { how: 'broken off by a framing error in the read that brought its chunks', behaviour: { kind: 'stream-then-bad-framing', after: 2 } },
  ] as const)('a stream $how relays what came before, then exactly one error event (upstream_reset) and no [DONE]', async ({ behaviour }) => {
    upstream.behaveOnce(behaviour);
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }));
    const error = expectSingleErrorEvent(r);
    expect(error.code).toBe('upstream_reset');
    // What had arrived before the failure was relayed.
    expect(streamedContent(r.text.replace(/data: \{"error".*\n\n$/, ''))).toBe('tok0 tok1 ');
    // No finish chunk: the error was not turned into a success.
    expect(r.text).not.toContain('"finish_reason":"stop"');
    expect(r.text).not.toContain('[DONE]');
  });

  // CONTRACT.md, the commit point: malformed SSE before the first content fails the attempt, which is tried again
  // invisibly; when every attempt is malformed, nothing was committed, so the answer is a JSON 502.
  it.each(['no-data-prefix', 'non-json-data'] as const)('malformed SSE from the provider (%s) before any content: retried invisibly; malformed every time, a JSON 502 upstream_invalid_response', async (variant) => {
    upstream.behaveOnce({ kind: 'stream-malformed', variant });
    const once = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(once.status).toBe(200);
    expect(once.headers['x-switchyard-attempts']).toBe('2');
    expect(streamedContent(once.text)).toBe('tok0 tok1 tok2 ');
    expect(once.text).not.toContain('this is not json');
    expect(upstream.requests).toHaveLength(2);

    upstream.behave({ kind: 'stream-malformed', variant });
    const always = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(always.status).toBe(502);
    expect(always.headers['content-type']).toMatch(/^application\/json/);
    expect((JSON.parse(always.text) as ErrorEvent).error.code).toBe('upstream_invalid_response');
  });

  it('an SSE event that never ends (huge-no-newline) fails its attempt (upstream_response_too_large) before any content: retried invisibly, and the gateway keeps serving', async () => {
    upstream.behaveOnce({ kind: 'stream-malformed', variant: 'huge-no-newline' });
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(r.status).toBe(200);
    expect(r.headers['x-switchyard-attempts']).toBe('2');
    expect(streamedContent(r.text)).toBe('tok0 tok1 tok2 ');
    // None of the oversized event was forwarded.
    expect(r.text.length).toBeLessThan(4096);
    const state = await gw.fetch('/status/models/up-chat').then((res) => res.json() as Promise<{ deployments: Array<{ last_error: { code: string } | null }> }>);
    expect(state.deployments[0]?.last_error?.code).toBe('upstream_response_too_large');
    expect(gw.gateway.context.pool.stats().restarts).toBe(0);
    // The gateway keeps serving, streams and whole replies.
    const again = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(again.status).toBe(200);
    expect(streamedContent(again.text)).toBe('tok0 tok1 tok2 ');
    const out = await gw.client().chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'still there' }] });
    expect(out.choices[0]?.message.content).toBe('echo: still there');
  });
});

describe('stream keep-alive comments (server.stream_keepalive_interval: 0.1)', () => {
  const { gw, upstream } = useGateway({ gateway: (upstream) => ({ yaml: `${defaultYaml(upstream)}\nserver:\n  stream_keepalive_interval: 0.1\n` }) });

  it('sends ": keepalive" comments every ~0.1 s while no chunk flows, and the stream still parses', async () => {
    expect(gw.config.streamKeepaliveMs).toBe(100);
    // 3 content chunks + stop + [DONE], 500 ms apart: four 500 ms gaps with no chunk.
    upstream.behave({ kind: 'stream', chunks: 3, intervalMs: 500 });
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(r.status).toBe(200);
    const { items, comments, invalid, cut } = parseSse(r.text);
    expect({ invalid, cut }).toEqual({ invalid: [], cut: null });
    for (const c of comments) expect(c).toBe('keepalive');
    // Written as `: keepalive` and nothing else.
    expect(new Set(r.text.match(/^:.*$/gm))).toEqual(new Set([': keepalive']));
    // In every gap between two data events there are keep-alives (~4 expected per 500 ms gap at 0.1 s).
    const gaps: number[] = [];
    let count = -1;
    for (const e of items) {
      if (e.kind === 'event') {
        if (count >= 0) gaps.push(count);
        count = 0;
      } else if (count >= 0) count++;
    }
    // Every 0.1 s of a 0.5 s gap: 4, or one either way for a timer's turn against the chunk's.
    expect(gaps).toHaveLength(4);
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(3);
    for (const g of gaps) expect(g).toBeLessThanOrEqual(5);
    // 20 on an idle host (four in each gap between data events, four before the first); a beat either way per gap.
    expect(comments.length).toBeGreaterThanOrEqual(15);
    expect(comments.length).toBeLessThanOrEqual(25);
    expect(streamedContent(r.text)).toBe('tok0 tok1 tok2 ');
    expect(sseData(r.text).at(-1)).toBe('[DONE]');

    // The SDK ignores the comments.
    const stream = await gw.client().chat.completions.create({ model: 'up-chat', stream: true, messages: [{ role: 'user', content: 'x' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('tok0 tok1 tok2 ');
  });

  it('the stream status waits for the upstream: no early 200 and no keep-alive before the provider answers', async () => {
    upstream.behaveOnce({ kind: 'delay', ms: 600 });
    const r = await rawPost(gw, chatBody('up-chat', { stream: true }));
    expect(r.status).toBe(200);
    expect(r.tHeaders).toBeGreaterThanOrEqual(600 - EARLY_MS);
    expect(r.tHeaders).toBeLessThan(600 + MARGIN_MS);
    expect(parseSse(r.text)).toMatchObject({ comments: [], invalid: [], cut: null });
    expect(streamedContent(r.text)).toBe('tok0 tok1 tok2 ');
  });
});

describe('backpressure and cancellation', () => {
  const { gw, upstream } = useGateway();

  const stats = () => gw.gateway.context.pool.stats();

  const MiB = 1024 * 1024;
  const SAMPLE_MS = 250;
  const RUN_MS = 3000;
  /** The measurement window: the last ~1.5 s of each run. */
  const WINDOW_FROM = 1500;

  /**
   * One endless upstream stream (as fast as it can go) for RUN_MS, read by a
   * client that either reads everything or pauses right after the headers;
   * samples, every SAMPLE_MS, the upstream's bytesSent and this process's RSS
   * (the gateway's front and worker threads live in this process).
   */
  async function endlessRun(mode: 'reading' | 'paused'): Promise<{ at: (ms: number) => { bytes: number; rss: number }; received: number; samples: string }> {
    upstream.reset();
    upstream.behave({ kind: 'stream-endless', intervalMs: 0 });
    const { req, response } = openRaw(gw, chatBody('up-chat', { stream: true }));
    const res = await response;
    expect(res.statusCode).toBe(200);
    let received = 0;
    if (mode === 'paused') {
      res.pause();
    } else {
      res.on('data', (c: Buffer) => {
        received += c.length;
      });
    }
    const samples: Array<{ bytes: number; rss: number }> = [];
    const t0 = performance.now();
    for (let i = 0; i <= RUN_MS / SAMPLE_MS; i++) {
      const wait = t0 + i * SAMPLE_MS - performance.now();
      // A sampling interval: the samples are the measurement.
      if (wait > 0) await sleep(wait);
      samples.push({ bytes: upstream.bytesSent(), rss: process.memoryUsage.rss() });
    }
    req.destroy();
    res.destroy();
    await upstream.waitFor(() => upstream.openRequests() === 0, 2000);
    await until(() => stats().inFlight === 0, 'pool inFlight back to 0', 2000);
    const at = (ms: number) => samples[Math.round(ms / SAMPLE_MS)] as { bytes: number; rss: number };
    const fmt = samples.map((x) => `${(x.bytes / MiB).toFixed(2)}MiB/${(x.rss / MiB).toFixed(0)}`).join(' ');
    return { at, received, samples: `${mode}: ${fmt}` };
  }

  it('a slow client pauses the upstream read: bytesSent plateaus and memory does not grow with the upstream output', async () => {
    // The same run twice: a client that reads (the yardstick), then one that stops reading.
    const fast = await endlessRun('reading');
    const slow = await endlessRun('paused');
    const info = `${fast.samples} | ${slow.samples} | fast client received ${(fast.received / MiB).toFixed(2)} MiB`;
    const fastTotal = fast.at(RUN_MS).bytes;
    const fastWindow = fast.at(RUN_MS).bytes - fast.at(WINDOW_FROM).bytes;
    const slowTotal = slow.at(RUN_MS).bytes;
    const slowWindow = slow.at(RUN_MS).bytes - slow.at(WINDOW_FROM).bytes;
    // The yardstick moved data all along, window included.
    expect(fastWindow, info).toBeGreaterThan(2 * MiB);
    // The paused client's upstream stopped: over the last 1.5 s it sent (next to) nothing,
    // where the unthrottled one kept going.
    expect(slowWindow, info).toBeLessThanOrEqual(64 * 1024);
    // It stopped once the socket buffers on the way were full: well below what the
    // unthrottled upstream sent in the same time.
    expect(slowTotal, info).toBeLessThan(fastTotal / 2);
    // Nothing piles up in the gateway meanwhile: over the same window the process's RSS stays
    // flat, where buffering the upstream's offer would have grown it by about fastWindow.
    const rssGrowth = slow.at(RUN_MS).rss - slow.at(WINDOW_FROM).rss;
    expect(rssGrowth, info).toBeLessThan(Math.min(4 * MiB, fastWindow / 2));
    expect(stats().restarts).toBe(0);
  });

  it('a client that disconnects mid-stream cancels the upstream at once and frees its slot; the worker survives', async () => {
    upstream.behave({ kind: 'stream-endless', intervalMs: 20 });
    const { req, response } = openRaw(gw, chatBody('up-chat', { stream: true }));
    const res = await response;
    expect(res.statusCode).toBe(200);
    // Read until real content has arrived, so the stream is under way.
    await new Promise<void>((resolve) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
        if (text.includes('tok1 ')) resolve();
      });
    });
    expect(upstream.openRequests()).toBe(1);
    expect(stats().inFlight).toBe(1);
    const t0 = performance.now();
    req.destroy();
    await upstream.waitFor(() => upstream.abortedRequests() === 1 && upstream.openRequests() === 0, MARGIN_MS);
    expect(performance.now() - t0).toBeLessThan(MARGIN_MS);
    await until(() => stats().inFlight === 0, 'pool inFlight back to 0', 1000);
    expect(gw.gateway.context.counters.inFlight).toBe(0);
    expect(gw.gateway.context.counters.streamsOpen).toBe(0);
    expect(stats().restarts).toBe(0);
    // The upstream stopped sending: its fake has no timer left to send with.
    await upstream.waitFor(() => upstream.activeTimers() === 0, MARGIN_MS);
    const after = upstream.bytesSent();
    expect(upstream.activeTimers()).toBe(0);
    expect(upstream.bytesSent()).toBe(after);
    // The next request on the same gateway works, streamed and not.
    upstream.behave({ kind: 'ok' });
    const stream = await gw.client().chat.completions.create({ model: 'up-chat', stream: true, messages: [{ role: 'user', content: 'x' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('tok0 tok1 tok2 ');
    const out = await gw.client().chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'next' }] });
    expect(out.choices[0]?.message.content).toBe('echo: next');
    expect(stats().restarts).toBe(0);
  });

  it('a client that disconnects before the upstream answered (hang) cancels the upstream request too', async () => {
    upstream.behave({ kind: 'hang' });
    const { req, response } = openRaw(gw, chatBody('up-chat', { stream: true }));
    response.catch(() => {});
    await upstream.waitFor(() => upstream.requests.length === 1 && upstream.openRequests() === 1, 2000);
    expect(stats().inFlight).toBe(1);
    const t0 = performance.now();
    req.destroy();
    await upstream.waitFor(() => upstream.abortedRequests() === 1 && upstream.openRequests() === 0, MARGIN_MS);
    expect(performance.now() - t0).toBeLessThan(MARGIN_MS);
    await until(() => stats().inFlight === 0, 'pool inFlight back to 0', 1000);
    expect(gw.gateway.context.counters.inFlight).toBe(0);
    expect(stats().restarts).toBe(0);
    upstream.behave({ kind: 'ok' });
    const out = await gw.client().chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'after hang' }] });
    expect(out.choices[0]?.message.content).toBe('echo: after hang');
  });
});
