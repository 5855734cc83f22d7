/**
 * The one table of Switchyard's metrics: names, help and labels. Labels are
 * bounded: `route` is a route-table path, `model` a configured alias or
 * `<provider>/*` (never raw caller input), `status` an HTTP status code.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'switchyard_' });
  return {
    registry,
    requests: new Counter({
      name: 'switchyard_requests_total',
      help: 'Requests answered, by route, model alias, provider and HTTP status',
      labelNames: ['route', 'model', 'provider', 'status'] as const,
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'switchyard_request_duration_seconds',
      help: 'Time from request received to response complete, by route, model alias and HTTP status',
      labelNames: ['route', 'model', 'status'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    upstreamDuration: new Histogram({
      name: 'switchyard_upstream_duration_seconds',
      help: 'Time spent on the provider call, by model alias and provider',
      labelNames: ['model', 'provider'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    inFlight: new Gauge({ name: 'switchyard_requests_in_flight', help: 'Provider requests being served', registers: [registry] }),
    streamsOpen: new Gauge({ name: 'switchyard_streams_open', help: 'SSE streams open to clients', registers: [registry] }),
    upstreamErrors: new Counter({
      name: 'switchyard_upstream_errors_total',
      help: 'Provider calls that failed, by model alias, provider and error code',
      labelNames: ['model', 'provider', 'code'] as const,
      registers: [registry],
    }),
    tokens: new Counter({
      name: 'switchyard_tokens_total',
      help: 'Tokens reported by providers in usage, by model alias, provider and kind (prompt or completion)',
      labelNames: ['model', 'provider', 'kind'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
