// Shared by the k6 scenarios in this folder: environment, headers, the
// requests each scenario sends, body-shape validation and custom metrics.
// k6 ≥ 0.57 runs TypeScript directly and follows local imports with their
// `.ts` extension; see README.md for older k6 (bundle with esbuild first).

import { check, fail } from 'k6';
import http, { type RefinedParams, type RefinedResponse } from 'k6/http';
import { Gauge, Rate, Trend } from 'k6/metrics';
import type { Threshold } from 'k6/options';

// ---------------------------------------------------------------- environment

/** `__ENV[name]`, with an empty value treated as unset. */
export function env(name: string): string | undefined {
  const value = __ENV[name];
  return value === undefined || value === '' ? undefined : value;
}

export function envString(name: string, fallback: string): string {
  return env(name) ?? fallback;
}

/** A non-negative number from the environment (milliseconds, error rates, megabytes), or `fallback`. */
export function envNumber(name: string, fallback: number): number {
  const raw = env(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) fail(`${name}=${raw}: expected a non-negative number`);
  return value;
}

/** A whole number from the environment (arrival rates, VU counts), or `fallback`. */
export function envInt(name: string, fallback: number): number {
  const value = envNumber(name, fallback);
  if (!Number.isInteger(value)) fail(`${name}=${value}: expected a whole number`);
  return value;
}

/** Scenario length, a k6 duration such as `90s`, `5m`, `1h`. */
export function duration(fallback: string): string {
  return envString('DURATION', fallback);
}

/** Trend columns in the end-of-test summary: k6's default set plus p(99), which the thresholds use. */
export const SUMMARY_TREND_STATS = ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'];

/** Gateway base URL, without a trailing slash. */
export const BASE_URL = envString('BASE_URL', 'http://127.0.0.1:8080').replace(/\/+$/, '');
/** Bearer key for the protected routes (the gateway's GATEWAY_API_KEY). */
export const API_KEY = envString('API_KEY', '');
/** Chat alias: `demo-chat` is in the embedded demo config. */
export const MODEL = envString('MODEL', 'demo-chat');
/** Embeddings alias: `demo-embed` is in the embedded demo config. */
export const EMBED_MODEL = envString('EMBED_MODEL', 'demo-embed');
/** Most errors tolerated (0.01 = 1 %), for `http_req_failed` and `bad_responses`. */
export const MAX_ERROR_RATE = envNumber('MAX_ERROR_RATE', 0.01);

// ---------------------------------------------------------------- metrics

/** What a request exercises; every request is tagged `op:<Op>` so thresholds can select it. */
export type Op = 'chat' | 'stream' | 'embeddings' | 'live' | 'ready' | 'metrics' | 'setup';

/** 1 for a response that is not 2xx or whose body does not have the expected shape, 0 otherwise. */
export const badResponses = new Rate('bad_responses');
/**
 * Streams: time to the first response byte (`timings.waiting`). k6's http
 * module hands over the body only once the response is complete, so the real
 * time to the first `data:` chunk is not observable here. Switchyard writes
 * the status line and headers as soon as the upstream stream starts, before
 * its first event, so this is a lower bound of time to first chunk; the
 * gateway's own figure is `switchyard_time_to_first_token_seconds` in /metrics.
 */
export const streamTimeToFirstChunk = new Trend('stream_time_to_first_chunk', true);
/** Streams: `data:` events per response, `[DONE]` excluded. */
export const streamChunks = new Trend('stream_chunks');
/** Gateway process memory and descriptors, read from each /metrics scrape (a soak watches these grow or not). */
export const gatewayRss = new Gauge('gateway_rss_bytes');
export const gatewayOpenFds = new Gauge('gateway_open_fds');

// ---------------------------------------------------------------- thresholds

/** `p(95)<…` and `p(99)<…` in milliseconds; `<PREFIX>_P95_MS` / `<PREFIX>_P99_MS` override the defaults. */
export function latency(prefix: string, p95Ms: number, p99Ms: number): Threshold[] {
  return [`p(95)<${envNumber(`${prefix}_P95_MS`, p95Ms)}`, `p(99)<${envNumber(`${prefix}_P99_MS`, p99Ms)}`];
}

/** The error-rate thresholds every scenario carries: transport/status failures and bad bodies. */
export function errorThresholds(): { [name: string]: Threshold[] } {
  return {
    http_req_failed: [`rate<${MAX_ERROR_RATE}`],
    bad_responses: [`rate<${MAX_ERROR_RATE}`],
  };
}

// ---------------------------------------------------------------- requests

type TextParams = RefinedParams<'text'>;
type TextResponse = RefinedResponse<'text'>;

/** A request id the gateway keeps (1–128 visible ASCII), so a slow or failed request can be found in its access log. */
function requestId(op: Op): string {
  return `k6-${op}-${__VU}-${__ITER}-${Date.now().toString(36)}`;
}

/** Headers and tags for an authenticated JSON request. */
export function apiParams(op: Op, timeout = '60s'): TextParams {
  return {
    headers: {
      Authorization: `Bearer ${API_KEY}`,
      'Content-Type': 'application/json',
      'X-Request-ID': requestId(op),
    },
    tags: { op },
    timeout,
    responseType: 'text',
  };
}

/** Tags for an unauthenticated probe or scrape. */
export function probeParams(op: Op): TextParams {
  return { headers: { 'X-Request-ID': requestId(op) }, tags: { op }, timeout: '10s', responseType: 'text' };
}

const is2xx = (res: TextResponse): boolean => res.status >= 200 && res.status < 300;

function parseJson(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

type JsonObject = { [key: string]: unknown };
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Records the response in `bad_responses` (tagged with its op) and returns whether it was good. */
function record(op: Op, ok: boolean): boolean {
  badResponses.add(!ok, { op });
  return ok;
}

/**
 * Fail fast in `setup()`: without a key, or with a wrong one, every request
 * would be a 401 and the run would only measure refusals.
 */
export function requireApiAccess(): void {
  if (API_KEY === '') fail('API_KEY is not set: pass -e API_KEY=<the gateway key> (GATEWAY_API_KEY)');
  const res = http.get(`${BASE_URL}/v1/models`, apiParams('setup', '10s'));
  if (res.status === 0) fail(`cannot reach ${BASE_URL}: ${res.error}`);
  if (res.status === 401) fail(`${BASE_URL} refused API_KEY (401)`);
  if (!is2xx(res)) fail(`GET ${BASE_URL}/v1/models answered ${res.status}: ${String(res.body).slice(0, 300)}`);
}

// ---------------------------------------------------------------- chat

const CHAT_PROMPT = 'Say hello to the load test in one short sentence.';

export function chatBody(stream: boolean): string {
  return JSON.stringify({ model: MODEL, stream, messages: [{ role: 'user', content: CHAT_PROMPT }] });
}

/** `{object: "chat.completion", choices: [{message: {content: string}}, …]}` */
export function isChatCompletion(value: unknown): boolean {
  if (!isObject(value) || value.object !== 'chat.completion' || !Array.isArray(value.choices) || value.choices.length === 0) return false;
  const first: unknown = value.choices[0];
  return isObject(first) && isObject(first.message) && typeof first.message.content === 'string';
}

/** One non-streamed chat completion. */
export function chat(): boolean {
  const res = http.post(`${BASE_URL}/v1/chat/completions`, chatBody(false), apiParams('chat'));
  const body = parseJson(res.body);
  const ok = check(
    res,
    {
      'chat: status 200': (r) => r.status === 200,
      'chat: body has choices[0].message.content': () => isChatCompletion(body),
    },
    { op: 'chat' },
  );
  return record('chat', ok && is2xx(res));
}

// ---------------------------------------------------------------- stream

export interface SseSummary {
  /** `data:` events other than `[DONE]`, error events included. */
  chunks: number;
  /** A `data: [DONE]` event was seen, and it was the last data event. */
  done: boolean;
  /** Data events that are neither a `chat.completion.chunk` nor an error. */
  malformed: number;
  /** `data: {"error": …}` events: a stream that failed after its first byte. */
  errors: number;
}

/**
 * Reads an SSE body: events are separated by a blank line, an event's
 * `data:` lines are joined with "\n", lines starting with ':' are comments
 * (Switchyard's keep-alives) and carry no data.
 */
export function parseSse(body: string): SseSummary {
  const summary: SseSummary = { chunks: 0, done: false, malformed: 0, errors: 0 };
  let afterDone = false;
  for (const event of body.split(/\r?\n\r?\n/)) {
    const data: string[] = [];
    for (const line of event.split(/\r?\n/)) {
      if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
    if (data.length === 0) continue;
    if (summary.done) {
      afterDone = true;
      continue;
    }
    const payload = data.join('\n');
    if (payload === '[DONE]') {
      summary.done = true;
      continue;
    }
    summary.chunks++;
    const parsed = parseJson(payload);
    if (isObject(parsed) && parsed.error !== undefined) summary.errors++;
    else if (!isObject(parsed) || parsed.object !== 'chat.completion.chunk' || !Array.isArray(parsed.choices)) summary.malformed++;
  }
  if (afterDone) summary.done = false;
  return summary;
}

/**
 * One streamed chat completion. k6's http module returns the whole body at
 * the end, so chunks are counted from the body afterwards, and the time to
 * first chunk is approximated by `timings.waiting` (time to first byte; see
 * `streamTimeToFirstChunk`).
 */
export function stream(): boolean {
  const res = http.post(`${BASE_URL}/v1/chat/completions`, chatBody(true), apiParams('stream', '120s'));
  const sse = parseSse(res.body ?? '');
  if (res.status === 200) {
    streamTimeToFirstChunk.add(res.timings.waiting, { op: 'stream' });
    streamChunks.add(sse.chunks, { op: 'stream' });
  }
  const ok = check(
    res,
    {
      'stream: status 200': (r) => r.status === 200,
      'stream: content-type text/event-stream': (r) => (r.headers['Content-Type'] ?? '').startsWith('text/event-stream'),
      'stream: at least one data chunk': () => sse.chunks > 0,
      'stream: every chunk is a chat.completion.chunk': () => sse.malformed === 0 && sse.errors === 0,
      'stream: ends with data: [DONE]': () => sse.done,
    },
    { op: 'stream' },
  );
  return record('stream', ok && is2xx(res));
}

// ---------------------------------------------------------------- embeddings

export const EMBED_INPUTS: readonly string[] = Array.from({ length: 16 }, (_, i) => `input number ${i} for the embeddings load test`);

/** `{object: "list", data: [{index, embedding: number[]}, …]}` with one vector per input, indexes 0…n-1. */
export function isEmbeddingList(value: unknown, inputs: number): boolean {
  if (!isObject(value) || value.object !== 'list' || !Array.isArray(value.data) || value.data.length !== inputs) return false;
  const seen: boolean[] = [];
  for (const item of value.data as unknown[]) {
    if (!isObject(item) || !Array.isArray(item.embedding) || item.embedding.length === 0) return false;
    if (typeof item.embedding[0] !== 'number' || typeof item.index !== 'number') return false;
    seen[item.index] = true;
  }
  for (let i = 0; i < inputs; i++) if (seen[i] !== true) return false;
  return true;
}

/** One embeddings request for the 16 inputs. */
export function embeddings(): boolean {
  const res = http.post(`${BASE_URL}/v1/embeddings`, JSON.stringify({ model: EMBED_MODEL, input: EMBED_INPUTS }), apiParams('embeddings'));
  const body = parseJson(res.body);
  const ok = check(
    res,
    {
      'embeddings: status 200': (r) => r.status === 200,
      'embeddings: body has data[16].embedding': () => isEmbeddingList(body, EMBED_INPUTS.length),
    },
    { op: 'embeddings' },
  );
  return record('embeddings', ok && is2xx(res));
}

// ---------------------------------------------------------------- probes and scrapes

/** `GET /health/live`: `{"object":"health","status":"ok"}`, no checks run. */
export function live(): boolean {
  const res = http.get(`${BASE_URL}/health/live`, probeParams('live'));
  const body = parseJson(res.body);
  const ok = check(
    res,
    {
      'live: status 200': (r) => r.status === 200,
      'live: body is {object: health, status: ok}': () => isObject(body) && body.object === 'health' && body.status === 'ok',
    },
    { op: 'live' },
  );
  return record('live', ok && is2xx(res));
}

/** `GET /ready`: a readiness report, 200 unless unhealthy. */
export function ready(): boolean {
  const res = http.get(`${BASE_URL}/ready`, probeParams('ready'));
  const body = parseJson(res.body);
  const ok = check(
    res,
    {
      'ready: status 200': (r) => r.status === 200,
      'ready: body is a readiness report': () =>
        isObject(body) && (body.status === 'healthy' || body.status === 'degraded') && Array.isArray(body.checks) && body.probe_type === 'readiness',
    },
    { op: 'ready' },
  );
  return record('ready', ok && is2xx(res));
}

/** The value of an unlabelled sample `name <value>` in Prometheus text, if present. */
export function promValue(text: string, name: string): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name} `)) continue;
    const value = Number(line.slice(name.length + 1).trim().split(' ')[0]);
    return Number.isFinite(value) ? value : undefined;
  }
  return undefined;
}

/** `GET /metrics`: Prometheus text with Switchyard's families; records the process RSS and open descriptors. */
export function metrics(): boolean {
  const res = http.get(`${BASE_URL}/metrics`, probeParams('metrics'));
  const text = res.body ?? '';
  const ok = check(
    res,
    {
      'metrics: status 200': (r) => r.status === 200,
      'metrics: Prometheus text with switchyard_requests_total': () => text.includes('# TYPE switchyard_requests_total counter'),
    },
    { op: 'metrics' },
  );
  const rss = promValue(text, 'switchyard_process_resident_memory_bytes');
  if (rss !== undefined) gatewayRss.add(rss);
  const fds = promValue(text, 'switchyard_process_open_fds');
  if (fds !== undefined) gatewayOpenFds.add(fds);
  return record('metrics', ok && is2xx(res));
}
