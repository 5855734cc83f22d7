/**
 * A fake OpenAI-compatible upstream provider for integration tests.
 *
 * Node built-ins only. Start one with `startFakeUpstream()`, point the gateway's
 * `api_base` at `up.url` (which ends in `/v1`), steer it with `behave()` /
 * `behaveOnce()`, inspect `requests`, and `close()` it in `afterAll`.
 *
 * It refuses what api.openai.com refuses (issue 34, point 2), before any
 * behaviour: a method and path it does not serve is 404 `Invalid URL (<method>
 * <path>)`, a missing or wrong `Authorization: Bearer` key 401 (unless started
 * keyless). It serves `POST /v1/chat/completions`, `POST /v1/embeddings`,
 * `GET /v1/models` and `GET /v1/models/{id}`. A refused request is recorded
 * (`refused`) and uses up no behaviour; `useGateway` fails a test that leaves a
 * refusal it did not take (`takeRefusals`), so a wrong key or path sent by the
 * gateway fails whichever test sent it. test/support/fake-upstream.test.ts
 * proves the answers with the official `openai` SDK.
 */
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIPv6, type AddressInfo, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { until } from './waits.js';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The body parsed as JSON, or undefined when it is empty or not JSON. */
  json: unknown;
  /** The key of its `Authorization: Bearer <key>`, or null when it had none. */
  key: string | null;
  /** Why the fake refused it as the real service would: `path` (404, a method and path not served), `key` (401), or null (served). */
  refused: Refusal | null;
  /** The TLS server name (SNI) the client asked for; null over plain HTTP or without SNI. */
  servername: string | null;
}

export type Refusal = 'path' | 'key';

/** The key a fake upstream takes unless started with another; gateway.ts's `defaultYaml` gives it to the upstream aliases. */
export const UPSTREAM_KEY = 'sk-upstream-secret-abcdef';

export interface FakeUpstreamOptions {
  /**
   * The API key it takes as `Authorization: Bearer <key>` (default UPSTREAM_KEY). null: keyless, as a
   * self-hosted server started without a key (vLLM without `--api-key`), which takes a request with any key or none.
   */
  key?: string | null;
  /** The address it listens on (default 127.0.0.1): a replica of a name that resolves to several loopback addresses. */
  host?: string;
  /** The port (default: any free one): replicas of one name listen on one port. */
  port?: number;
  /** HTTPS with this key and certificate (PEM) instead of HTTP. */
  tls?: { key: string; cert: string };
}

export type Behaviour =
  /** Default: well-formed answers. */
  | { kind: 'ok' }
  /**
   * Answer with this status and a JSON body (default: OpenAI-style error body).
   * A string `body` is sent verbatim (lets tests send e.g. an HTML 502 page);
   * anything else is JSON.stringify'd. `headers` override the defaults.
   */
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  /** Normal answer plus these extra response headers (they win over the defaults). */
  | { kind: 'headers'; headers: Record<string, string> }
  /** Read the request, then reset the TCP connection (RST) without sending anything. */
  | { kind: 'reset-before-headers' }
  /** Never send headers (until the client goes away). */
  | { kind: 'hang' }
  /** 200 + headers, then one byte (a space) every intervalMs forever (until the client goes away). */
  | { kind: 'trickle'; intervalMs: number }
  /** 200 application/json with a body that is not JSON. */
  | { kind: 'malformed-json' }
  /** 200 valid JSON, but not the OpenAI shape: {"hello":"world"}. */
  | { kind: 'not-compatible' }
  /** 200 chat.completion JSON body of exactly max(bytes, minimal size) bytes, with Content-Length. */
  | { kind: 'huge'; bytes: number }
  /** 302 with Location and an empty body. */
  | { kind: 'redirect'; location: string }
  /**
   * SSE answer (whatever the path/stream flag), default 3 chunks, 0 ms apart.
   * `usage` defaults to the request's `stream_options.include_usage`; set it
   * explicitly to force (true) or suppress (false) the usage chunk.
   * `whole`: every event in one write (as a fast provider's short answer, or
   * a loaded host's coalesced writes, reaches the gateway in one read).
   */
  | { kind: 'stream'; chunks?: number; intervalMs?: number; usage?: boolean; whole?: boolean }
  /**
   * SSE: send `after` content chunks, then (once they are flushed) end and
   * destroy the socket mid-body, so the client sees a truncated chunked body.
   */
  | { kind: 'stream-then-reset'; after: number }
  /**
   * SSE head and `after` content chunks, then a chunk-size line that is not hex, in one raw write
   * on the socket, then the socket is destroyed: the client's HTTP parser fails in the very read
   * that brought the chunks.
   */
  | { kind: 'stream-then-bad-framing'; after: number }
  /**
   * SSE that violates the framing:
   *  - no-data-prefix: chunk JSON lines without `data: `, then `data: [DONE]`
   *  - non-json-data: `data: <not json>` events, then `data: [DONE]`
   *  - bad-usage-json: a good chunk, then a chunk with `"usage"` that is `{…}` but not JSON, then `data: [DONE]`
   *  - huge-no-newline: `data: ` followed by `bytes` (default 8 MiB) bytes and no newline, then end
   * `whole` (not for huge-no-newline): the answer in one write, so its head, events and end
   * reach the client in one socket read (as a loaded host coalesces small writes).
   */
  | { kind: 'stream-malformed'; variant: 'no-data-prefix' | 'non-json-data' | 'bad-usage-json'; whole?: boolean }
  | { kind: 'stream-malformed'; variant: 'huge-no-newline'; bytes?: number }
  /**
   * SSE chunks forever, each with ~1 KiB of content, one every intervalMs.
   * Honours backpressure (stops writing until 'drain'). intervalMs 0 means
   * "as fast as the client reads" (bursts until the socket buffer is full).
   */
  | { kind: 'stream-endless'; intervalMs: number }
  /** Normal answer after a delay. */
  | { kind: 'delay'; ms: number };

export interface FakeUpstream {
  /** http://127.0.0.1:PORT/v1 — use as the api_base. */
  url: string;
  /** http://127.0.0.1:PORT */
  origin: string;
  port: number;
  /** The key it takes (null: keyless). */
  key: string | null;
  /** Every request received, in order of body completion (body fully read); the refused ones too. */
  requests: RecordedRequest[];
  /** The requests it refused (wrong key or path) that no test has taken yet (`takeRefusals`). */
  refusals(): RecordedRequest[];
  /**
   * The refusals not taken yet, which are then taken: a test that provokes a refusal on purpose reads it
   * here, and `useGateway`'s check after each test (no refusal left untaken) passes.
   */
  takeRefusals(): RecordedRequest[];
  /** Behaviour for all following requests until changed. */
  behave(b: Behaviour): void;
  /** Behaviour for the next request only (calls queue up FIFO), then back to the current one. */
  behaveOnce(b: Behaviour): void;
  /** Clear requests (and refusals), the behaveOnce queue and the counters; back to {kind:'ok'}. */
  reset(): void;
  /** Requests whose response has not finished and whose connection is still open. */
  openRequests(): number;
  /** Requests where the client closed before the response finished (server-side resets do not count). */
  abortedRequests(): number;
  /** Poll `pred` every 5 ms; rejects after timeoutMs (default 2000). */
  waitFor(pred: () => boolean, timeoutMs?: number): Promise<void>;
  /** Total response body bytes handed to res.write/res.end so far. */
  bytesSent(): number;
  /** Timers the fake currently has scheduled (0 when nothing is streaming/delayed). */
  activeTimers(): number;
  /** TCP connections accepted so far (for keep-alive / pooling assertions). */
  connectionsAccepted(): number;
  /** Closes the server and destroys all sockets; never hangs. Idempotent. */
  close(): Promise<void>;
}

const CREATED = 1_700_000_000;
const DEFAULT_HUGE_NO_NEWLINE_BYTES = 8 * 1024 * 1024;
const SLICE = 64 * 1024;
const BURST = 256;

interface Entry {
  req: IncomingMessage;
  res: ServerResponse;
  /** The fake itself closed the connection (reset behaviours): not a client abort. */
  serverClosed: boolean;
  timers: Set<NodeJS.Timeout>;
  extraHeaders: Record<string, string>;
}

type Piece = string | Buffer;

function errorBody(message: string, type: string, code: string | null): string {
  return JSON.stringify({ error: { message, type, code } });
}

/** OpenAI's error shape whole, as api.openai.com writes its refusals: `{"error":{"message","type","param","code"}}`. */
function openaiError(message: string, code: string | null, param: string | null = null): string {
  return JSON.stringify({ error: { message, type: 'invalid_request_error', param, code } });
}

/** What api.openai.com serves of what the gateway calls (OpenAI's API reference), by method and path. */
type Route = 'chat' | 'embeddings' | 'models' | 'model';

function routeOf(method: string, pathname: string): Route | null {
  if (method === 'POST' && pathname === '/v1/chat/completions') return 'chat';
  if (method === 'POST' && pathname === '/v1/embeddings') return 'embeddings';
  if (method === 'GET' && pathname === '/v1/models') return 'models';
  if (method === 'GET' && /^\/v1\/models\/[^/]+$/.test(pathname)) return 'model';
  return null;
}

/** The models `GET /v1/models` lists and `GET /v1/models/{id}` finds. */
const MODELS = [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }];

/** The key of an `Authorization: Bearer <key>` header, or null. */
function bearerKey(header: string | undefined): string | null {
  const m = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return m ? (m[1] as string) : null;
}

/** A key as OpenAI's 401 shows it: its first 8 and last 4 characters, stars between (all stars when short). */
function masked(key: string): string {
  return key.length > 12 ? `${key.slice(0, 8)}${'*'.repeat(key.length - 12)}${key.slice(-4)}` : '*'.repeat(key.length);
}

/**
 * api.openai.com's refusal of a request before any model sees it, or null: an unknown method and path is
 * 404 `Invalid URL (POST /v1/foo)` (a known path with another method too), a missing key or a wrong one 401,
 * each in OpenAI's error shape (type invalid_request_error, param null; code null, or invalid_api_key for a
 * wrong key). The path is judged first, as OpenAI's router answers an unknown URL before any key is read.
 */
function refusalOf(rec: RecordedRequest, key: string | null): { why: Refusal; status: number; body: string } | null {
  const pathname = new URL(rec.path, 'http://fake').pathname;
  if (routeOf(rec.method, pathname) === null) {
    return { why: 'path', status: 404, body: openaiError(`Invalid URL (${rec.method} ${pathname})`, null) };
  }
  if (key === null || rec.key === key) return null;
  if (rec.key === null) {
    const message =
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.";
    return { why: 'key', status: 401, body: openaiError(message, null) };
  }
  const message = `Incorrect API key provided: ${masked(rec.key)}. You can find your API key at https://platform.openai.com/account/api-keys.`;
  return { why: 'key', status: 401, body: openaiError(message, 'invalid_api_key') };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function words(s: string): number {
  const t = s.trim();
  return t === '' ? 0 : t.split(/\s+/).length;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    return content
      .map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : ''))
      .join('');
  }
  return JSON.stringify(content);
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Deterministic floats in [-1, 1), 6 decimals. */
function fakeEmbedding(text: string, dims: number): number[] {
  const out: number[] = [];
  for (let j = 0; j < dims; j++) {
    const h = fnv1a(`${text}#${j}`);
    out.push(Math.round(((h / 0x1_0000_0000) * 2 - 1) * 1e6) / 1e6);
  }
  return out;
}

export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const key = options.key === undefined ? UPSTREAM_KEY : options.key;
  const sockets = new Set<Socket>();
  const live = new Set<Entry>();
  const allTimers = new Set<NodeJS.Timeout>();
  const requests: RecordedRequest[] = [];
  const taken = new Set<RecordedRequest>();
  const refusals = (): RecordedRequest[] => requests.filter((r) => r.refused !== null && !taken.has(r));
  const onceQueue: Behaviour[] = [];
  let current: Behaviour = { kind: 'ok' };
  let aborted = 0;
  let bytes = 0;
  let completionSeq = 0;
  let accepted = 0;
  let closing: Promise<void> | undefined;

  // ---- low-level helpers -------------------------------------------------

  const writable = (e: Entry): boolean => !e.res.destroyed && !e.res.writableEnded;

  const later = (e: Entry, ms: number, fn: () => void): void => {
    if (!writable(e)) return;
    const t = setTimeout(() => {
      e.timers.delete(t);
      allTimers.delete(t);
      fn();
    }, ms);
    e.timers.add(t);
    allTimers.add(t);
  };

  const clearTimers = (e: Entry): void => {
    for (const t of e.timers) {
      clearTimeout(t);
      allTimers.delete(t);
    }
    e.timers.clear();
  };

  const head = (e: Entry, status: number, headers: Record<string, string | number>): void => {
    e.res.writeHead(status, { ...headers, ...e.extraHeaders });
  };

  /** Write a body piece; false means "wait for drain" (or the response is gone). */
  const send = (e: Entry, piece: Piece, cb?: () => void): boolean => {
    if (!writable(e)) return false;
    bytes += Buffer.byteLength(piece);
    return cb ? e.res.write(piece, cb) : e.res.write(piece);
  };

  const finish = (e: Entry, piece?: Piece): void => {
    if (!writable(e)) return;
    if (piece !== undefined) {
      bytes += Buffer.byteLength(piece);
      e.res.end(piece);
    } else {
      e.res.end();
    }
  };

  const sendJson = (e: Entry, status: number, body: string, contentType = 'application/json'): void => {
    head(e, status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    finish(e, body);
  };

  /** End the connection after flushing what was written (FIN, then destroy). */
  const hangUp = (e: Entry): void => {
    e.serverClosed = true;
    const s = e.res.socket;
    if (!s) return;
    s.once('finish', () => s.destroy());
    s.end(); // end() uncorks, so everything written so far is flushed first
  };

  /**
   * Write pieces from `next()` until it returns null, then call `done`.
   * Honours backpressure; one piece per tick when intervalMs > 0 or !burst.
   * All scheduling goes through `later`, so a client disconnect stops it.
   */
  const pump = (
    e: Entry,
    next: () => Piece | null,
    opts: { intervalMs: number; burst: boolean; initialDelay?: boolean; done: () => void },
  ): void => {
    const step = (): void => {
      if (!writable(e)) return;
      let n = 0;
      for (;;) {
        const piece = next();
        if (piece === null) {
          opts.done();
          return;
        }
        if (!send(e, piece)) {
          if (writable(e)) e.res.once('drain', () => later(e, opts.intervalMs, step));
          return;
        }
        if (!opts.burst || opts.intervalMs > 0 || ++n >= BURST) break;
      }
      later(e, opts.intervalMs, step);
    };
    if (opts.initialDelay) later(e, opts.intervalMs, step);
    else step();
  };

  const sseHead = (e: Entry): void => {
    head(e, 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  };

  const fromArray = (pieces: Piece[]): (() => Piece | null) => {
    let i = 0;
    return () => (i < pieces.length ? (pieces[i++] as Piece) : null);
  };

  // ---- OpenAI-shaped answers ----------------------------------------------

  const modelOf = (json: unknown, fallback: string): string =>
    isRecord(json) && typeof json.model === 'string' ? json.model : fallback;

  const chatParts = (json: unknown): { model: string; reply: string; promptTokens: number } => {
    const messages = isRecord(json) && Array.isArray(json.messages) ? json.messages : [];
    const texts = messages.map((m) => (isRecord(m) ? contentText(m.content) : ''));
    const last = texts.length > 0 ? (texts[texts.length - 1] as string) : '';
    const promptTokens = Math.max(1, texts.reduce((n, t) => n + words(t), 0));
    return { model: modelOf(json, 'fake-model'), reply: `echo: ${last}`, promptTokens };
  };

  /** One chunk; with `nullUsage`, `"usage":null` as OpenAI writes in every chunk but the last when usage was asked for. */
  const chunkEvent = (id: string, model: string, delta: Record<string, unknown>, finishReason: string | null, nullUsage = false): string =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: CREATED,
      model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
      ...(nullUsage ? { usage: null } : {}),
    })}\n\n`;

  const streamChat = (
    e: Entry,
    rec: RecordedRequest,
    o: { chunks: number; intervalMs: number; usage: boolean | undefined; resetAfter?: number; whole?: boolean },
  ): void => {
    const { model, promptTokens } = chatParts(rec.json);
    const id = `chatcmpl-fake-${++completionSeq}`;
    const includeUsage =
      o.usage ??
      (isRecord(rec.json) && isRecord(rec.json.stream_options) && rec.json.stream_options.include_usage === true);
    const events: string[] = [];
    const n = o.resetAfter ?? o.chunks;
    for (let i = 0; i < n; i++) events.push(chunkEvent(id, model, { content: `tok${i} ` }, null, includeUsage));
    if (o.resetAfter === undefined) {
      events.push(chunkEvent(id, model, {}, 'stop', includeUsage));
      if (includeUsage) {
        const usage = { prompt_tokens: promptTokens, completion_tokens: n, total_tokens: promptTokens + n };
        events.push(
          `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: CREATED, model, choices: [], usage })}\n\n`,
        );
      }
      events.push('data: [DONE]\n\n');
    }
    sseHead(e);
    if (o.whole) return finish(e, events.join(''));
    if (o.resetAfter !== undefined && n === 0) {
      e.res.flushHeaders();
      hangUp(e);
      return;
    }
    pump(e, fromArray(events), {
      intervalMs: o.intervalMs,
      burst: false,
      done: () => (o.resetAfter !== undefined ? hangUp(e) : finish(e)),
    });
  };

  const chatCompletion = (e: Entry, rec: RecordedRequest): void => {
    if (!isRecord(rec.json)) {
      sendJson(e, 400, errorBody('We could not parse the JSON body of your request.', 'invalid_request_error', null));
      return;
    }
    if (!Array.isArray(rec.json.messages)) {
      sendJson(e, 400, errorBody("'messages' is a required property", 'invalid_request_error', null));
      return;
    }
    if (rec.json.stream === true) {
      streamChat(e, rec, { chunks: 3, intervalMs: 0, usage: undefined });
      return;
    }
    const { model, reply, promptTokens } = chatParts(rec.json);
    const completionTokens = words(reply);
    sendJson(
      e,
      200,
      JSON.stringify({
        id: `chatcmpl-fake-${++completionSeq}`,
        object: 'chat.completion',
        created: CREATED,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      }),
    );
  };

  const embeddings = (e: Entry, rec: RecordedRequest): void => {
    const j = rec.json;
    if (!isRecord(j)) {
      sendJson(e, 400, errorBody('We could not parse the JSON body of your request.', 'invalid_request_error', null));
      return;
    }
    let inputs: string[] | undefined;
    const input = j.input;
    if (typeof input === 'string') inputs = [input];
    else if (Array.isArray(input) && input.length > 0) {
      if (input.every((x) => typeof x === 'string')) inputs = input as string[];
      else if (input.every((x) => typeof x === 'number')) inputs = [JSON.stringify(input)];
      else if (input.every((x) => Array.isArray(x))) inputs = input.map((x) => JSON.stringify(x));
    }
    if (!inputs) {
      sendJson(e, 400, errorBody("'input' must be a string or an array of strings", 'invalid_request_error', null));
      return;
    }
    const d = j.dimensions;
    const dims = typeof d === 'number' && Number.isInteger(d) && d > 0 && d <= 8192 ? d : 8;
    const base64 = j.encoding_format === 'base64';
    const promptTokens = inputs.reduce((n, s) => n + Math.max(1, words(s)), 0);
    sendJson(
      e,
      200,
      JSON.stringify({
        object: 'list',
        data: inputs.map((s, index) => {
          const v = fakeEmbedding(s, dims);
          const embedding = base64 ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
          return { object: 'embedding', index, embedding };
        }),
        model: modelOf(j, 'fake-embedding'),
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      }),
    );
  };

  /** The answer of a served request (refusals are answered before any behaviour). */
  const route = (e: Entry, rec: RecordedRequest): void => {
    if (!writable(e)) return;
    const pathname = new URL(rec.path, 'http://fake').pathname;
    switch (routeOf(rec.method, pathname)) {
      case 'chat':
        return chatCompletion(e, rec);
      case 'embeddings':
        return embeddings(e, rec);
      case 'models':
        return sendJson(e, 200, JSON.stringify({ object: 'list', data: MODELS }));
      case 'model': {
        const id = decodeURIComponent(pathname.slice('/v1/models/'.length));
        const model = MODELS.find((m) => m.id === id);
        if (model) return sendJson(e, 200, JSON.stringify(model));
        return sendJson(e, 404, openaiError(`The model '${id}' does not exist`, 'model_not_found', 'model'));
      }
      case null:
        throw new Error(`fake upstream: ${rec.method} ${rec.path} reached a behaviour unrefused`);
    }
  };

  // ---- behaviours ---------------------------------------------------------

  const dispatch = (e: Entry, rec: RecordedRequest, b: Behaviour): void => {
    switch (b.kind) {
      case 'ok':
        return route(e, rec);
      case 'headers':
        e.extraHeaders = { ...b.headers };
        return route(e, rec);
      case 'delay':
        return later(e, b.ms, () => route(e, rec));
      case 'status': {
        const bodyless = b.status === 204 || b.status === 304 || rec.method === 'HEAD';
        const body =
          b.body === undefined
            ? errorBody(`fake upstream error ${b.status}`, 'upstream_test', `fake_${b.status}`)
            : typeof b.body === 'string'
              ? b.body
              : JSON.stringify(b.body);
        const headers: Record<string, string | number> = { 'content-type': 'application/json' };
        if (!bodyless) headers['content-length'] = Buffer.byteLength(body);
        e.extraHeaders = { ...(b.headers ?? {}) };
        head(e, b.status, headers);
        return bodyless ? finish(e) : finish(e, body);
      }
      case 'reset-before-headers': {
        e.serverClosed = true;
        const s = e.res.socket;
        if (s) s.resetAndDestroy();
        return;
      }
      case 'hang':
        return;
      case 'trickle': {
        const stream = isRecord(rec.json) && rec.json.stream === true;
        head(e, 200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
        e.res.flushHeaders();
        return pump(e, () => ' ', { intervalMs: b.intervalMs, burst: false, initialDelay: true, done: () => {} });
      }
      case 'malformed-json':
        return sendJson(e, 200, '{"id":"chatcmpl-fake","object":"chat.completion","choices":[{ <<this is not json>>');
      case 'not-compatible':
        return sendJson(e, 200, '{"hello":"world"}');
      case 'huge': {
        const { model } = chatParts(rec.json);
        const id = `chatcmpl-fake-${++completionSeq}`;
        const prefix = `{"id":${JSON.stringify(id)},"object":"chat.completion","created":${CREATED},"model":${JSON.stringify(model)},"choices":[{"index":0,"message":{"role":"assistant","content":"`;
        const suffix = `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`;
        let filler = Math.max(0, b.bytes - Buffer.byteLength(prefix) - Buffer.byteLength(suffix));
        const total = Buffer.byteLength(prefix) + filler + Buffer.byteLength(suffix);
        head(e, 200, { 'content-type': 'application/json', 'content-length': total });
        const slice = Buffer.alloc(SLICE, 'x');
        let stage = 0;
        return pump(
          e,
          () => {
            if (stage === 0) {
              stage = 1;
              return prefix;
            }
            if (stage === 1 && filler > 0) {
              const n = Math.min(SLICE, filler);
              filler -= n;
              return n === SLICE ? slice : slice.subarray(0, n);
            }
            if (stage === 1) {
              stage = 2;
              return suffix;
            }
            return null;
          },
          { intervalMs: 0, burst: true, done: () => finish(e) },
        );
      }
      case 'redirect':
        head(e, 302, { location: b.location, 'content-length': 0 });
        return finish(e);
      case 'stream':
        return streamChat(e, rec, { chunks: b.chunks ?? 3, intervalMs: b.intervalMs ?? 0, usage: b.usage, whole: b.whole });
      case 'stream-then-reset':
        return streamChat(e, rec, { chunks: 0, intervalMs: 0, usage: false, resetAfter: Math.max(0, b.after) });
      case 'stream-then-bad-framing': {
        const { model } = chatParts(rec.json);
        const id = `chatcmpl-fake-${++completionSeq}`;
        const s = e.res.socket;
        if (!s) return;
        e.serverClosed = true;
        let raw = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';
        for (let i = 0; i < b.after; i++) {
          const event = chunkEvent(id, model, { content: `tok${i} ` }, null);
          raw += `${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`;
        }
        raw += 'zz\r\n';
        bytes += Buffer.byteLength(raw);
        s.write(raw, () => s.destroy());
        return;
      }
      case 'stream-malformed': {
        const { model } = chatParts(rec.json);
        const id = `chatcmpl-fake-${++completionSeq}`;
        sseHead(e);
        if (b.variant !== 'huge-no-newline') {
          const line = (i: number): string =>
            `${chunkEvent(id, model, { content: `tok${i} ` }, null).slice('data: '.length)}`;
          const pieces = {
            'no-data-prefix': [line(0), line(1), 'data: [DONE]\n\n'],
            'non-json-data': ['data: this is not json\n\n', 'data: {"truncated":\n\n', 'data: [DONE]\n\n'],
            'bad-usage-json': [`data: ${line(0)}`, 'data: {"choices":[],"usage":{"prompt_tokens":3,}}\n\n', 'data: [DONE]\n\n'],
          }[b.variant];
          if (b.whole) return finish(e, pieces.join(''));
          return pump(e, fromArray(pieces), { intervalMs: 0, burst: false, done: () => finish(e) });
        }
        let left = Math.max(0, b.bytes ?? DEFAULT_HUGE_NO_NEWLINE_BYTES);
        const slice = Buffer.alloc(SLICE, 'x');
        let started = false;
        return pump(
          e,
          () => {
            if (!started) {
              started = true;
              return 'data: ';
            }
            if (left <= 0) return null;
            const n = Math.min(SLICE, left);
            left -= n;
            return n === SLICE ? slice : slice.subarray(0, n);
          },
          { intervalMs: 0, burst: true, done: () => finish(e) },
        );
      }
      case 'stream-endless': {
        const { model } = chatParts(rec.json);
        const id = `chatcmpl-fake-${++completionSeq}`;
        sseHead(e);
        let i = 0;
        return pump(
          e,
          () => {
            const content = `tok${i++} `.padEnd(1024, '.');
            return chunkEvent(id, model, { content }, null);
          },
          { intervalMs: Math.max(0, b.intervalMs), burst: true, done: () => {} },
        );
      }
      default: {
        const never: never = b;
        throw new Error(`unknown behaviour ${JSON.stringify(never)}`);
      }
    }
  };

  // ---- server -------------------------------------------------------------

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const e: Entry = { req, res, serverClosed: false, timers: new Set(), extraHeaders: {} };
    live.add(e);
    res.setHeader('x-fake-upstream', '1');
    res.on('finish', () => live.delete(e));
    res.on('close', () => {
      live.delete(e);
      clearTimers(e);
      if (!res.writableEnded && !e.serverClosed) aborted++;
    });
    req.on('error', () => {});
    res.on('error', () => {});

    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (res.destroyed) return;
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      if (body !== '') {
        try {
          json = JSON.parse(body) as unknown;
        } catch {
          json = undefined;
        }
      }
      const rec: RecordedRequest = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: { ...req.headers },
        body,
        json,
        key: bearerKey(req.headers.authorization),
        refused: null,
        servername: ((req.socket as TLSSocket).servername as string | false | undefined) || null,
      };
      requests.push(rec);
      const refusal = refusalOf(rec, key);
      if (refusal !== null) {
        rec.refused = refusal.why;
        return sendJson(e, refusal.status, refusal.body);
      }
      const b = onceQueue.length > 0 ? (onceQueue.shift() as Behaviour) : current;
      try {
        dispatch(e, rec, b);
      } catch (err) {
        if (!res.headersSent && writable(e)) {
          sendJson(e, 500, errorBody(`fake upstream crashed: ${String(err)}`, 'server_error', null));
        } else {
          res.destroy();
        }
      }
    });
  };
  const server = options.tls ? https.createServer({ key: options.tls.key, cert: options.tls.cert }, handler) : http.createServer(handler);
  server.keepAliveTimeout = 30_000;

  server.on('connection', (s: Socket) => {
    accepted++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('clientError', (_err, s: Socket) => {
    s.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host ?? '127.0.0.1';
  const origin = `${options.tls ? 'https' : 'http'}://${isIPv6(host) ? `[${host}]` : host}:${port}`;

  return {
    url: `${origin}/v1`,
    origin,
    port,
    key,
    requests,
    refusals,
    takeRefusals() {
      const now = refusals();
      for (const r of now) taken.add(r);
      return now;
    },
    behave(b) {
      current = b;
    },
    behaveOnce(b) {
      onceQueue.push(b);
    },
    reset() {
      requests.length = 0;
      taken.clear();
      onceQueue.length = 0;
      current = { kind: 'ok' };
      aborted = 0;
      bytes = 0;
      completionSeq = 0;
    },
    openRequests: () => live.size,
    abortedRequests: () => aborted,
    bytesSent: () => bytes,
    activeTimers: () => allTimers.size,
    connectionsAccepted: () => accepted,
    async waitFor(pred, timeoutMs = 2000) {
      await until(pred, 'a condition on the fake upstream', timeoutMs);
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const t of allTimers) clearTimeout(t);
        allTimers.clear();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
