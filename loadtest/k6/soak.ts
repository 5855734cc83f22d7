// A long mixed run: chat, streams, embeddings, probes and scrapes together,
// each at a constant arrival rate, for DURATION (default 30m). Watch the
// error rate and latency stay flat, and the gateway's RSS and open
// descriptors (Gauges `gateway_rss_bytes`, `gateway_open_fds`, read from each
// /metrics scrape; the summary shows their last, min and max) stay bounded.
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=$GATEWAY_API_KEY loadtest/k6/soak.ts
// Env: BASE_URL, API_KEY, MODEL (demo-chat), EMBED_MODEL (demo-embed), DURATION (30m),
// CHAT_RATE (20/s), STREAM_RATE (10/s), EMBED_RATE (5/s), LIVE_RATE (5/s), READY_RATE (5/s),
// SCRAPE_INTERVAL (15s), the *_P95_MS / *_P99_MS of chat.ts, stream.ts, embeddings.ts and
// probes.ts, MAX_ERROR_RATE (0.01), MAX_RSS_MB (unset: no RSS threshold).
// The run stops early once 10 % or more of the responses so far are bad (checked from its first minute on).
// Stream timing: see stream.ts (time to first chunk is time to first byte).
import type { Options, Threshold } from 'k6/options';
import {
  MAX_ERROR_RATE,
  SUMMARY_TREND_STATS,
  chat,
  duration,
  embeddings,
  env,
  envInt,
  envNumber,
  envString,
  errorThresholds,
  latency,
  live,
  metrics,
  ready,
  requireApiAccess,
  stream,
} from './lib.ts';

const length = duration('30m');
const arrivals = (exec: string, rate: number, timeUnit: string, vus: number) =>
  ({ executor: 'constant-arrival-rate', exec, rate, timeUnit, duration: length, preAllocatedVUs: vus, maxVUs: vus * 10 }) as const;

const rssThreshold: { [name: string]: Threshold[] } =
  env('MAX_RSS_MB') === undefined ? {} : { gateway_rss_bytes: [`value<${envNumber('MAX_RSS_MB', 0) * 1024 * 1024}`] };

export const options: Options = {
  scenarios: {
    chat: arrivals('chatLoop', envInt('CHAT_RATE', 20), '1s', 10),
    stream: arrivals('streamLoop', envInt('STREAM_RATE', 10), '1s', 10),
    embeddings: arrivals('embeddingsLoop', envInt('EMBED_RATE', 5), '1s', 5),
    live: arrivals('liveProbe', envInt('LIVE_RATE', 5), '1s', 2),
    ready: arrivals('readyProbe', envInt('READY_RATE', 5), '1s', 2),
    metrics: arrivals('scrape', 1, envString('SCRAPE_INTERVAL', '15s'), 1),
  },
  thresholds: {
    'http_req_duration{op:chat}': latency('CHAT', 500, 1000),
    'http_req_duration{op:stream}': latency('STREAM', 1000, 2000),
    stream_time_to_first_chunk: latency('STREAM_TTFB', 300, 1000),
    stream_chunks: [`min>=${envInt('MIN_CHUNKS', 1)}`],
    'http_req_duration{op:embeddings}': latency('EMBED', 500, 1000),
    'http_req_duration{op:live}': latency('LIVE', 50, 100),
    'http_req_duration{op:ready}': latency('READY', 200, 1000),
    'http_req_duration{op:metrics}': latency('METRICS', 200, 500),
    ...errorThresholds(),
    // Stop a long run that is clearly failing instead of waiting out the duration.
    bad_responses: [`rate<${MAX_ERROR_RATE}`, { threshold: 'rate<0.1', abortOnFail: true, delayAbortEval: '1m' }],
    // Per-op error rates, so one failing route is not hidden by the others' volume.
    'bad_responses{op:chat}': [`rate<${MAX_ERROR_RATE}`],
    'bad_responses{op:stream}': [`rate<${MAX_ERROR_RATE}`],
    'bad_responses{op:embeddings}': [`rate<${MAX_ERROR_RATE}`],
    'bad_responses{op:live}': [`rate<${MAX_ERROR_RATE}`],
    'bad_responses{op:ready}': [`rate<${MAX_ERROR_RATE}`],
    'bad_responses{op:metrics}': [`rate<${MAX_ERROR_RATE}`],
    checks: ['rate>0.99'],
    ...rssThreshold,
  },
  summaryTrendStats: SUMMARY_TREND_STATS,
};

export function setup(): void {
  requireApiAccess();
}

export function chatLoop(): void {
  chat();
}

export function streamLoop(): void {
  stream();
}

export function embeddingsLoop(): void {
  embeddings();
}

export function liveProbe(): void {
  live();
}

export function readyProbe(): void {
  ready();
}

export function scrape(): void {
  metrics();
}
