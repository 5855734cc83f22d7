// What kubelets, load balancers and Prometheus send: liveness and readiness
// probes and /metrics scrapes, each at its own constant arrival rate. No key
// needed (these routes are unauthenticated). Run it alone to measure the probe
// path, or next to chat.ts / stream.ts to see probes stay fast under traffic.
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtest/k6/probes.ts
// Env: BASE_URL, DURATION (1m), LIVE_RATE (/health/live per s, 50), READY_RATE (/ready per s, 20),
// METRICS_RATE (/metrics per s, 2), LIVE_P95_MS (50), LIVE_P99_MS (100), READY_P95_MS (200),
// READY_P99_MS (1000: /ready never waits past health.probe_budget, 0.9 s), METRICS_P95_MS (200),
// METRICS_P99_MS (500), MAX_ERROR_RATE (0.01).
import type { Options } from 'k6/options';
import { SUMMARY_TREND_STATS, duration, envInt, errorThresholds, latency, live, metrics, ready } from './lib.ts';

const length = duration('1m');

export const options: Options = {
  scenarios: {
    live: { executor: 'constant-arrival-rate', exec: 'liveProbe', rate: envInt('LIVE_RATE', 50), timeUnit: '1s', duration: length, preAllocatedVUs: 10, maxVUs: 100 },
    ready: { executor: 'constant-arrival-rate', exec: 'readyProbe', rate: envInt('READY_RATE', 20), timeUnit: '1s', duration: length, preAllocatedVUs: 10, maxVUs: 100 },
    metrics: { executor: 'constant-arrival-rate', exec: 'scrape', rate: envInt('METRICS_RATE', 2), timeUnit: '1s', duration: length, preAllocatedVUs: 2, maxVUs: 20 },
  },
  thresholds: {
    'http_req_duration{op:live}': latency('LIVE', 50, 100),
    'http_req_duration{op:ready}': latency('READY', 200, 1000),
    'http_req_duration{op:metrics}': latency('METRICS', 200, 500),
    ...errorThresholds(),
    checks: ['rate>0.99'],
  },
  summaryTrendStats: SUMMARY_TREND_STATS,
};

export function liveProbe(): void {
  live();
}

export function readyProbe(): void {
  ready();
}

export function scrape(): void {
  metrics();
}
