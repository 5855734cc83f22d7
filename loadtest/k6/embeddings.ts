// Embeddings for 16 inputs per request, at a constant arrival rate.
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=$GATEWAY_API_KEY loadtest/k6/embeddings.ts
// Env: BASE_URL, API_KEY, EMBED_MODEL (demo-embed), RATE (requests/s, 50), DURATION (1m),
// VUS (50), MAX_VUS (500), EMBED_P95_MS (500), EMBED_P99_MS (1000), MAX_ERROR_RATE (0.01).
import type { Options } from 'k6/options';
import { SUMMARY_TREND_STATS, duration, embeddings, envInt, errorThresholds, latency, requireApiAccess } from './lib.ts';

export const options: Options = {
  scenarios: {
    embeddings: {
      executor: 'constant-arrival-rate',
      rate: envInt('RATE', 50),
      timeUnit: '1s',
      duration: duration('1m'),
      preAllocatedVUs: envInt('VUS', 50),
      maxVUs: envInt('MAX_VUS', 500),
    },
  },
  thresholds: {
    'http_req_duration{op:embeddings}': latency('EMBED', 500, 1000),
    ...errorThresholds(),
    checks: ['rate>0.99'],
  },
  summaryTrendStats: SUMMARY_TREND_STATS,
};

export function setup(): void {
  requireApiAccess();
}

export default function (): void {
  embeddings();
}
