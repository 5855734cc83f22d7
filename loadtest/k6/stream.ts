// Streamed chat completions (`stream: true`) at a constant arrival rate.
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=$GATEWAY_API_KEY loadtest/k6/stream.ts
// Env: BASE_URL, API_KEY, MODEL (demo-chat), RATE (streams/s, 50), DURATION (1m), VUS (50),
// MAX_VUS (500), STREAM_P95_MS (1000), STREAM_P99_MS (2000), STREAM_TTFB_P95_MS (300),
// STREAM_TTFB_P99_MS (1000), MIN_CHUNKS (1), MAX_ERROR_RATE (0.01).
//
// k6's http module returns a response only once its body is complete: it
// cannot observe chunks as they arrive. So each response's `data:` chunks are
// counted from the whole body afterwards (Trend `stream_chunks`), and the time
// to first chunk is recorded from `timings.waiting`, the time to the first
// response byte (Trend `stream_time_to_first_chunk`). Switchyard sends the
// status line and headers when the upstream stream starts, before the first
// event, so that figure is a lower bound; the gateway's own measure is
// `switchyard_time_to_first_token_seconds` in /metrics. `http_req_duration`
// is the whole stream, first byte to `[DONE]`.
import type { Options } from 'k6/options';
import { SUMMARY_TREND_STATS, duration, envInt, errorThresholds, latency, requireApiAccess, stream } from './lib.ts';

export const options: Options = {
  scenarios: {
    stream: {
      executor: 'constant-arrival-rate',
      rate: envInt('RATE', 50),
      timeUnit: '1s',
      duration: duration('1m'),
      preAllocatedVUs: envInt('VUS', 50),
      maxVUs: envInt('MAX_VUS', 500),
    },
  },
  thresholds: {
    'http_req_duration{op:stream}': latency('STREAM', 1000, 2000),
    stream_time_to_first_chunk: latency('STREAM_TTFB', 300, 1000),
    stream_chunks: [`min>=${envInt('MIN_CHUNKS', 1)}`],
    ...errorThresholds(),
    checks: ['rate>0.99'],
  },
  summaryTrendStats: SUMMARY_TREND_STATS,
};

export function setup(): void {
  requireApiAccess();
}

export default function (): void {
  stream();
}
